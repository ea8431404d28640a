"""pytest fixtures of the lab, shared by every suite (``pytest_plugins = ["aicr_lab.pytest_plugin"]``).

- ``lab_kube`` (session): one real control plane for the whole pytest session (started on first
  use, stopped at the end), or the cluster of ``AICR_TEST_KUBECONFIG`` when that is set.
- ``kube`` (per test): the same cluster with a fresh namespace (``kube.namespace``), deleted after
  the test; everything of ``aicr_lab.kube.Kube`` (identities, audit, fault proxy).
- ``private_kube`` (per test): a control plane of the test's own, for tests that restart the API
  server or etcd, or need nodes of their own.
- ``lab_nodes``: the node names of the session's cluster.

A test that needs what only the lab has (audit log, restarts, the fault proxy) is skipped, saying
why, when the suites run against someone else's cluster.
"""

import os
import re
import sys

import pytest

from aicr_lab import guard
from aicr_lab.kube import Kube, LabFeatureMissing


def _log(line):
    sys.stderr.write("aicr-lab: %s\n" % line)


@pytest.fixture(scope="session")
def lab_kube(tmp_path_factory):
    guard.check("the lab's cluster (fixture lab_kube, or kube)")
    external = os.environ.get("AICR_TEST_KUBECONFIG")
    if external:
        kube = Kube.external(os.path.expanduser(external))
        yield kube
        kube.delete_namespaces()
        return
    kube = Kube.start(tmp_path_factory.mktemp("controlplane"), log=_log)
    _log("control plane %s ready in %.1f s" % (kube.server, kube.plane.started_seconds))
    try:
        yield kube
    finally:
        kube.stop()


class NamespacedKube:
    """A view of the session's cluster with one fresh namespace of the test's own."""

    def __init__(self, kube, namespace):
        self._kube = kube
        self.namespace = namespace

    def __getattr__(self, name):
        return getattr(self._kube, name)


def _namespace_prefix(request):
    """A DNS-1123 prefix from the test's name (``test_rollout_waits[helm3]`` -> ``rollout-waits``)."""
    name = request.node.name.split("[")[0].lower()
    name = name[len("test_"):] if name.startswith("test_") else name
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")[:30].strip("-") or "t"


@pytest.fixture
def kube(lab_kube, request):
    namespace = lab_kube.create_namespace(_namespace_prefix(request))
    yield NamespacedKube(lab_kube, namespace)
    lab_kube.rest.delete("/api/v1/namespaces/%s" % namespace, propagationPolicy="Background")
    lab_kube.namespaces.remove(namespace)


@pytest.fixture
def private_kube(tmp_path, request):
    guard.check("a control plane of the test's own (fixture private_kube)")
    if os.environ.get("AICR_TEST_KUBECONFIG"):
        pytest.skip("needs a control plane of its own (restarts it); not run against AICR_TEST_KUBECONFIG's cluster")
    nodes = getattr(request, "param", None)
    handle = Kube.start(tmp_path / "controlplane", nodes=nodes, log=_log)
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def lab_nodes(lab_kube):
    return [n["metadata"]["name"] for n in lab_kube.rest.get("/api/v1/nodes")["items"]]


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):  # pylint: disable=unused-argument
    outcome = yield
    if outcome.excinfo is not None and issubclass(outcome.excinfo[0], LabFeatureMissing):
        outcome.force_exception(pytest.skip.Exception(str(outcome.excinfo[1]), _use_item_location=True))
