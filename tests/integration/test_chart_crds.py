"""A chart's own CRDs upgraded by gated_release (``chart_crds: managed``, issue 39 item 3), on the lab with helm 4, as the
least-privilege ``release`` identity: the example CRD chart in a version whose CRD adds a field upgrades the live CRD; a
version that removes a field is refused naming the field, and nothing changes (release revision, CRD, no write).

The chart versions are made from examples/charts/example-crds in the test's own directory, their CRD renamed into a group
of the test's own (CRDs are cluster-scoped, the lab is shared); ``release`` is granted that one CRD by name, as
docs/rbac.md tells a user to compose for a chart's CRDs."""

import contextlib
import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from aicr_lab.charts.helm import run_helm
from aicr_lab.charts.pytest_fixture import example_charts_dir, push_chart, start_chart_repo, start_registry

from lab_support import audit_mutations

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
IDENTITY = "release"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RBAC = "/apis/rbac.authorization.k8s.io/v1"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def chart_version(root, version, group, edit=None):
    """examples/charts/example-crds as chart ``version``, its CRD in ``group`` (and changed by ``edit``)."""
    target = root / version
    shutil.copytree(str(example_charts_dir() / "example-crds"), str(target))
    chart = target / "Chart.yaml"
    chart.write_text(chart.read_text().replace("version: 0.1.0", "version: %s" % version))
    old = target / "crds" / "widgets.example.aicr.io.yaml"
    text = old.read_text().replace("widgets.example.aicr.io", "widgets.%s" % group).replace("group: example.aicr.io", "group: %s" % group)
    old.unlink()
    (target / "crds" / ("widgets.%s.yaml" % group)).write_text(edit(text) if edit else text)
    return target


ADD_SHAPE = ("                owner:\n", "                shape:\n                  description: The widget's shape.\n                  type: string\n"
             "                owner:\n")
REMOVE_OWNER = ("                owner:\n                  description: Who asked for the widget.\n                  type: string\n"
                "                  nullable: true\n", "")


@contextlib.contextmanager
def crd_chart_repo(kube, tmp_path, identity=IDENTITY):
    """The chart in 0.1.0, 0.2.0 (its CRD adds spec.shape) and 0.3.0 (spec.shape kept, spec.owner removed), served over
    HTTP; ``identity`` may change that one CRD. The CRD and the grant are removed afterwards."""
    group = "t%s.example.aicr.io" % uuid.uuid4().hex[:8]
    name = "widgets.%s" % group
    charts = tmp_path / "charts"
    sources = [chart_version(charts, "0.1.0", group), chart_version(charts, "0.2.0", group, lambda t: t.replace(*ADD_SHAPE)),
               chart_version(charts, "0.3.0", group, lambda t: t.replace(*ADD_SHAPE).replace(*REMOVE_OWNER))]
    grant = "aicr-lab:test-%s" % group.split(".", maxsplit=1)[0]
    kube.rest.apply("%s/clusterroles/%s" % (RBAC, grant), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": grant},
        "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "resourceNames": [name],
                   "verbs": ["get", "update", "patch"]}]})
    kube.rest.apply("%s/clusterrolebindings/%s" % (RBAC, grant), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": grant},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": grant},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": kube.user(identity)}]})
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": kube.user(identity), "resourceAttributes": {
        "verb": "patch", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions", "name": name}}}
    deadline = time.monotonic() + 30
    while not kube.rest.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review).get("status", {}).get("allowed"):
        assert time.monotonic() < deadline, "the grant on %s never took effect" % name
        time.sleep(0.05)
    (tmp_path / "repo").mkdir()
    server = start_chart_repo(tmp_path / "repo", charts=sources)
    try:
        yield server, name
    finally:
        server.stop()
        for path in ("%s/clusterrolebindings/%s" % (RBAC, grant), "%s/clusterroles/%s" % (RBAC, grant), "%s/%s" % (CRDS, name)):
            try:
                kube.rest.delete(path)
            except Exception:  # pylint: disable=broad-except  # already gone
                pass


@pytest.fixture
def crd_repo(kube, tmp_path):
    """``crd_chart_repo`` for the ``release`` identity."""
    with crd_chart_repo(kube, tmp_path) as served:
        yield served


def spec_fields(kube, name):
    crd = kube.get("%s/%s" % (CRDS, name))
    return sorted(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])


def revisions(kube, release="crd-demo"):
    out = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "history", release, "-n", kube.namespace, "-o", "json"],
                         capture_output=True, text=True, check=True).stdout
    return [r["revision"] for r in json.loads(out)]


def chart_rollout(run_playbook, kube, repository, version, helm="helm4", **extra):
    """release_chart_crds.yml with crd-demo (example-crds ``version`` from ``repository``) as ``release``."""
    component = {"name": "crd-demo", "type": "Helm", "chart": "example-crds", "repository": repository, "version": version,
                 "namespace": kube.namespace, "values": {"widget": {"create": False}}}
    extravars = {"components": [component], "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / helm),
                 "stack": "crds-%s" % kube.namespace[-8:], "lease_namespace": kube.namespace}
    extravars.update(extra)
    return run_playbook("release_chart_crds.yml", extravars=extravars)


def test_chart_crds_upgraded_when_compatible_refused_when_a_field_is_removed(run_playbook, kube, crd_repo):
    server, name = crd_repo

    def rollout(version):
        return chart_rollout(run_playbook, kube, server.url, version)

    first = rollout("0.1.0")
    assert first.rc == 0, first.stdout[-3000:]
    assert first.result("Roll out")["chart_crds"][0]["action"] == "create"
    assert "shape" not in spec_fields(kube, name)

    second = rollout("0.2.0")
    assert second.rc == 0, second.stdout[-3000:]
    res = second.result("Roll out")
    assert [(e["name"], e["action"]) for e in res["chart_crds"]] == [(name, "update")]
    assert "update CRD %s of the chart of crd-demo by server-side apply" % name in res["actions"]
    assert res["components"][0]["chart_crds"] == [name], "the inventory records the CRD the stack applied"
    assert spec_fields(kube, name) == ["color", "extra", "owner", "port", "shape", "size"], "the live CRD was upgraded"
    crd = kube.get("%s/%s" % (CRDS, name))
    assert crd["metadata"]["labels"]["aicr.io/component"] == "crd-demo"
    assert revisions(kube) == [1, 2]

    mark = kube.audit_mark()
    third = rollout("0.3.0")
    assert third.rc != 0, third.stdout[-3000:]
    res = third.result("Roll out")
    assert "existingFieldRemoval ^.spec.owner" in res["msg"] and name in res["msg"], res["msg"]
    assert res["errors"][0]["field"] == "allow_breaking_crd_changes"
    assert res["changed"] is False
    assert audit_mutations(kube, mark, IDENTITY) == [], "nothing was written"
    assert "owner" in spec_fields(kube, name) and revisions(kube) == [1, 2], "the CRD and the release are unchanged"


OCI_UPSTREAM = "oci://charts.crds.example/crds"


def test_chart_crds_from_an_oci_registry_with_helm_3(run_playbook, kube, crd_repo, tmp_path):
    """The same chart versions pulled from an OCI registry (through a mirror, plain HTTP) and installed by helm 3: the CRD
    is created, then upgraded, and helm 3 installs the release without it (--skip-crds: the CRD stays ours)."""
    _server, name = crd_repo
    registry = start_registry(tmp_path / "registry")
    try:
        for version in ("0.1.0", "0.2.0"):
            out = tmp_path / "packaged" / version
            out.mkdir(parents=True)
            run_helm(["package", str(tmp_path / "charts" / version), "--destination", str(out)], helm=str(BIN / "helm3"))
            push_chart(registry, next(out.glob("*.tgz")), "crds", helm=str(BIN / "helm3"))
        mirrors = {OCI_UPSTREAM: {"url": registry.ref("crds"), "plain_http": True}}
        first = chart_rollout(run_playbook, kube, OCI_UPSTREAM, "0.1.0", helm="helm3", mirrors=mirrors)
        assert first.rc == 0, first.stdout[-3000:]
        assert [(e["name"], e["action"]) for e in first.result("Roll out")["chart_crds"]] == [(name, "create")]
        second = chart_rollout(run_playbook, kube, OCI_UPSTREAM, "0.2.0", helm="helm3", mirrors=mirrors)
        assert second.rc == 0, second.stdout[-3000:]
        assert [(e["name"], e["action"]) for e in second.result("Roll out")["chart_crds"]] == [(name, "update")]
    finally:
        registry.stop()
    assert "shape" in spec_fields(kube, name) and revisions(kube) == [1, 2]
    crd = kube.get("%s/%s" % (CRDS, name))
    managers = sorted(set(m["manager"] for m in crd["metadata"]["managedFields"] if m.get("subresource") != "status"))
    assert managers == ["aicr-runtime"], "helm 3 did not install the CRD itself: %s" % managers
