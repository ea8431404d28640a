"""helm's client-side OpenAPI check, skipped where the API server validates fields itself (gated_release on helm 3 and 4).

On Kubernetes 1.27+ helm's "OpenAPI validation" (kubectl's ParamVerifyingSchema) downloads the OpenAPI v3 document of
each object's group-version only to find that the server validates fields, and then checks nothing on the client. The
engine gives helm ``--disable-openapi-validation`` there (``_helm.helm.server_validates_fields``). Against the lab's
real kube-apiserver, as the identity ``release``, a chart whose objects carry fields no schema declares is installed
by helm alone (its own check on) and by gated_release (the check skipped): both end the same way - helm 3 installs it
with the API server's "unknown field" warnings, helm 4's server-side apply is refused naming the fields - and only the
helm run by gated_release asks nothing of ``/openapi``.
"""

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
IDENTITY = "release"
REPOSITORY = "https://charts.fields.example/local"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]

LOOSE_CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "{{ .Release.Name }}", "bogusField": 1},
                   "data": {"a": "b"}, "notAField": True}


def loose_chart(root):
    (root / "loose" / "templates").mkdir(parents=True)
    (root / "loose" / "Chart.yaml").write_text("apiVersion: v2\nname: loose\nversion: 1.0.0\n")
    (root / "loose" / "templates" / "configmap.yaml").write_text(json.dumps(LOOSE_CONFIGMAP))
    return root / "loose"


def openapi_requests(kube, mark):
    return [e for e in kube.audit(since=mark, user=kube.user(IDENTITY), path="^/openapi") if e["userAgent"].lower().startswith("helm")]


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_skipping_helms_openapi_download_changes_nothing_the_server_answers(run_playbook, kube, tmp_path, helm):
    binary = str(BIN / ("helm" if helm == "helm3" else "helm4"))
    chart = loose_chart(tmp_path / "charts")
    kubeconfig = kube.kubeconfig_for(IDENTITY)

    mark = kube.audit_mark()
    alone = subprocess.run([binary, "upgrade", "alone", str(chart), "--install", "--namespace", kube.namespace, "--kubeconfig", kubeconfig],
                           capture_output=True, text=True, check=False, env={"PATH": str(BIN), "HOME": str(tmp_path)}, timeout=120)
    assert openapi_requests(kube, mark), "helm alone checks the objects' group-version in the OpenAPI document"

    component = {"name": "engine", "type": "Helm", "chart": "loose", "repository": REPOSITORY, "version": "1.0.0",
                 "namespace": kube.namespace, "dependencies": []}
    mark = kube.audit_mark()
    run = run_playbook("release_early.yml", extravars={
        "components": [component], "mirrors": {REPOSITORY: str(chart.parent)}, "kubeconfig": kubeconfig,
        "helm_binary": binary, "stack": kube.namespace, "lease_namespace": kube.namespace, "timeout": 30})
    assert openapi_requests(kube, mark) == []
    phase = run.result("Roll out")["components"][0]
    if helm == "helm3":
        # the API server takes the objects and warns (its default field validation): with or without helm's check
        assert alone.returncode == 0, alone.stderr
        assert 'unknown field "notAField"' in alone.stderr and 'unknown field "metadata.bogusField"' in alone.stderr
        assert run.rc == 0 and phase["phase"] == "Ready", run.stdout[-3000:]
        assert kube.get("/api/v1/namespaces/%s/configmaps/engine" % kube.namespace)["data"] == {"a": "b"}
    else:
        # helm 4's server-side apply is refused by the API server for both, naming the undeclared fields
        assert alone.returncode != 0 and "field not declared in schema" in alone.stderr, alone.stderr
        assert run.rc != 0 and phase["phase"] == "Failed", run.stdout[-3000:]
        assert "field not declared in schema" in phase["message"], phase["message"]
        assert kube.get("/api/v1/namespaces/%s/configmaps/engine" % kube.namespace) is None
