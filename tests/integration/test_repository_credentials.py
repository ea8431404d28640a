"""Issue 15, item 5: chart repository credentials and CA (``repository_credentials``), through ansible-playbook (the
modules, and the values_schema lookup on the controller).

The lab serves the example charts the way a private production repository does:

* an HTTPS chart repository (``aicr_lab.charts.repo``) with basic auth, a certificate signed by a CA the lab makes
  (``aicr_lab.pki``) and a required client certificate;
* an OCI registry (Debian's docker-registry) with htpasswd (bcrypt) auth, TLS and a required client certificate —
  used with helm 4: helm 3 speaks plain HTTP to every loopback OCI registry whatever its TLS flags say, so with helm 3
  the OCI side is a second registry with htpasswd auth over plain HTTP (``plain_http: true``).

Every helm call goes through a wrapper that records its argv and environment: the passwords are never in either,
nor in ansible-playbook's ``-v`` output, the job's artifacts, or any file left in the run's TMPDIR (helm's private
home is removed).
"""

import hashlib
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from aicr_lab import pki
from aicr_lab.charts.oci import push_chart, start_registry
from aicr_lab.charts.pytest_fixture import example_charts_dir, start_chart_repo
from aicr_lab.charts.repo import ChartRepoServer

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
IDENTITY = "release"
HELMS = ["helm3", "helm4"]

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


class Private:
    """The lab's private repositories and what a client needs to reach them."""

    def __init__(self, root):
        self.root = Path(root)
        authority = pki.Authority(self.root / "pki", "ca", "aicr lab charts CA")
        self.ca = authority.cert_path
        cert, key = authority.issue("server", "127.0.0.1", server_names=("127.0.0.1", "localhost"), server=True)
        self.client_cert, self.client_key = authority.issue("client", "aicr-runtime", client=True)
        self.repo_user, self.repo_password = "chart-reader", "repo-" + secrets.token_hex(12)
        self.registry_user, self.registry_password = "oci-reader", "oci-" + secrets.token_hex(12)
        self.repo = ChartRepoServer([str(example_charts_dir())], workdir=self.root / "repo", url_prefix="/private",
                                    auth=(self.repo_user, self.repo_password), tls={"cert": cert, "key": key, "client_ca": self.ca}).start()
        self.tls_registry = start_registry(self.root / "tls-registry", auth=(self.registry_user, self.registry_password),
                                           tls={"cert": cert, "key": key, "ca": self.ca, "client_ca": self.ca,
                                                "client_cert": self.client_cert, "client_key": self.client_key})
        self.plain_registry = start_registry(self.root / "plain-registry", auth=(self.registry_user, self.registry_password))
        [tgz] = sorted((self.root / "repo" / "site" / "private").glob("example-agent-*.tgz"))
        for registry in (self.tls_registry, self.plain_registry):
            push_chart(registry, tgz, "private")
        self.version = tgz.name[len("example-agent-"):-len(".tgz")]

    def secrets(self):
        return [self.repo_password, self.registry_password]

    def repo_entry(self, password=None, user=True):
        entry = {"url": self.repo.url, "ca_file": self.ca, "cert_file": self.client_cert, "key_file": self.client_key}
        if user:
            entry.update(username=self.repo_user, password=password or self.repo_password)
        return entry

    def registry(self, helm):
        return self.tls_registry if helm == "helm4" else self.plain_registry

    def registry_entry(self, helm, password=None):
        registry = self.registry(helm)
        entry = {"url": registry.url, "username": self.registry_user, "password": password or self.registry_password}
        if registry.tls:
            entry.update(ca_file=self.ca, cert_file=self.client_cert, key_file=self.client_key)
        else:
            entry["plain_http"] = True
        return entry

    def stop(self):
        self.repo.stop()
        self.tls_registry.stop()
        self.plain_registry.stop()


@pytest.fixture(scope="module")
def private():
    root = Path(tempfile.mkdtemp(prefix="aicr-private-charts-"))
    repos = Private(root)
    yield repos
    repos.stop()
    shutil.rmtree(str(root), ignore_errors=True)


def recording_helm(directory, helm):
    """A helm that records its argv and environment (one file per call) before running the real one."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "calls"
    log.mkdir(exist_ok=True)
    wrapper = directory / helm
    wrapper.write_text('#!/bin/sh\nf=$(mktemp "%s/call.XXXXXX")\nprintf "%%s\\n" "$@" > "$f"\nenv >> "$f"\nexec "%s" "$@"\n' % (log, BIN / helm))
    wrapper.chmod(0o755)
    return wrapper, log


def calls(log):
    return [p.read_text() for p in sorted(log.iterdir())]


def component(name, chart_repo, kube, version):
    return {"name": name, "chart": "example-agent", "repository": chart_repo, "version": version, "namespace": kube.namespace, "values": {}}


def files_containing(root, needles):
    """Files under ``root`` holding any of ``needles``."""
    found = []
    for dirpath, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            if any(n.encode() in data for n in needles):
                found.append(path)
    return found


def run_with(run_playbook, kube, tmp_path, helm, components, credentials, verbosity="1", **extra):
    tmp_path.mkdir(parents=True, exist_ok=True)
    wrapper, log = recording_helm(tmp_path / "helm", helm)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    params = {"components": components, "credentials": credentials, "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(wrapper),
              "stack": kube.namespace, "lease_namespace": kube.namespace}
    params.update(extra)
    run = run_playbook("repository_credentials.yml", extravars=params,
                       envvars={"ANSIBLE_VERBOSITY": verbosity, "TMPDIR": str(tmpdir), "ANSIBLE_REMOTE_TMP": str(tmpdir / "ansible"),
                                "ANSIBLE_LOCAL_TEMP": str(tmpdir / "ansible-local")})
    return run, log, tmpdir


def assert_no_secret_anywhere(private, run, log, tmpdir, root):
    for secret in private.secrets():
        assert secret not in run.stdout
    for call in calls(log):
        for secret in private.secrets():
            assert secret not in call, call[:500]
    assert files_containing(tmpdir, private.secrets()) == []
    assert [p for p in tmpdir.iterdir() if p.name.startswith("aicr-")] == [], "helm's private home outlived the run"
    # the job's artifacts (events with the invocation, stdout) never hold a password either; the test's own input
    # (ansible-runner's env/extravars) does, of course
    runner_dirs = [p for p in Path(root).iterdir() if p.name.startswith("runner-")]
    assert runner_dirs
    for runner_dir in runner_dirs:
        assert [f for f in files_containing(runner_dir, private.secrets()) if os.path.basename(f) != "extravars"] == []


@pytest.mark.parametrize("helm", HELMS)
def test_right_credentials_install_from_the_https_repository_and_the_oci_registry(run_playbook, kube, tmp_path, private, helm):
    registry = private.registry(helm)
    comps = [component("agent-https", private.repo.url, kube, private.version),
             component("agent-oci", registry.url + "/private", kube, private.version)]
    served = len(private.repo.requests)
    run, log, tmpdir = run_with(run_playbook, kube, tmp_path, helm, comps, [private.repo_entry(), private.registry_entry(helm)])
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Roll out")
    assert dict((c["name"], c["phase"]) for c in res["components"]) == {"agent-https": "Ready", "agent-oci": "Ready"}
    releases = [c.split("\n") for c in calls(log) if c.startswith("upgrade\n")]
    assert len(releases) == 2
    # the OCI chart is pulled by helm (its login in the private registry config); the HTTPS chart is fetched without helm
    # (_helm/chartfetch): the private index once, then the archive (or none: already in the chart cache), with the password
    # and the client certificate - the repository answers nothing without both -, checked against the index's digest;
    # the upgrade installs that archive
    pulls = [c.split("\n") for c in calls(log) if c.startswith("pull\n")]
    assert [p[1].split("/")[0] for p in pulls] == ["oci:"], pulls
    assert not any(c.startswith("repo\nupdate\n") for c in calls(log))
    requests = private.repo.requests[served:]
    assert [(m, s) for m, path, s in requests if path.endswith("/index.yaml")] == [("GET", 200)], requests
    assert [(m, s) for m, path, s in requests if path.endswith(".tgz")] in ([], [("GET", 200)]), requests
    [https_release] = [r for r in releases if r[1] == "agent-https"]
    assert https_release[2].endswith("/example-agent-%s.tgz" % private.version) and "--repo" not in https_release
    for call in calls(log):
        argv = call.split("\nPATH=")[0] if "\nPATH=" in call else call
        assert "--username" not in argv and "--password" not in argv and "--password-stdin" not in argv
        assert "HELM_REPOSITORY_CONFIG=" in call and "HELM_REGISTRY_CONFIG=" in call
    assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


def test_a_changed_archive_is_refused_naming_both_digests_before_anything_is_installed(run_playbook, kube, tmp_path):
    """Issue 36: gated_release fetches an HTTP chart without helm and checks it against the repository index's digest.
    An archive changed after the index was written (a proxy, a mirror, anyone on a clear-text path) is refused in one
    line naming the chart and both digests, before anything is installed; helm is not asked to fetch it instead, and
    the chart cache keeps nothing of it."""
    (tmp_path / "repo").mkdir()
    server = start_chart_repo(tmp_path / "repo")
    try:
        [repo] = server.repositories
        [tgz] = sorted(repo.index_path.parent.glob("example-agent-*.tgz"))
        version = tgz.name[len("example-agent-"):-len(".tgz")]
        want = hashlib.sha256(tgz.read_bytes()).hexdigest()
        tgz.write_bytes(tgz.read_bytes() + b"changed")
        got = hashlib.sha256(tgz.read_bytes()).hexdigest()
        cache = tmp_path / "cache"
        run, log, _tmpdir = run_with(run_playbook, kube, tmp_path / "run", "helm4", [component("agent-changed", server.url, kube, version)], [],
                                     cache_dir=str(cache))
    finally:
        server.stop()
    assert run.rc != 0
    res = run.result("Roll out")
    msg = res["msg"]
    assert "\n" not in msg and "chart example-agent %s from %s: the archive's sha256 is %s, but the repository's index.yaml gives digest %s;" % (
        version, server.url, got, want) in msg, msg
    assert [c["phase"] for c in res["components"]] == ["Failed"] and res["changed"] is False
    assert [c for c in calls(log) if c.startswith(("upgrade\n", "pull\n", "repo\n"))] == []  # nothing installed, helm fetched nothing
    assert not (cache / "charts" / "sha256" / (got + ".tgz")).exists()


def test_the_credential_files_are_private_while_helm_runs(run_playbook, kube, tmp_path, private):
    """While helm runs, its repositories.yaml and registry config are 0600 in a 0700 directory (seen by the wrapper)."""
    directory = tmp_path / "helm"
    directory.mkdir()
    seen = directory / "modes"
    wrapper = directory / "helm4"
    wrapper.write_text('#!/bin/sh\nstat -c "%%a %%n" "$(dirname "$HELM_REPOSITORY_CONFIG")" "$HELM_REPOSITORY_CONFIG" "$HELM_REGISTRY_CONFIG" >> "%s"\n'
                       'exec "%s" "$@"\n' % (seen, BIN / "helm4"))
    wrapper.chmod(0o755)
    params = {"components": [component("agent-https", private.repo.url, kube, private.version)], "credentials": [private.repo_entry()],
              "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(wrapper), "stack": kube.namespace, "lease_namespace": kube.namespace}
    run = run_playbook("repository_credentials.yml", extravars=params)
    assert run.rc == 0, run.stdout[-4000:]
    modes = set(line.split(" ", 1)[0] for line in seen.read_text().splitlines())
    assert modes == {"700", "600"}, seen.read_text()
    paths = [line.split(" ", 1)[1] for line in seen.read_text().splitlines()]
    assert all(not os.path.exists(p) for p in paths), "the private files were not removed"


@pytest.mark.parametrize("helm", HELMS)
def test_a_wrong_password_fails_in_one_line_naming_the_repository(run_playbook, kube, tmp_path, private, helm):
    wrong = "wrong-" + secrets.token_hex(8)
    registry = private.registry(helm)
    for comps, entry, where in (([component("agent-https", private.repo.url, kube, private.version)], private.repo_entry(password=wrong), private.repo.url),
                                ([component("agent-oci", registry.url + "/private", kube, private.version)], private.registry_entry(helm, password=wrong),
                                 registry.url)):
        run, log, tmpdir = run_with(run_playbook, kube, tmp_path / comps[0]["name"], helm, comps, [entry])
        assert run.rc != 0
        res = run.result("Roll out")
        [comp] = res["components"]
        assert comp["phase"] == "Failed"
        assert "refused the credentials given in repository_credentials" in comp["message"] and where in comp["message"], comp["message"]
        assert "\n" not in res["msg"] and where in res["msg"], res["msg"]
        assert wrong not in run.stdout and all(wrong not in c for c in calls(log))
        assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


@pytest.mark.parametrize("helm", HELMS)
def test_no_credentials_is_a_clear_401_message(run_playbook, kube, tmp_path, private, helm):
    registry = private.registry(helm)
    oci_entry = dict(private.registry_entry(helm))
    del oci_entry["username"], oci_entry["password"]
    comps = [component("agent-https", private.repo.url, kube, private.version), component("agent-oci", registry.url + "/private", kube, private.version)]
    run, _log, _tmpdir = run_with(run_playbook, kube, tmp_path, helm, comps, [private.repo_entry(user=False), oci_entry])
    assert run.rc != 0
    messages = dict((c["name"], c["message"]) for c in run.result("Roll out")["components"])
    assert "repository %s requires credentials (401 Unauthorized); give them in repository_credentials" % private.repo.url in messages["agent-https"]
    assert "requires credentials (401 Unauthorized)" in messages["agent-oci"] and registry.url in messages["agent-oci"], messages


def test_credentials_in_a_repository_url_are_refused_and_never_shown(run_playbook, kube, tmp_path, private):
    url = private.repo.url.replace("https://", "https://%s:%s@" % (private.repo_user, private.repo_password))
    comps = [component("agent-https", url, kube, private.version)]
    run, log, tmpdir = run_with(run_playbook, kube, tmp_path, "helm4", comps, [])
    assert run.rc != 0
    msg = run.result("Roll out")["msg"]
    assert "carries a user name or password in the URL" in msg and private.repo.url.replace("https://", "https://***@") in msg, msg
    assert calls(log) == [] or all(private.repo_password not in c for c in calls(log))
    assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


def test_a_mirror_cannot_turn_tls_off_for_the_credentialed_repository(run_playbook, kube, tmp_path, private):
    """Issue 35: a mirror (a ClusterStack spec's repositoryMirrors reach gated_release as repository_mirrors) pointing at the
    operator's credentialed repository with insecure_skip_tls_verify would have sent the password over unverified TLS:
    refused in one line before helm runs at all."""
    comps = [component("agent-mirrored", "https://charts.upstream.example/agent", kube, private.version)]
    mirrors = {"https://charts.upstream.example/agent": {"url": private.repo.url, "insecure_skip_tls_verify": True}}
    mark = kube.audit_mark()
    run, log, tmpdir = run_with(run_playbook, kube, tmp_path, "helm4", comps, [private.repo_entry()], mirrors=mirrors)
    assert run.rc != 0
    msg = run.result("Roll out")["msg"]
    expected = ("repository_mirrors: the mirror of https://charts.upstream.example/agent (%s) sets insecure_skip_tls_verify, "
                "but repository_credentials gives credentials for" % private.repo.url)
    assert "\n" not in msg and msg.startswith(expected), msg
    assert calls(log) == []  # no helm ran: nothing was sent anywhere
    assert kube.audit(since=mark, user=kube.user(IDENTITY)) == []  # refused before the cluster was contacted
    assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


def test_lab_repository_rejects_what_it_should():
    """The lab itself: without a client certificate the HTTPS repository refuses the connection (else the tests above prove less)."""
    import ssl
    import urllib.error
    import urllib.request

    root = Path(tempfile.mkdtemp(prefix="aicr-private-check-"))
    try:
        repos = Private(root)
        try:
            context = ssl.create_default_context(cafile=repos.ca)
            with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
                urllib.request.urlopen(repos.repo.url + "/index.yaml", timeout=10, context=context).read()
            context.load_cert_chain(repos.client_cert, repos.client_key)
            with pytest.raises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(repos.repo.url + "/index.yaml", timeout=10, context=context)
            assert denied.value.code == 401
            assert stat.S_IMODE(os.stat(repos.client_key).st_mode) == 0o600
        finally:
            repos.stop()
    finally:
        shutil.rmtree(str(root), ignore_errors=True)


def schema_with(run_playbook, tmp_path, helm, credentials, verbosity="1", playbook="values_schema_credentials.yml", **params):
    """values_schema (the module, or the lookup with ``playbook``) through ansible-playbook with ``credentials`` and a
    recording helm; (run, helm log, TMPDIR)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    wrapper, log = recording_helm(tmp_path / "helm", helm)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    params.update(credentials=credentials, helm_binary=str(wrapper))
    run = run_playbook(playbook, extravars=params,
                       envvars={"ANSIBLE_VERBOSITY": verbosity, "TMPDIR": str(tmpdir), "ANSIBLE_REMOTE_TMP": str(tmpdir / "ansible"),
                                "ANSIBLE_LOCAL_TEMP": str(tmpdir / "ansible-local")})
    return run, log, tmpdir


@pytest.mark.parametrize("helm", HELMS)
def test_values_schema_pulls_from_the_private_repository_and_registry(run_playbook, tmp_path, private, helm):
    """values_schema shares gated_release's pull: the HTTPS repository is a name of a private repositories.yaml, the
    registry login a private registry config; discover_versions reads the private index with the same entry."""
    registry = private.registry(helm)
    credentials = [private.repo_entry(), private.registry_entry(helm)]
    https, log, tmpdir = schema_with(run_playbook, tmp_path / "https", helm, credentials, chart="example-agent", repository=private.repo.url,
                                     chart_version=private.version, output="crd", discover_versions=True)
    assert https.rc == 0, https.stdout[-4000:]
    crd = https.result("Generate")["crd"]
    # the repository answers index.yaml only with the client certificate and the password: versions were discovered
    assert len(crd["spec"]["versions"]) == 1, crd["spec"]["versions"]
    pulls = [c.split("\n") for c in calls(log) if c.startswith("pull\n")]
    assert len(pulls) == 1 and pulls[0][1].startswith("aicr-") and pulls[0][1].endswith("/example-agent") and "--repo" not in pulls[0], pulls
    assert_no_secret_anywhere(private, https, log, tmpdir, tmp_path)
    oci, log, tmpdir = schema_with(run_playbook, tmp_path / "oci", helm, credentials, chart=registry.url + "/private/example-agent",
                                   chart_version=private.version)
    assert oci.rc == 0, oci.stdout[-4000:]
    schema = oci.result("Generate")["schema"]
    assert schema["type"] == "object" and schema["properties"], schema
    for call in calls(log):
        argv = call.split("\nPATH=")[0] if "\nPATH=" in call else call
        assert "--username" not in argv and "--password" not in argv
        assert "HELM_REPOSITORY_CONFIG=" in call and "HELM_REGISTRY_CONFIG=" in call
    assert_no_secret_anywhere(private, oci, log, tmpdir, tmp_path)


def test_values_schema_wrong_password_is_one_line_naming_the_repository(run_playbook, tmp_path, private):
    wrong = "wrong-" + secrets.token_hex(8)
    run, log, tmpdir = schema_with(run_playbook, tmp_path, "helm4", [private.repo_entry(password=wrong)], chart="example-agent",
                                   repository=private.repo.url, chart_version=private.version)
    assert run.rc != 0
    res = run.result("Generate")
    assert "\n" not in res["msg"] and private.repo.url in res["msg"] and "repository_credentials" in res["msg"], res["msg"]
    assert wrong not in run.stdout and all(wrong not in c for c in calls(log))
    assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


LOOKUP_PLAYBOOK = "values_schema_lookup_credentials.yml"


def test_values_schema_lookup_pulls_from_the_private_repository_and_registry(run_playbook, tmp_path, private):
    """The lookup (on the controller) takes the same repository_credentials as the module: a private repositories.yaml
    and registry config, nothing on helm's argv, no password in the output at -vvv."""
    helm = "helm4"
    registry = private.registry(helm)
    credentials = [private.repo_entry(), private.registry_entry(helm)]
    https, log, tmpdir = schema_with(run_playbook, tmp_path / "https", helm, credentials, verbosity="3", playbook=LOOKUP_PLAYBOOK,
                                     chart="example-agent", repository=private.repo.url, chart_version=private.version)
    assert https.rc == 0, https.stdout[-4000:]
    schema = https.result("Generate")["ansible_facts"]["generated"]
    assert schema["type"] == "object" and schema["properties"], schema
    pulls = [c.split("\n") for c in calls(log) if c.startswith("pull\n")]
    assert len(pulls) == 1 and pulls[0][1].startswith("aicr-") and "--repo" not in pulls[0], pulls
    assert_no_secret_anywhere(private, https, log, tmpdir, tmp_path)
    oci, log, tmpdir = schema_with(run_playbook, tmp_path / "oci", helm, credentials, verbosity="3", playbook=LOOKUP_PLAYBOOK,
                                   chart=registry.url + "/private/example-agent", chart_version=private.version)
    assert oci.rc == 0, oci.stdout[-4000:]
    assert oci.result("Generate")["ansible_facts"]["generated"]["properties"]
    assert all("--password" not in call.split("\nPATH=")[0] for call in calls(log))
    assert_no_secret_anywhere(private, oci, log, tmpdir, tmp_path)


def test_values_schema_lookup_without_the_credentials_is_refused_in_one_line(run_playbook, tmp_path, private):
    wrong = "wrong-" + secrets.token_hex(8)
    run, log, tmpdir = schema_with(run_playbook, tmp_path, "helm4", [private.repo_entry(password=wrong)], playbook=LOOKUP_PLAYBOOK,
                                   chart="example-agent", repository=private.repo.url, chart_version=private.version)
    assert run.rc != 0
    msg = run.result("Generate")["msg"]
    assert private.repo.url in msg and "repository_credentials" in msg, msg
    assert wrong not in run.stdout and all(wrong not in c for c in calls(log))
    assert_no_secret_anywhere(private, run, log, tmpdir, tmp_path)


def test_cluster_runtime_values_check_pulls_with_the_credentials(run_playbook, kube, tmp_path, private):
    """The role's optional values check (values_schema per chart) reaches a private mirror with the role's credentials,
    as the rollout does; before, it pulled without them and failed the play."""
    from lab_support import example_catalog  # pylint: disable=import-outside-toplevel

    wrapper, log = recording_helm(tmp_path / "helm", "helm4")
    role_vars = {"cluster_runtime_catalog": str(example_catalog(tmp_path, kube.namespace)),
                 "cluster_runtime_criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
                 "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY), "cluster_runtime_helm_binary": str(wrapper),
                 "cluster_runtime_repository_mirrors": {"https://charts.aicr.example/examples": private.repo.url},
                 "cluster_runtime_repository_credentials": [private.repo_entry()], "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_lease_namespace": kube.namespace, "cluster_runtime_validate_values": True}
    run = run_playbook("release_role.yml", extravars=role_vars)
    assert run.rc == 0, run.stdout[-5000:]
    # the check's results carry the values as they are: not shown (no_log, issue 35); what it found is reported
    checks = run.result("Validate each chart component's values with values_schema")
    assert checks.get("censored") and "results" not in checks
    report = run.result("Report the values check (charts checked, values that do not match their chart's schema)")["msg"]
    assert sorted(report[0].split(": ", 1)[1].split(", ")) == ["example-agent", "example-crds", "example-jobs", "example-monitoring", "example-operator"]
    assert len(report) == 1, "every chart's values match"
    pulls = [c.split("\n") for c in calls(log) if c.startswith("pull\n")]
    assert pulls and all(p[1].startswith("aicr-") and "--repo" not in p for p in pulls), pulls
    for secret in private.secrets():
        assert secret not in run.stdout and all(secret not in c for c in calls(log))
