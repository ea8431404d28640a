"""Fixtures of the client fidelity suite: real clients against the lab's real control plane.

helm 3.17.3 / 4.3.1 (``make helm``), kubectl v1.37.2 (built with the control plane, ``make
controlplane``), the ``kubernetes`` Python client and kubernetes.core talk to the session's
kube-apiserver the way the collection does: over TLS verified against the lab CA, as a client
certificate identity, under RBAC, with readiness driven by kwok's stages. Each test gets a fresh
namespace (``kube.namespace``) on the shared cluster; chart repositories are shared per session.

Identities: ``helm``, ``kubectl`` and ``api_client`` act as ``release`` — the least-privilege
identity gated_release and cluster_runtime run as (``aicr-runtime:release`` and
``aicr-runtime:example-charts``) — so a call the shipped RBAC does not allow fails with the API
server's own 403. ``admin_kubectl``, ``admin_helm`` and ``admin_api`` are the lab's admin
(system:masters): for set-up and inspection, and for third-party charts whose contents (RBAC,
webhooks, cluster-scoped objects) no role of this collection is meant to grant.
"""

import sys
import uuid
from pathlib import Path

import pytest

from aicr_lab.charts.helm import isolated_env
from aicr_lab.charts.pytest_fixture import shared_http_dir, start_chart_repo
from aicr_lab.controlplane.rest import ApiError

FIDELITY_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(FIDELITY_DIR))
from fidelity_clients import Cli, wait_until  # noqa: E402  pylint: disable=wrong-import-position

HELMS = ["helm3", "helm4"]
HELM_VERSIONS = {"helm3": "v3.17.3", "helm4": "v4.3.1"}
# the identity the collection's release path runs as (see aicr_lab.controlplane.identities)
RELEASE_IDENTITY = "release"


@pytest.fixture
def client_env(tmp_path):
    """Environment with helm's and kubectl's homes under tmp_path (never ~)."""
    env = isolated_env(tmp_path / "helm-home")
    env["HOME"] = str(tmp_path / "home")
    Path(env["HOME"]).mkdir(exist_ok=True)
    env.pop("KUBECONFIG", None)
    return env


@pytest.fixture
def ns(kube):
    """The test's own namespace on the shared cluster (deleted after the test)."""
    return kube.namespace


@pytest.fixture
def new_namespace(kube):
    """A namespace name nobody created yet (for ``--create-namespace``); deleted after the test if it exists."""
    names = []

    def make(prefix):
        name = "%s-%s" % (prefix[:40].rstrip("-"), uuid.uuid4().hex[:6])
        names.append(name)
        return name

    yield make
    for name in names:
        kube.rest.delete("/api/v1/namespaces/%s" % name, propagationPolicy="Background")


@pytest.fixture
def kubectl(kube, client_env):
    """kubectl as the least-privilege ``release`` identity."""
    return Cli("kubectl", kube.kubeconfig_for(RELEASE_IDENTITY), client_env)


@pytest.fixture
def admin_kubectl(kube, client_env):
    """kubectl as the lab's admin: set-up and inspection only."""
    return Cli("kubectl", kube.kubeconfig_for("admin"), client_env)


@pytest.fixture(params=HELMS)
def helm(request, kube, client_env):
    """helm 3 and helm 4 as the least-privilege ``release`` identity (what gated_release runs)."""
    return Cli(request.param, kube.kubeconfig_for(RELEASE_IDENTITY), client_env)


@pytest.fixture(params=HELMS)
def admin_helm(request, kube, client_env):
    """helm 3 and helm 4 as admin: third-party charts bring ClusterRoles, webhooks and CRDs of their own,
    which no role this collection ships grants (an operator composes that RBAC per chart)."""
    return Cli(request.param, kube.kubeconfig_for("admin"), client_env)


def _api_client(kubeconfig):
    from kubernetes import config  # pylint: disable=import-outside-toplevel

    return config.new_client_from_config(config_file=str(kubeconfig))


@pytest.fixture
def api_client(kube):
    """An ApiClient of the official Python client from the ``release`` identity's kubeconfig (client certificate, lab CA)."""
    api = _api_client(kube.kubeconfig_for(RELEASE_IDENTITY))
    yield api
    api.close()


@pytest.fixture
def admin_api(kube):
    """The same client as the lab's admin, for what the release identity may not do (delete namespaces, write /status)."""
    api = _api_client(kube.kubeconfig_for("admin"))
    yield api
    api.close()


@pytest.fixture
def widgets_crd(kube):
    """Removes the example Widget CRD after the test if the test created it (the cluster is shared)."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.aicr.io"
    existed = kube.get(path) is not None
    yield path
    if not existed:
        kube.rest.delete(path)
        wait_until(lambda: kube.get(path) is None, 60, "the Widget CRD to be deleted")


# cluster-scoped kinds a chart may create (templates, crds/, hooks that outlive an uninstall)
CLUSTER_SCOPED = (
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/node.k8s.io/v1/runtimeclasses",
    # not apiservices: kube-apiserver registers one of its own for every CRD group/version (deleting those
    # left the CRD's storage "(re)initializing" and its deletion stuck)
)


def _lists(kube, path):
    try:
        kube.rest.get(path, limit="1")
        return True
    except ApiError:
        return False


@pytest.fixture
def cluster_scoped_cleanup(kube):
    """Deletes every cluster-scoped object (of ``CLUSTER_SCOPED``) the test created: the cluster is shared,
    and helm leaves a chart's crds/ (and hook objects) behind on purpose."""
    def names(path):
        return {item["metadata"]["name"] for item in kube.rest.get(path).get("items", [])}

    before = {path: names(path) for path in CLUSTER_SCOPED}
    yield
    crds = CLUSTER_SCOPED[0]
    for crd in kube.rest.get(crds).get("items", []):
        if crd["metadata"]["name"] not in before[crds]:
            # list its custom resources first: kube-apiserver v1.37 left a CRD deleted while the storage of its
            # resources was still being set up (nobody had listed them yet) Terminating for good
            # (InstanceDeletionFailed: "storage is (re)initializing"), and the next install of the chart failed on it
            version = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")][0]
            instances = "/apis/%s/%s/%s" % (crd["spec"]["group"], version, crd["spec"]["names"]["plural"])
            wait_until(lambda path=instances: _lists(kube, path), 60, "%s to be listable" % instances)
    for path in CLUSTER_SCOPED:
        for name in sorted(names(path) - before[path]):
            kube.rest.delete("%s/%s" % (path, name))

    def left():
        return {item["metadata"]["name"]: [c for c in item.get("status", {}).get("conditions", []) if c["type"] != "Established"]
                for item in kube.rest.get(crds).get("items", []) if item["metadata"]["name"] not in before[crds]}

    try:
        wait_until(lambda: not left(), 120, "the test's CRDs to be deleted")
    except AssertionError as exc:
        raise AssertionError("%s: %s" % (exc, left())) from None


@pytest.fixture(scope="session")
def shared_repo(tmp_path_factory, shared_dir):
    """``charts-repo/http`` served one repository per slug."""
    server = start_chart_repo(tmp_path_factory.mktemp("fidelity-shared"), charts=["/=%s" % shared_http_dir(shared_dir)], url_prefix="")
    yield server
    server.stop()
