"""Fixtures for the tests that keep ClusterStacks on the lab's shared control plane.

- ``clusterstack_crd`` (module): the ClusterStack CRD is installed (set-up, as admin) while a test
  module runs; if this fixture installed it, it deletes it afterwards and waits until it is gone,
  so the next module finds the cluster as it was. Tests that need the CRD *absent* use
  ``private_kube`` instead: they never delete it from the shared cluster.
- ``stacks`` (per test): unique ClusterStack names (ClusterStacks are cluster-scoped, the cluster
  is shared) and their removal after the test.
"""

import time
import uuid

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils.stack import crd, store

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.05)


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

    def create(self, api, base, spec=None):
        """Create a ClusterStack through ``api`` (a ``store.Api``: the identity the test runs as); returns its name."""
        name = self.name(base)
        api.request("POST", store.stack_path(), body={"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": name},
                                                      "spec": spec or {"catalog": {"source": "/catalogs"}}})
        return name

    def cleanup(self):
        for name in self.names:
            try:
                self.kube.rest.delete(store.stack_path(name))
            except Exception:  # pylint: disable=broad-except  # the CRD may be gone already (a private cluster)
                pass


@pytest.fixture
def stacks(kube, clusterstack_crd):  # pylint: disable=unused-argument
    handle = Stacks(kube)
    yield handle
    handle.cleanup()
