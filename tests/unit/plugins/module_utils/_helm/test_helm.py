"""Helm argv, mirrors, release digest and helm's Secret storage decoding."""

import base64
import gzip
import json
import subprocess
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import component
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source, normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import read_release
from helm_environment import WRONG_HELM_ENVIRONMENT  # pylint: disable=import-error


def test_digest_is_stable_and_sensitive():
    base = component.release_digest("c", "https://r", "1.0", {"a": {"b": 1}, "z": [1, 2]})
    assert base == component.release_digest("c", "https://r", "1.0", {"z": [1, 2], "a": {"b": 1}})
    assert len(base) == 48 and all(ch in "0123456789abcdef" for ch in base)
    for other in (("d", "https://r", "1.0", {"a": {"b": 1}, "z": [1, 2]}), ("c", "https://r", "1.1", {"a": {"b": 1}, "z": [1, 2]}),
                  ("c", "https://r", "1.0", {"a": {"b": 2}, "z": [1, 2]}), ("c", "oci://r", "1.0", {"a": {"b": 1}, "z": [1, 2]})):
        assert component.release_digest(*other) != base


def test_mirrors_exact_prefix_and_longest_match():
    mirrors = normalize_mirrors({
        "https://helm.ngc.nvidia.com/nvidia": "http://127.0.0.1:8879/helm.ngc.nvidia.com_nvidia/",
        "oci://ghcr.io": {"url": "oci://127.0.0.1:5000/ghcr.io", "plain_http": True},
        "oci://ghcr.io/nvidia/special": "oci://other:5000/special",
    })
    assert chart_source("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", mirrors) == (
        "gpu-operator", "http://127.0.0.1:8879/helm.ngc.nvidia.com_nvidia", [], "http://127.0.0.1:8879/helm.ngc.nvidia.com_nvidia")
    ref, repo, flags, _where = chart_source("nvsentinel", "oci://ghcr.io/nvidia", mirrors)
    assert (ref, repo, flags) == ("oci://127.0.0.1:5000/ghcr.io/nvidia/nvsentinel", None, ["--plain-http"])
    assert chart_source("x", "oci://ghcr.io/nvidia/special/sub", mirrors)[0] == "oci://other:5000/special/sub/x"
    # a prefix must end at a path boundary
    assert chart_source("x", "https://helm.ngc.nvidia.com/nvidia-other", mirrors)[1] == "https://helm.ngc.nvidia.com/nvidia-other"
    assert chart_source("x", "oci://quay.io/a", mirrors)[0] == "oci://quay.io/a/x"
    assert chart_source("demo", "https://c", normalize_mirrors({"https://c": "/srv/charts"}))[0] == "/srv/charts/demo"


def test_bad_mirrors():
    with pytest.raises(AicrError, match="must be a URL or a dict with 'url'"):
        normalize_mirrors({"https://a": 3})
    with pytest.raises(AicrError, match="unknown keys"):
        normalize_mirrors({"https://a": {"url": "x", "tls": 1}})
    with pytest.raises(AicrError, match="no repository and no mirror"):
        chart_source("c", "", {})


class Recorder:
    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.argv = []

    def __call__(self, argv, **kwargs):
        self.argv.append(argv)
        out, rc, err = self.outputs.pop(0)
        return subprocess.CompletedProcess(argv, rc, out.encode(), err.encode())


def test_upgrade_argv_helm3_and_helm4(tmp_path):
    for version, atomic_flag in (("v3.17.3", "--atomic"), ("v4.3.1", "--rollback-on-failure")):
        run = Recorder([(version, 0, ""), ('{"version": 7}', 0, "")])
        runner = helm.HelmRunner("helmX", kubeconfig_path="/k", context="ctx", runner=run)
        rev = runner.upgrade("gpu-operator", "gpu-operator", "gpu-operator", "http://mirror/nvidia", "v26.3.3", {"a": 1},
                             {"aicr.io/stack": "s", "aicr.io/digest": "d"}, extra_flags=["--plain-http"], atomic=True, timeout=120, workdir=str(tmp_path))
        assert rev == 7
        argv = run.argv[1]
        assert argv[:6] == ["helmX", "upgrade", "gpu-operator", "gpu-operator", "--install", "--namespace"]
        assert argv[argv.index("--repo") + 1] == "http://mirror/nvidia"
        assert argv[argv.index("--version") + 1] == "v26.3.3"
        assert argv[argv.index("--labels") + 1] == "aicr.io/digest=d,aicr.io/stack=s"
        assert atomic_flag in argv and "--plain-http" in argv
        # the engine creates a missing namespace (RBAC: create); helm 4's --create-namespace would need patch on namespaces
        assert "--create-namespace" not in argv
        assert argv[-4:] == ["--kubeconfig", "/k", "--kube-context", "ctx"]
        assert json.loads(Path(argv[argv.index("--values") + 1]).read_text()) == {"a": 1}


def test_release_flags_reach_every_upgrade_and_rollback(tmp_path):
    """gated_release's options declared with a helm flag (history_max: --history-max) are on every install/upgrade and
    rollback, helm 3 and 4 alike, before the global flags."""
    for version in ("v3.17.3", "v4.3.1"):
        run = Recorder([(version, 0, ""), ('{"version": 2}', 0, ""), ("", 0, "")])
        runner = helm.HelmRunner("helmX", kubeconfig_path="/k", runner=run)
        runner.release_flags = ["--history-max", "3"]
        runner.upgrade("r", "ns", "/charts/r", None, None, {}, {}, atomic=True, workdir=str(tmp_path))  # atomic: the version is read first
        runner.rollback("r", "ns", 1)
        for argv in run.argv[1:]:
            assert argv[argv.index("--history-max") + 1] == "3", argv
            assert argv[-2:] == ["--kubeconfig", "/k"]
        assert [argv[1] for argv in run.argv[1:]] == ["upgrade", "rollback"], run.argv


def test_openapi_download_skipped_only_where_the_server_validates_fields(tmp_path):
    """helm's client-side OpenAPI check validates nothing on a server that validates fields itself (1.27+): only there is
    it skipped (--disable-openapi-validation); the server's answers are the same (integration: test_early_start)."""
    assert helm.server_validates_fields((1, 27)) and helm.server_validates_fields((2, 0))
    assert not helm.server_validates_fields((1, 26)) and not helm.server_validates_fields(None)
    for validates in (False, True):
        run = Recorder([("v3.17.3", 0, ""), ('{"version": 1}', 0, "")])
        runner = helm.HelmRunner("helmX", runner=run)
        runner.server_validates_fields = validates
        runner.upgrade("r", "ns", "/charts/r", None, None, {}, {}, workdir=str(tmp_path))
        assert ("--disable-openapi-validation" in run.argv[-1]) is validates


def test_errors_name_the_cause(tmp_path):
    run = Recorder([("v3.12.0", 0, "")])
    with pytest.raises(AicrError, match="helm >= 3.13"):
        assert helm.HelmRunner("h", runner=run).major
    run = Recorder([("", 1, "WARNING: x\nError: chart \"nope\" version \"1\" not found in http://r repository\n")])
    with pytest.raises(AicrError, match=r'^helm uninstall a failed: Error: chart "nope" version "1" not found'):
        helm.HelmRunner("h", runner=run).uninstall("a", "ns")
    with pytest.raises(AicrError, match="helm_binary: cannot run /no/such/helm"):
        helm.HelmRunner("/no/such/helm").run(["version"])


def test_version_probe_runs_in_the_background_and_reports_at_major():
    run = Recorder([("v4.3.1", 0, "")])
    runner = helm.HelmRunner("h", runner=run)
    runner.start_version_probe()
    runner.start_version_probe()  # a second call does not start a second probe
    assert runner.major == 4 and runner.major == 4
    assert [argv[1] for argv in run.argv] == ["version"]
    old = helm.HelmRunner("h", runner=Recorder([("v3.12.0", 0, "")]))
    old.start_version_probe()
    with pytest.raises(AicrError, match="helm >= 3.13"):
        assert old.major
    missing = helm.HelmRunner("/no/such/helm")
    missing.start_version_probe()
    with pytest.raises(AicrError, match="helm_binary: cannot run /no/such/helm"):
        assert missing.major


def _secret(name, version, status, labels=None, release=None):
    payload = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(release or {}).encode()))).decode()
    lab = {"owner": "helm", "name": name, "version": str(version), "status": status}
    lab.update(labels or {})
    return {"metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, version), "namespace": "ns", "labels": lab}, "data": {"release": payload}}


class ListOnly:
    def __init__(self, secrets):
        self.secrets = secrets

    def list(self, api_version, kind, namespace=None, label_selector=None):
        return [s for s in self.secrets if namespace in (None, s["metadata"]["namespace"])]


def test_read_release_takes_the_latest_revision():
    release = {"name": "a", "version": 3, "info": {"status": "deployed"}, "chart": {"metadata": {"name": "a", "version": "1.2.0"}},
               "config": {"x": 1}, "manifest": "---\nkind: ConfigMap\n"}
    cluster = ListOnly([_secret("a", 2, "superseded"), _secret("a", 10, "deployed", {"aicr.io/digest": "abc", "aicr.io/stack": "s"}, release),
                        _secret("a", 9, "superseded")])
    rel = read_release(cluster, "a", "ns")
    assert (rel.revision, rel.status, rel.digest, rel.stack) == (10, "deployed", "abc", "s")
    assert (rel.chart, rel.chart_version, rel.values, rel.manifest) == ("a", "1.2.0", {"x": 1}, "---\nkind: ConfigMap\n")
    assert read_release(ListOnly([]), "a", "ns") is None


def test_helm_runs_without_garbage_collection_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    seen = []

    def run(argv, env=None, **_kwargs):
        seen.append(dict(env))
        return type("Done", (), {"returncode": 0, "stdout": b"v3.17.3", "stderr": b""})()

    helm.HelmRunner("h", runner=run).run(["version"])
    assert seen[-1]["GOGC"] == "off" and seen[-1]["GOMEMLIMIT"] == helm.HELM_SOFT_MEMORY_LIMIT
    monkeypatch.setenv("GOGC", "100")
    helm.HelmRunner("h", runner=run).run(["version"])
    assert seen[-1]["GOGC"] == "100" and "GOMEMLIMIT" not in seen[-1]


def test_the_helm_version_is_cached_per_executable(tmp_path):
    binary = tmp_path / "helm"
    binary.write_text("#!/bin/sh\necho v3.17.3\n")
    binary.chmod(0o755)
    cache = tmp_path / "cache"
    first = Recorder([("v3.17.3", 0, "")])
    assert helm.HelmRunner(str(binary), runner=first, version_cache_dir=str(cache)).major == 3
    assert [argv[1] for argv in first.argv] == ["version"]
    again = Recorder([])
    assert helm.HelmRunner(str(binary), runner=again, version_cache_dir=str(cache)).major == 3
    assert again.argv == [], "the same executable is not asked again"
    binary.write_text("#!/bin/sh\necho v4.3.1 # another build\n")  # a new helm in the same place
    replaced = Recorder([("v4.3.1", 0, "")])
    assert helm.HelmRunner(str(binary), runner=replaced, version_cache_dir=str(cache)).major == 4
    assert [argv[1] for argv in replaced.argv] == ["version"]
    too_old = tmp_path / "old-helm"
    too_old.write_text("#!/bin/sh\n")
    too_old.chmod(0o755)
    for _attempt in range(2):  # a refused version is never cached
        with pytest.raises(AicrError, match="helm >= 3.13"):
            assert helm.HelmRunner(str(too_old), runner=Recorder([("v3.12.0", 0, "")]), version_cache_dir=str(cache)).major


def test_helm_environment_is_built_not_inherited(tmp_path):
    inherited = dict(WRONG_HELM_ENVIRONMENT, PATH="/usr/bin", HTTPS_PROXY="http://proxy:3128", PLUGIN_TOKEN_FILE="/t")
    env = helm.helm_environment(inherited, home=str(tmp_path), kubeconfig_path="/k/one")
    assert env["HELM_DRIVER"] == "secret"
    assert {k: v for k, v in env.items() if k.startswith("HELM_") or k == "KUBECONFIG"} == {
        "HELM_DRIVER": "secret", "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
        "HELM_DATA_HOME": str(tmp_path / "data")}
    # what the Python client inherits too (proxies, an exec plugin's variables) is kept
    assert env["PATH"] == "/usr/bin" and env["HTTPS_PROXY"] == "http://proxy:3128" and env["PLUGIN_TOKEN_FILE"] == "/t"
    # a list of kubeconfig files (read by the Python client from $KUBECONFIG) goes to helm as exactly that list
    listed = helm.helm_environment(inherited, kubeconfig_path="/k/one:/k/two")
    assert listed["KUBECONFIG"] == "/k/one:/k/two"
    runner = helm.HelmRunner("h", kubeconfig_path="/k/one:/k/two")
    assert "--kubeconfig" not in runner._global()
    assert helm.HelmRunner("h", kubeconfig_path="/k/one", context="c")._global() == ["--kubeconfig", "/k/one", "--kube-context", "c"]
