"""The collection tests' fixtures, for unit and integration tests alike (the lab's cluster fixtures come from
``aicr_lab.pytest_plugin``). ``tests/unit/plugins/conftest.py`` and ``tests/integration/conftest.py`` take them with
``from plugin_fixtures import *``; the cluster ones (``client``, ``stack_client``, ``clusterstack_crd``, ``stacks``) fail
in unit tests, which run without the lab (``tests/unit/conftest.py``).

Cluster access:

- ``client`` (per test): ``client(identity)`` is the collection's own client (``_kube.client.KubeClient``) for
  one of the lab's least-privilege identities (``release``, ``stack``, ``fabric``, ``crd-publisher``,
  ``reconciler``...; ``admin`` for test set-up and inspection only), on the test's ``kube``;
- ``stack_client``: ``client("stack")`` with the ClusterStack CRD installed;
- ``clusterstack_crd`` (module): the ClusterStack CRD is installed (set-up, as admin) while a test module runs; if
  this fixture installed it, it deletes it afterwards and waits until it is gone, so the next module finds the
  cluster as it was. Tests that need the CRD *absent* use ``private_kube`` instead;
- ``stacks`` (per test): unique ClusterStack names (ClusterStacks are cluster-scoped, the cluster is shared) and
  their removal after the test.

Doubles (``doubles.py``, the only ones besides the real control plane): ``fakes`` (the classes), ``fake_cluster``,
``silent_server`` (an API server that accepts connections and never answers).
Fabric: ``fabric_sim`` (one simulator per session), ``fab`` (reset per test), ``present`` (a Target maker).
Recipes: ``aicr_catalog_dir``, ``aicr_conformance_dir``, ``aicr_catalog`` (the real AICR catalog from ../shared).
Lookups: ``lookup_plugin(module, **extra_options)`` - a lookup plugin of the collection as the plugin loader makes it.

Helper modules: ``doubles``, ``modules_testlib`` and ``waiting`` (tests/support, on sys.path for every suite);
``recipe_helpers``, ``schema_helpers``, ``release_helpers``, ``upgrade_helpers`` (tests/unit/plugins, for unit tests).
"""

import uuid

import pytest
import yaml

from ansible import constants as C

from aicr_lab.fabric.pytest_fixture import start_simulator
from aicr_lab.fabric.state import DEFAULT_POOL

from doubles import FakeCluster, Fakes, SilentServer  # pylint: disable=import-error
from waiting import wait_for  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.factory import build_backend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.service import FabricService
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._stack import crd, store

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FABRIC_REQUEST_TIMEOUT = 1.0  # seconds; the "long latency" faults use 2.0

__all__ = [
    "client",
    "established",
    "install_clusterstack_crd",
    "delete_crd",
    "clusterstack_crd",
    "stack_client",
    "Stacks",
    "stacks",
    "lookup_plugin",
    "fake_cluster",
    "silent_server",
    "fakes",
    "Fabric",
    "fabric_sim",
    "fab",
    "present",
    "aicr_catalog_dir",
    "aicr_conformance_dir",
    "aicr_catalog",
    "CRDS",
    "FABRIC_REQUEST_TIMEOUT",
]


# -- cluster access ---------------------------------------------------------------------------------------------

@pytest.fixture
def client(kube):
    """``client(identity)``: the collection's KubeClient as that lab identity (the shipped RBAC) on the test's cluster."""
    return lambda identity: client_for(kube.kubeconfig_for(identity))


def established(kube, name):
    obj = kube.get("%s/%s" % (CRDS, name)) or {}
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def install_clusterstack_crd(kube):
    """Install the ClusterStack CRD as admin (test set-up) and wait until it is served; False if it was there already."""
    path = "%s/%s" % (CRDS, store.CRD_NAME)
    current = kube.get(path)
    if current is not None and current["metadata"].get("deletionTimestamp"):
        wait_for(lambda: kube.get(path) is None, 120, "the terminating CRD %s to go away" % store.CRD_NAME)
        current = None
    if current is not None:
        return False
    kube.rest.create(CRDS, crd.build_crd())
    wait_for(lambda: established(kube, store.CRD_NAME), 60, "CRD %s Established" % store.CRD_NAME)
    return True


def delete_crd(kube, name):
    kube.rest.delete("%s/%s" % (CRDS, name))
    wait_for(lambda: kube.get("%s/%s" % (CRDS, name)) is None, 120, "CRD %s deleted" % name)


@pytest.fixture(scope="module")
def clusterstack_crd(lab_kube):
    installed = install_clusterstack_crd(lab_kube)
    yield store.CRD_NAME
    if installed:
        delete_crd(lab_kube, store.CRD_NAME)


@pytest.fixture
def stack_client(client, clusterstack_crd):  # pylint: disable=unused-argument,redefined-outer-name
    """stack_status/stack_info's identity (``stack``) on the shared cluster, where the ClusterStack CRD is installed."""
    return client("stack")


class Stacks:
    """Unique ClusterStack names for one test, created through ``create`` or just named, deleted afterwards."""

    def __init__(self, kube):
        self.kube = kube
        self.token = uuid.uuid4().hex[:6]
        self.names = []

    def name(self, base):
        name = "%s-%s" % (base, self.token)
        self.names.append(name)
        return name

    def create(self, base, spec=None):
        """Create a ClusterStack as its owner (the lab's admin: the collection's identities may not create one);
        returns its name."""
        name = self.name(base)
        self.kube.rest.create(store.stack_path(), {"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack",
                                                   "metadata": {"name": name}, "spec": spec or {"catalog": {"source": "/catalogs"}}})
        return name

    def edit_spec(self, name, spec):
        """Replace a ClusterStack's spec as its owner; returns the object as written."""
        current = self.kube.rest.get(store.stack_path(name))
        return self.kube.rest.request("PUT", store.stack_path(name), body=dict(current, spec=spec))

    def cleanup(self):
        for name in self.names:
            try:
                self.kube.rest.delete(store.stack_path(name))
            except Exception:  # pylint: disable=broad-except  # the CRD may be gone already (a private cluster)
                pass


@pytest.fixture
def stacks(kube, clusterstack_crd):  # pylint: disable=unused-argument,redefined-outer-name
    handle = Stacks(kube)
    yield handle
    handle.cleanup()


# -- lookups ----------------------------------------------------------------------------------------------------

@pytest.fixture
def lookup_plugin():
    """``lookup_plugin(module, **extra_options)``: the lookup of ``module`` (``plugins/lookup/<name>.py``) with its documented
    options - and ``extra_options``, those of its doc fragments - registered, as the plugin loader would do."""
    def make(module, **extra_options):
        name = "aicr.runtime." + module.__name__.rsplit(".", 1)[-1]
        options = yaml.safe_load(module.DOCUMENTATION)["options"]
        options.update(extra_options)
        C.config.initialize_plugin_configuration_definitions("lookup", name, options)
        plugin = module.LookupModule(loader=None, templar=None)
        plugin._load_name = name  # pylint: disable=protected-access
        return plugin
    return make


# -- doubles ----------------------------------------------------------------------------------------------------

@pytest.fixture
def fake_cluster():
    return FakeCluster()


@pytest.fixture
def silent_server():
    """An API server on 127.0.0.1 that accepts every connection and never answers (``doubles.SilentServer``)."""
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def fakes():
    """The doubles' classes and helpers, for tests that build several instances."""
    return Fakes


# -- fabric -----------------------------------------------------------------------------------------------------

class Fabric:
    """One test's view of the fabric simulator plus helpers to run the service against it."""

    def __init__(self, sim):
        self.sim = sim
        self.control = sim.control
        state = self.control.state()
        self.tenant_id = state["tenant_id"]
        self.cluster_id = state["cluster_id"]
        self.machines = sorted(state["machines"], key=lambda m: state["machines"][m]["name"])
        self.nodes = dict((state["machines"][m]["node"], m) for m in self.machines)

    def backend(self, provider="fti_fm", timeout=FABRIC_REQUEST_TIMEOUT, **credentials):
        creds = dict(self.sim.credentials)
        creds.update(credentials)
        return build_backend(provider, self.sim.endpoint, creds, tenant_id=self.tenant_id, cluster_id=self.cluster_id,
                             ca_path=self.sim.ca_path, timeout=timeout, read_retries=1)

    def service(self, provider="fti_fm", cluster=None, backend=None, **options):
        settings = dict(poll_interval=0.02, settle_timeout=3.0, wait_timeout=10, force_detach=True)
        settings.update(options)
        return FabricService(backend or self.backend(provider), cluster=cluster, **settings)

    def run(self, targets, provider="fti_fm", **options):
        """(result, None) or (None, AicrError)."""
        try:
            return self.service(provider, **options).run(targets), None
        except AicrError as exc:
            return None, exc

    def devices(self, index=0):
        return self.control.devices(self.machines[index])

    def models(self, index=0):
        return sorted(d["model"] for d in self.devices(index))

    def mutations(self, op=None):
        entries = self.control.requests(mutating=True)
        return [e for e in entries if op is None or e["op"] == op]


@pytest.fixture(scope="session")
def fabric_sim(tmp_path_factory):
    handle = start_simulator(tmp_path_factory.mktemp("fabric-sim"), machines=4, cm_polls=1)
    yield handle
    handle.stop()


@pytest.fixture
def fab(fabric_sim):  # pylint: disable=redefined-outer-name
    fabric_sim.control.reset(machines=4, pool=DEFAULT_POOL, cm_polls=1, latency=0.0, read_latency=0.0, token_ttl=3600, rf_tasks=False)
    return Fabric(fabric_sim)


@pytest.fixture
def present():
    def make(machine_id=None, count=2, model="A100", **kw):
        return Target(machine_id=machine_id, model=model, count=count, **kw)

    return make


# -- recipes ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def aicr_catalog_dir(shared_dir):
    return shared_dir / "aicr" / "catalog"


@pytest.fixture(scope="session")
def aicr_conformance_dir(shared_dir):
    return shared_dir / "aicr" / "conformance"


@pytest.fixture(scope="session")
def aicr_catalog(aicr_catalog_dir):  # pylint: disable=redefined-outer-name
    return catalog_mod.load_catalog(str(aicr_catalog_dir), persist=False)
