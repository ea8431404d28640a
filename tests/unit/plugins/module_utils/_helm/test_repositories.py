"""repository_credentials: validation, matching after mirrors, the private files, the argv helm gets, the messages."""

import base64
import json
import os
import stat
import subprocess

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source, normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import secret_params

PASSWORD = "pa$$-w0rd\"quoted'"


class Recorder:
    """A fake helm: records argv and environment, answers in turn (``version`` is always answered)."""

    def __init__(self, version="v4.3.1", outputs=()):
        self.version = version
        self.outputs = list(outputs)
        self.argv = []
        self.envs = []

    def __call__(self, argv, **kwargs):
        self.argv.append(argv)
        self.envs.append(kwargs.get("env") or {})
        if argv[1] == "version":
            return subprocess.CompletedProcess(argv, 0, self.version.encode(), b"")
        out, rc, err = self.outputs.pop(0) if self.outputs else ('{"version": 1}', 0, "")
        if argv[1] == "pull" and rc == 0:
            dest = argv[argv.index("--destination") + 1]
            with open(os.path.join(dest, "chart-1.0.0.tgz"), "w") as handle:
                handle.write("x")
        return subprocess.CompletedProcess(argv, rc, out.encode(), err.encode())


@pytest.fixture
def pem(tmp_path):
    paths = {}
    for name in ("ca.crt", "client.crt", "client.key"):
        path = tmp_path / name
        path.write_text("-----BEGIN X-----\n")
        paths[name] = str(path)
    return paths


def entry(url, pem=None, **extra):
    found = {"url": url, "username": "reader", "password": PASSWORD}
    if pem:
        found.update(ca_file=pem["ca.crt"], cert_file=pem["client.crt"], key_file=pem["client.key"])
    found.update(extra)
    return found


@pytest.mark.parametrize("bad, message", [
    ({"url": "ftp://x"}, r"repository_credentials\[0\]: url 'ftp://x' is not allowed; use an http://, https:// or oci://"),
    ({"url": "https://u:secret@host/charts"}, r"repository_credentials\[0\].url: https://\*\*\*@host/charts carries a user name or password"),
    ({"url": "https://h", "username": "u"}, r"https://h needs both username and password, or neither"),
    ({"url": "https://h", "cert_file": "/etc/hostname"}, r"needs both cert_file and key_file"),
    ({"url": "https://h", "plain_http": True}, r"plain_http is for oci:// registries"),
    ({"url": "https://h", "ca_file": "/no/such/ca.crt"}, r"ca_file of https://h: /no/such/ca.crt is not a readable file"),
    ({"url": "https://h", "token": "x"}, r"unknown keys \['token'\] for https://h"),
])
def test_bad_entries_name_the_entry_never_the_password(bad, message):
    with pytest.raises(AicrError, match=message) as error:
        repos.normalize_credentials([bad])
    assert "secret" not in error.value.msg


def test_duplicates_and_one_login_per_registry():
    with pytest.raises(AicrError, match=r"repository_credentials\[1\]: https://h is given twice \(also repository_credentials\[0\]\)"):
        repos.normalize_credentials([{"url": "https://h/"}, {"url": "https://h"}])
    with pytest.raises(AicrError, match="are one registry \\(r:5000\\) with different credentials"):
        repos.normalize_credentials([entry("oci://r:5000/a"), dict(entry("oci://r:5000/b"), password="other")])
    # the same login for two paths of one registry is fine; a dict keyed by URL is accepted too
    assert len(repos.normalize_credentials([entry("oci://r:5000/a"), entry("oci://r:5000/b")])) == 2
    [cred] = repos.normalize_credentials({"https://h/charts": {"username": "u", "password": "p"}})
    assert (cred.url, cred.username) == ("https://h/charts", "u")


def test_match_is_exact_or_a_slash_bounded_prefix_the_longest_wins():
    creds = repos.normalize_credentials([{"url": "https://h/charts"}, {"url": "https://h/charts/team"}, {"url": "oci://r:5000"}])
    assert repos.match(creds, "https://h/charts").url == "https://h/charts"
    assert repos.match(creds, "https://h/charts/team/x").url == "https://h/charts/team"
    assert repos.match(creds, "https://h/charts-other") is None
    assert repos.match(creds, "oci://r:5000/ghcr.io/nvidia/chart").url == "oci://r:5000"
    assert repos.match(creds, "oci://r:50001/x") is None


def test_files_are_private_and_hold_what_helm_reads(tmp_path, pem):
    store = repos.Repositories(repos.normalize_credentials([entry("https://h/charts", pem), entry("oci://r:5000/x")]), str(tmp_path / "auth"))
    env = store.env()
    assert stat.S_IMODE(os.stat(str(tmp_path / "auth")).st_mode) == 0o700
    for key in ("HELM_REPOSITORY_CONFIG", "HELM_REGISTRY_CONFIG"):
        assert stat.S_IMODE(os.stat(env[key]).st_mode) == 0o600
    with open(env["HELM_REPOSITORY_CONFIG"]) as handle:
        [repo] = yaml.safe_load(handle)["repositories"]
    assert repo == {"name": store.credentials[0].repo_name, "url": "https://h/charts", "username": "reader", "password": PASSWORD,
                    "caFile": pem["ca.crt"], "certFile": pem["client.crt"], "keyFile": pem["client.key"],
                    "insecure_skip_tls_verify": False, "pass_credentials_all": False}
    with open(env["HELM_REGISTRY_CONFIG"]) as handle:
        auths = json.load(handle)["auths"]
    assert base64.b64decode(auths["r:5000"]["auth"]).decode() == "reader:" + PASSWORD
    assert env["HELM_REPOSITORY_CACHE"].startswith(str(tmp_path / "auth"))


@pytest.mark.parametrize("version, fail_flag", [("v3.17.3", ["--fail-on-repo-update-fail"]), ("v4.3.1", [])])
def test_helm_gets_a_repository_name_and_files_never_a_password_on_argv(tmp_path, pem, version, fail_flag):
    run = Recorder(version)
    runner = helm.HelmRunner("helmX", home=str(tmp_path / "home"), runner=run, credentials_dir=str(tmp_path / "auth"),
                             repository_credentials=[entry("http://mirror/nvidia", pem, plain_http=True), entry("oci://r:5000", pem, plain_http=False)])
    # the credentials apply to the URL after mirror rewriting: the mirror is what asks for them
    mirrors = normalize_mirrors({"https://helm.ngc.nvidia.com/nvidia": "http://mirror/nvidia"})
    chart_ref, repo, flags, _where = chart_source("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", mirrors)
    runner.pull(chart_ref, repo, "v1", str(tmp_path / "dest"), extra_flags=flags)
    runner.upgrade("gpu", "ns", chart_ref, repo, "v1", {}, {}, extra_flags=flags, workdir=str(tmp_path))
    runner.upgrade("sentinel", "ns", "oci://r:5000/nvidia/nvsentinel", None, "v2", {}, {}, workdir=str(tmp_path))
    name = runner.repositories.credentials[0].repo_name
    argvs = [argv[1:] for argv in run.argv if argv[1] != "version"]
    assert argvs[0] == ["repo", "update", name] + fail_flag  # once per run, before the first use
    assert argvs[1][:2] == ["pull", name + "/gpu-operator"] and "--repo" not in argvs[1]
    assert argvs[2][:3] == ["upgrade", "gpu", name + "/gpu-operator"] and "--repo" not in argvs[2]
    assert [a[0] for a in argvs].count("repo") == 1
    oci = argvs[3]
    assert oci[oci.index("--ca-file") + 1] == pem["ca.crt"] and oci[oci.index("--cert-file") + 1] == pem["client.crt"]
    for argv in run.argv:
        assert all(PASSWORD not in arg and "reader" not in arg for arg in argv), argv
    for env in run.envs:
        assert PASSWORD not in json.dumps(env)
        assert env["HELM_REPOSITORY_CONFIG"].startswith(str(tmp_path / "auth")) and env["HELM_REGISTRY_CONFIG"].startswith(str(tmp_path / "auth"))


def test_without_credentials_nothing_changes(tmp_path):
    run = Recorder()
    runner = helm.HelmRunner("helmX", runner=run)
    runner.pull("c", "https://h/charts", "1", str(tmp_path / "dest"))
    assert run.argv[-1][1:5] == ["pull", "c", "--destination", str(tmp_path / "dest")] and "--repo" in run.argv[-1]
    assert "HELM_REPOSITORY_CONFIG" not in run.envs[-1]


def test_insecure_skip_tls_verify_is_explicit_and_warned(tmp_path):
    runner = helm.HelmRunner("helmX", runner=Recorder(), credentials_dir=str(tmp_path / "auth"),
                             repository_credentials=[{"url": "oci://r:5000", "insecure_skip_tls_verify": True}])
    assert runner.warnings == ["repository_credentials: TLS verification is off for oci://r:5000 (insecure_skip_tls_verify)"]
    assert repos.normalize_credentials([{"url": "oci://r:5000"}])[0].tls_flags() == []


@pytest.mark.parametrize("stderr, cred, expected", [
    ("Error: failed to fetch https://h:1/charts/index.yaml : 401 Unauthorized", True,
     "helm pull c failed: repository https://h:1/charts refused the credentials given in repository_credentials (https://h:1/charts) (401 Unauthorized)"),
    ("Error: failed to fetch https://h:1/charts/index.yaml : 401 Unauthorized", False,
     "helm pull c failed: repository https://h:1/charts requires credentials (401 Unauthorized); give them in repository_credentials"),
    ('Error: Get "https://h:1/charts/index.yaml": tls: failed to verify certificate: x509: certificate signed by unknown authority', False,
     "helm pull c failed: repository https://h:1/charts: TLS failed; give its CA (ca_file) or client certificate (cert_file, key_file) "
     "in repository_credentials"),
    # the API server's own 401 is not the repository's
    ("Error: Kubernetes cluster unreachable: the server has asked for the client to provide credentials (401 Unauthorized)", False,
     "helm pull c failed: Error: Kubernetes cluster unreachable: the server has asked for the client to provide credentials (401 Unauthorized)"),
])
def test_authentication_failures_are_one_line_naming_the_repository(tmp_path, stderr, cred, expected):
    creds = [{"url": "https://h:1/charts", "username": "u", "password": PASSWORD}] if cred else [{"url": "https://other"}]
    run = Recorder(outputs=[("", 0, "")] * cred + [("", 1, stderr)])
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"), repository_credentials=creds)
    with pytest.raises(AicrError) as error:
        runner.pull("c", "https://h:1/charts", "1", str(tmp_path / "dest"))
    assert error.value.msg == expected


def test_a_password_helm_echoes_is_redacted(tmp_path):
    run = Recorder(outputs=[("", 0, ""), ("", 1, "Error: something about %s went wrong" % PASSWORD)])
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"),
                             repository_credentials=[{"url": "https://h", "username": "u", "password": PASSWORD}])
    with pytest.raises(AicrError) as error:
        runner.pull("c", "https://h", "1", str(tmp_path / "dest"))
    assert PASSWORD not in error.value.msg and PASSWORD not in json.dumps(error.value.details)
    assert "something about ******** went wrong" in error.value.msg


def test_userinfo_in_urls_is_refused_redacted_and_hidden():
    with pytest.raises(AicrError, match=r"^repository: https://\*\*\*@h/charts carries a user name or password in the URL; give them in "
                                        r"repository_credentials \(username, password\) instead$") as error:
        chart_source("c", "https://u:hunter2@h/charts", {})
    assert "hunter2" not in error.value.msg
    for mirrors in ({"https://u:hunter2@up": "https://m"}, {"https://up": "https://u:hunter2@m"}, {"https://up": {"url": "oci://u:hunter2@m"}}):
        with pytest.raises(AicrError, match=r"repository_mirrors: \w+://\*\*\*@"):
            normalize_mirrors(mirrors)
    # and the module masks them in everything it returns (the invocation shown with -v included)
    hidden = secret_params({"recipe": {"components": [{"name": "a", "repository": "https://u:hunter2@h/charts"}]},
                            "component_overrides": {"b": {"repository": "oci://robot:tok3n@r/x"}},
                            "repository_mirrors": {"https://up": {"url": "https://m:mirrorpw@m"}}})
    assert {"hunter2", "tok3n", "mirrorpw"} <= hidden
    assert repos.redact_url("oci://robot:tok3n@r:5000/x") == "oci://***@r:5000/x" and repos.redact_url("https://h/x") == "https://h/x"


@pytest.mark.parametrize("cred, mirror, weaker", [
    ({"url": "https://m/charts", "username": "u", "password": PASSWORD}, {"url": "https://m/charts", "insecure_skip_tls_verify": True},
     "insecure_skip_tls_verify"),
    ({"url": "oci://r:5000", "username": "u", "password": PASSWORD}, {"url": "oci://r:5000/nvidia", "plain_http": True}, "plain_http"),
    ({"url": "oci://r:5000/nvidia", "username": "u", "password": PASSWORD}, {"url": "oci://r:5000", "plain_http": True,
                                                                             "insecure_skip_tls_verify": True}, "insecure_skip_tls_verify and plain_http"),
])
def test_a_mirror_cannot_weaken_the_transport_of_a_credentialed_repository(tmp_path, cred, mirror, weaker):
    # a ClusterStack spec's repositoryMirrors entry pointing at the operator's credentialed repository with TLS off would
    # have sent the password over unverified TLS or in clear text: refused before anything is contacted, and at use
    mirrors = normalize_mirrors({"https://up": mirror})
    run = Recorder()
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"), repository_credentials=[cred])
    chart_ref, repo, flags, _where = chart_source("c", "https://up/nvidia" if cred["url"].endswith("/nvidia") else "https://up", mirrors)
    with pytest.raises(AicrError, match=r"^repository_credentials: the password would be sent to %s with " % cred["url"]):
        runner.pull(chart_ref, repo, "1", str(tmp_path / "dest"), extra_flags=flags)
    assert [argv for argv in run.argv if argv[1] != "version"] == []  # nothing reached the repository
    assert runner.warnings == []
    # and gated_release refuses it before anything is contacted
    with pytest.raises(AicrError) as error:
        repos.check_mirrors(repos.normalize_credentials([cred]), mirrors)
    assert error.value.msg == ("repository_mirrors: the mirror of https://up (%s) sets %s, but repository_credentials gives credentials for %s "
                               "without it; a mirror cannot weaken the transport of a credentialed repository: set %s in that "
                               "repository_credentials entry, or drop it from the mirror" % (mirror["url"], weaker, cred["url"], weaker))
    assert PASSWORD not in error.value.msg


def test_a_mirror_may_set_what_the_credential_owner_set_and_anything_for_other_repositories(tmp_path):
    creds = [{"url": "https://m/charts", "username": "u", "password": PASSWORD, "insecure_skip_tls_verify": True},
             {"url": "oci://r:5000", "username": "u", "password": PASSWORD}]
    mirrors = normalize_mirrors({"https://up": {"url": "https://m/charts", "insecure_skip_tls_verify": True},
                                 "https://other": {"url": "oci://lab:5000/x", "plain_http": True}})
    repos.check_mirrors(repos.normalize_credentials(creds), mirrors)
    run = Recorder()
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"), repository_credentials=creds)
    chart_ref, repo, flags, _where = chart_source("c", "https://up", mirrors)
    runner.pull(chart_ref, repo, "1", str(tmp_path / "dest"), extra_flags=flags)
    with open(str(tmp_path / "auth" / "repositories.yaml")) as handle:
        assert yaml.safe_load(handle)["repositories"][0]["insecure_skip_tls_verify"] is True
    assert "--insecure-skip-tls-verify" not in run.argv[-1]
    # an OCI registry with an entry gets that entry's TLS flags only, never a mirror's
    run.argv[:] = []
    runner.upgrade("s", "ns", "oci://r:5000/nvidia/c", None, "1", {}, {}, extra_flags=[], workdir=str(tmp_path))
    assert "--plain-http" not in run.argv[-1] and "--insecure-skip-tls-verify" not in run.argv[-1]
    # a mirror without credentials is the spec writer's own business (plain http to a lab registry)
    chart_ref, repo, flags, _where = chart_source("c", "https://other", mirrors)
    assert flags == ["--plain-http"]


def test_credentials_over_http_need_the_entry_s_own_plain_http(tmp_path):
    with pytest.raises(AicrError) as error:
        repos.normalize_credentials([{"url": "http://h/charts", "username": "u", "password": PASSWORD}])
    assert error.value.msg == ("repository_credentials[0]: http://h/charts is http:// and would send the password in clear text; use https://, "
                               "or set plain_http: true in this entry to allow it")
    [cred] = repos.normalize_credentials([{"url": "http://h/charts", "username": "u", "password": PASSWORD, "plain_http": True}])
    run = Recorder()
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"), repository_credentials=[
        {"url": "http://h/charts", "username": "u", "password": PASSWORD, "plain_http": True}])
    for _attempt in range(2):
        runner.pull("c", "http://h/charts", "1", str(tmp_path / "dest"))
    assert runner.warnings == ["repository http://h/charts: no TLS (http://): charts and the credentials of repository_credentials (http://h/charts) "
                               "travel in clear text, readable and changeable on the way; prefer https:// or a registry with TLS"]
    assert cred.plain_http


def test_http_repositories_and_plain_http_registries_are_warned_once_each(tmp_path):
    run = Recorder()
    runner = helm.HelmRunner("helmX", runner=run, credentials_dir=str(tmp_path / "auth"))
    mirrors = normalize_mirrors({"https://up": "http://mirror/charts", "oci://ghcr.io/x": {"url": "oci://lab:5000/x", "plain_http": True}})
    for chart, repository in (("a", "https://up"), ("b", "https://up/sub"), ("a", "https://up"), ("c", "oci://ghcr.io/x"), ("d", "oci://ghcr.io/x")):
        chart_ref, repo, flags, _where = chart_source(chart, repository, mirrors)
        runner.pull(chart_ref, repo, "1", str(tmp_path / "dest"), extra_flags=flags)
    assert runner.warnings == [
        "repository http://mirror/charts: no TLS (http://): charts travel in clear text, readable and changeable on the way; prefer https:// or a "
        "registry with TLS",
        "repository http://mirror/charts/sub: no TLS (http://): charts travel in clear text, readable and changeable on the way; prefer https:// or a "
        "registry with TLS",
        "repository oci://lab:5000/x: no TLS (plain_http): charts travel in clear text, readable and changeable on the way; prefer https:// or a "
        "registry with TLS"]
    assert helm.HelmRunner("helmX", runner=Recorder()).warnings == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:8879/charts", "http://localhost/charts", "http://[::1]:8080/c", "oci://127.0.0.2:5000/x"])
def test_a_repository_on_the_loopback_is_not_warned_about(tmp_path, url):
    # nothing crosses a network: the lab's and a developer's local chart servers stay quiet
    runner = helm.HelmRunner("helmX", runner=Recorder(), credentials_dir=str(tmp_path / "auth"))
    runner.pull("a", url, "1", str(tmp_path / "dest"), extra_flags=["--plain-http"] if url.startswith("oci://") else [])
    assert runner.warnings == [] and repos.on_loopback(url)


@pytest.mark.parametrize("url", ["http://127.example/charts", "http://10.0.0.1/charts", "http://[fe80::1]/c", "http://localhost.example/c"])
def test_other_hosts_are_not_the_loopback(url):
    assert not repos.on_loopback(url)
