"""values_schema module and lookup driven through ansible-playbook against the installed collection, and the
acceptance on the lab's real kube-apiserver: every corpus chart's CRD is accepted (structural schema validation,
the real one), and a custom resource whose .spec.values are the chart's values reads back unchanged (nothing
pruned); compare reads a live CRD by name, as the least-privilege identity crd-publisher."""

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import build_api_client
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd, engine, infer

from lab_support import wait_until


def _run(run_playbook, shared_dir, tmp_path, check=False, diff=False):
    chart = shared_dir / "values-corpus" / "podinfo"
    changed = tmp_path / "changed.yaml"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    values.pop("replicaCount")
    values["ui"]["color"] = 42
    changed.write_text(yaml.safe_dump(values))
    return run_playbook("values_schema_generate.yml", check=check, diff=diff, extravars={
        "chart": str(chart), "chart_name": "podinfo", "out_dir": str(tmp_path), "changed_values": str(changed),
        "good_values": {"replicaCount": 3, "ui": {"color": "#123456"}},
        "bad_values": {"replicaCount": "three"}, "bad_set": ["ui.logo=1"],
    })


def test_values_schema_playbook(run_playbook, shared_dir, tmp_path):
    run = _run(run_playbook, shared_dir, tmp_path)
    assert run.rc == 0, run.stdout[-4000:]
    assert "Traceback" not in run.stdout
    assert run.result("Write the JSON Schema")["changed"] is True
    schema = json.loads((tmp_path / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    crd = yaml.safe_load((tmp_path / "crd.yaml").read_text())
    assert crd["metadata"]["name"] == "podinfos.podinfo.bundles.aicr.io"
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["version"]["enum"] == ["1.0.0", "1.1.0"]
    good = run.result("Validate good values")
    assert good["valid"] is True and good["errors"] == [] and good["changed"] is False
    bad = run.result("Validate bad values")
    assert "Validate bad values" in run.failed_tasks, bad
    assert sorted((e["path"], e["rule"]) for e in bad["errors"]) == [("replicaCount", "type"), ("ui.logo", "type")]
    assert bad["msg"].startswith("values do not validate: 2 violation(s): ")
    compare = run.result("Compare with a changed chart")
    assert "Compare with a changed chart" in run.failed_tasks and compare["breaking"] is True
    errors = set((f["rule"], f["path"]) for f in compare["findings"] if f["severity"] == "error")
    assert ("existingFieldRemoval", "^.spec.values.replicaCount") in errors
    assert ("type", "^.spec.values.ui.color") in errors
    assert compare["msg"].startswith("breaking changes from podinfos.podinfo.bundles.aicr.io: ")
    report = run.result("Report")
    assert int(report["msg"]["properties"]) == len(schema["properties"])

    # a second run changes nothing
    again = _run(run_playbook, shared_dir, tmp_path)
    assert again.result("Write the JSON Schema")["changed"] is False
    assert again.result("Write the CRD")["changed"] is False


def test_values_schema_check_mode_writes_nothing(run_playbook, shared_dir, tmp_path):
    run = _run(run_playbook, shared_dir, tmp_path, check=True, diff=True)
    result = run.result("Write the JSON Schema")
    assert result["changed"] is True
    assert "diff" in result or "diff" in json.dumps(result)
    assert not (tmp_path / "values.schema.json").exists()


kubernetes = pytest.importorskip("kubernetes")

# export: false fields, and nulls of fields the design types exactly (not nullable), are pruned by design
PRUNED_BY_DESIGN = {
    "juiceshop-helmetica-v3.1.0": {
        "readinessProbe": {"httpGet": ["path", "port"]},
        "hooks": {"preInstall": {"job": ["ttlSecondsAfterFinished", "sleepSeconds"]}, "postInstall": {"job": ["ttlSecondsAfterFinished", "sleepSeconds"]}},
        "private": None,
    },
}


def _drop(values, spec):
    for key, sub in spec.items():
        if sub is None:
            values.pop(key, None)
        elif isinstance(sub, list):
            for leaf in sub:
                values[key].pop(leaf, None)
        else:
            _drop(values[key], sub)
    return values


IDENTITY = "crd-publisher"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"


@pytest.fixture
def kube_with_crd_cleanup(kube):
    """The session's cluster; the CRDs a test creates (cluster-scoped) are deleted afterwards (``kube.created_crds``)."""
    created = []
    kube.created_crds = created
    yield kube
    for name in created:
        if kube.get(CRDS + name):
            kube.rest.delete(CRDS + name)


def _create_crd(kube, ext, doc):
    """Create a CRD (as admin: set-up), remembered for deletion; a leftover of an earlier run is replaced first."""
    name = doc["metadata"]["name"]
    if kube.get(CRDS + name):
        kube.rest.delete(CRDS + name)
        wait_until(lambda: kube.get(CRDS + name) is None, 60, "CRD %s to be deleted" % name)
    kube.created_crds.append(name)
    ext.create_custom_resource_definition(body=doc)


def _wait_established(api, name, timeout=60):
    def established():
        conditions = (api.read_custom_resource_definition(name).status.conditions or [])
        return any(c.type == "Established" and c.status == "True" for c in conditions)
    wait_until(established, timeout, "CRD %s Established" % name)


def _retry_until_served(create, timeout=60):
    """A CRD just Established may not be served by every handler yet: a 404 on the first create is retried."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return create()
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_corpus_crds_accepted_and_values_round_trip(kube_with_crd_cleanup, shared_dir):
    client = build_api_client(kube_with_crd_cleanup.kubeconfig)
    ext = kubernetes.client.ApiextensionsV1Api(client)
    objects = kubernetes.client.CustomObjectsApi(client)
    charts = sorted(p for p in (shared_dir / "values-corpus").iterdir() if (p / "values.yaml").is_file())
    assert len(charts) == 30
    for chart in charts:
        text = (chart / "values.yaml").read_text()
        name = yaml.safe_load((chart / "Chart.yaml").read_text())["name"]
        # several corpus charts share a chart name: one kind per corpus entry
        doc, _dropped = crd.build_crd(infer.infer_text(text, chart.name), chart.name)
        _create_crd(kube_with_crd_cleanup, ext, doc)
        _wait_established(ext, doc["metadata"]["name"])
        values = infer.load_values(text)
        spec = doc["spec"]
        body = {"apiVersion": "%s/%s" % (spec["group"], spec["versions"][0]["name"]), "kind": spec["names"]["kind"],
                "metadata": {"name": name[:50]}, "spec": {"version": "1.0.0", "values": values}}
        create = functools.partial(objects.create_namespaced_custom_object, spec["group"], spec["versions"][0]["name"], kube_with_crd_cleanup.namespace,
                                   spec["names"]["plural"], body)
        _retry_until_served(create)
        back = objects.get_namespaced_custom_object(spec["group"], spec["versions"][0]["name"], kube_with_crd_cleanup.namespace,
                                                    spec["names"]["plural"], name[:50])
        expected = _drop(infer.load_values(text), PRUNED_BY_DESIGN.get(chart.name, {}))
        assert back["spec"]["values"] == expected, chart.name


def test_compare_with_live_crd_by_name(kube_with_crd_cleanup, shared_dir, tmp_path):
    original = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-original" / "values.yaml")
    updated = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-updated" / "values.yaml")
    client = build_api_client(kube_with_crd_cleanup.kubeconfig)
    ext = kubernetes.client.ApiextensionsV1Api(client)
    live = engine.run({"values_files": [original], "output": "crd", "name": "juicepair"})["crd"]
    missing = engine.run({"values_files": [updated], "output": "compare", "name": "juicepair", "old_crd": live["metadata"]["name"],
                          "kubeconfig": kube_with_crd_cleanup.kubeconfig_for(IDENTITY)})
    assert "failed_message" not in missing and missing["old_found"] is False and missing["findings"] == []
    _create_crd(kube_with_crd_cleanup, ext, live)
    _wait_established(ext, live["metadata"]["name"])
    result = engine.run({"values_files": [updated], "output": "compare", "name": "juicepair", "old_crd": live["metadata"]["name"],
                         "kubeconfig": kube_with_crd_cleanup.kubeconfig_for(IDENTITY)})
    failure = result.pop("failed_message", None)
    assert result["old_found"] is True
    assert ("existingFieldRemoval", "^.spec.values.removedKey") in set((f["rule"], f["path"]) for f in result["findings"])
    assert failure.startswith("breaking changes from juicepairs.juicepair.bundles.aicr.io: 5 breaking change(s)")


def test_module_compares_with_live_crd(run_playbook, kube_with_crd_cleanup, shared_dir):
    original = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-original" / "values.yaml")
    updated = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-updated" / "values.yaml")
    client = build_api_client(kube_with_crd_cleanup.kubeconfig)
    ext = kubernetes.client.ApiextensionsV1Api(client)
    live = engine.run({"values_files": [original], "output": "crd", "name": "juicelive"})["crd"]
    _create_crd(kube_with_crd_cleanup, ext, live)
    _wait_established(ext, live["metadata"]["name"])
    run = run_playbook("values_schema_live.yml", extravars={
        "kubeconfig": kube_with_crd_cleanup.kubeconfig_for(IDENTITY), "crd_name": live["metadata"]["name"], "same": original, "changed": updated,
        "name": "juicelive"})
    assert "Traceback" not in run.stdout
    same = run.result("Compare an unchanged chart with the live CRD")
    assert same["findings"] == [] and same["old_found"] is True and same["changed"] is False
    broken = run.result("Compare a changed chart with the live CRD")
    assert "Compare a changed chart with the live CRD" in run.failed_tasks
    assert broken["msg"].startswith("breaking changes from juicelives.juicelive.bundles.aicr.io: 5 breaking change(s)")
    allowed = run.result("Compare with relaxed severities")
    assert allowed["breaking"] is False and allowed["findings"]


@pytest.fixture
def chart_repository(shared_dir, tmp_path):
    """gpu-operator in an http repository served from tmp_path on a free 127.0.0.1 port."""
    helm = Path(sys.executable).parent / "helm"
    if not helm.exists():
        pytest.skip("helm not installed (make helm)")
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(str(shared_dir / "charts-repo" / "http" / "helm.ngc.nvidia.com_nvidia" / "gpu-operator-v26.3.3.tgz"), str(repo))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = "http://127.0.0.1:%d" % server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    subprocess.run([str(helm), "repo", "index", str(repo), "--url", url], check=True, capture_output=True)
    yield url
    server.shutdown()
    server.server_close()


@pytest.mark.helm
def test_module_pulls_chart_from_repository(run_playbook, chart_repository):
    run = run_playbook("values_schema_repo.yml", extravars={"chart_name": "gpu-operator", "chart_version": "v26.3.3",
                                                            "repository": chart_repository})
    assert run.rc == 0, run.stdout[-4000:]
    generated = run.result("CRD of a repository chart with its versions")
    assert generated["chart"] == {"name": "gpu-operator", "version": "v26.3.3", "app_version": "v26.3.3", "subcharts": ["node-feature-discovery"]}
    spec = generated["crd"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["version"]["enum"] == ["v26.3.3"]
    assert "node-feature-discovery" in spec["values"]["properties"]
    checked = run.result("Validate values against the repository chart")
    assert [(e["path"], e["rule"], e["value"]) for e in checked["errors"]] == [("driver.enabled", "type", "sometimes")]


def test_chart_from_a_local_oci_registry(run_playbook, tmp_path):
    """A chart pushed to an OCI registry served over plain HTTP (a local mirror) is pulled with the real helm."""
    from aicr_lab.charts.helm import find_binary, run_helm  # pylint: disable=import-outside-toplevel
    from aicr_lab.charts.oci import push_chart, start_registry  # pylint: disable=import-outside-toplevel

    helm = find_binary("helm")
    run_helm(["package", str(Path(__file__).resolve().parents[2] / "examples" / "charts" / "example-operator"), "--destination", str(tmp_path)], helm=helm)
    registry = start_registry(tmp_path / "registry")
    try:
        reference = push_chart(registry, tmp_path / "example-operator-0.1.0.tgz", "charts")
        chart = reference.rsplit(":", 1)[0]  # oci://HOST/charts/example-operator
        run = run_playbook("values_schema_oci.yml", extravars={"chart_ref": chart, "chart_version": "0.1.0", "helm": helm})
        assert run.rc == 0, run.stdout[-3000:]
        crd = run.result("Generate the CRD from the OCI chart")["crd"]
        values = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]["properties"]
        assert values["replicaCount"]["type"] == "integer"
    finally:
        registry.stop()


UNIONS_AND_HINTS = """\
## @param pdb.minAvailable [object] Minimum number/percentage of pods that should remain scheduled
## @param pullSecrets [array] Secret names
pdb:
  minAvailable: ""
  maxUnavailable: 1
pullSecrets:
# @schema type: [object, string]
proxy:
  host: example.com
  port: 3128
# @schema type: [array, null, object]; item: string
extra: {}
# @schema type: [array, null, object]; item: string
extraList: [a, b]
mode: c # @schema enum: [a, b]
"""

# peer testdata inputs the peers themselves reject (invalid YAML, unknown types) or that are recursive aliases
PEER_SKIPPED = ("anchors.yaml", "invalid-schema.yaml", "fail-type.yaml", "malformed.yaml", "values-bad.yaml")


def _peer_inputs(shared_dir):
    ref = shared_dir / "values-schema-reference"
    found = sorted((ref / "losisin-helm-values-schema-json" / "testdata").rglob("*.yaml"))
    found += sorted((ref / "dadav-helm-schema" / "tests").rglob("values.yaml")) + sorted((ref / "dadav-helm-schema" / "tests" / "charts").glob("test_*.yaml"))
    return [p for p in found if p.name not in PEER_SKIPPED and p.name != "Chart.yaml" and "expected" not in p.name]


def test_unions_hints_and_peer_testdata_round_trip(kube_with_crd_cleanup, shared_dir, tmp_path):
    """The generated CRD (safety net included) holds the chart's own values on the real apiserver: nothing pruned."""
    client = build_api_client(kube_with_crd_cleanup.kubeconfig)
    ext = kubernetes.client.ApiextensionsV1Api(client)
    objects = kubernetes.client.CustomObjectsApi(client)
    own = tmp_path / "unions" / "values.yaml"
    own.parent.mkdir()
    own.write_text(UNIONS_AND_HINTS)
    inputs = [own] + _peer_inputs(shared_dir)
    assert len(inputs) > 40
    for index, path in enumerate(inputs):
        kind = "peer%d" % index
        result = engine.run({"values_files": [str(path)], "output": "crd", "name": kind})
        assert "failed_message" not in result
        doc = result["crd"]
        _create_crd(kube_with_crd_cleanup, ext, doc)
        _wait_established(ext, doc["metadata"]["name"])
        values = infer.load_values(path.read_text())
        spec = doc["spec"]
        body = {"apiVersion": "%s/%s" % (spec["group"], spec["versions"][0]["name"]), "kind": spec["names"]["kind"],
                "metadata": {"name": kind}, "spec": {"version": "1.0.0", "values": values}}
        create = functools.partial(objects.create_namespaced_custom_object, spec["group"], spec["versions"][0]["name"], kube_with_crd_cleanup.namespace,
                                   spec["names"]["plural"], body)
        _retry_until_served(create)
        back = objects.get_namespaced_custom_object(spec["group"], spec["versions"][0]["name"], kube_with_crd_cleanup.namespace, spec["names"]["plural"], kind)
        assert back["spec"]["values"] == values, str(path)
        if path == own:
            props = spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]["properties"]
            assert props["proxy"]["properties"]["port"] == {"type": "integer"}
            assert props["pdb"]["properties"]["minAvailable"]["x-kubernetes-int-or-string"] is True
            assert any("mode" in w and "enum" in w for w in result["warnings"])
