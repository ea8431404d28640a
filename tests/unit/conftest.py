"""Unit tests are hermetic: no control plane, no helm, no OCI registry, no binary of the lab.

While a unit test is set up, runs and is torn down, ``AICR_LAB_DISABLED`` is set, so whatever reaches for the lab
(``kube``/``lab_kube``/``private_kube``, ``aicr_lab.charts.helm.find_binary``, a chart repository built with helm, an
OCI registry, ``ControlPlane.start``) fails at once saying so (``aicr_lab.guard``). Such a test belongs in
tests/integration, at the path mirroring its unit path. ``make unit`` also runs with a PATH and a binary cache that
hold none of them (see the Makefile), so a test that runs ``helm`` by name fails too; a test marked ``helm`` fails
before it starts.
"""

import os

import pytest

from aicr_lab import guard

REASON = "unit tests run without a cluster or the lab's binaries; a test that needs them belongs in tests/integration"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("helm") is not None:
        pytest.fail("%s is marked helm (needs the helm binaries): %s" % (item.nodeid, REASON), pytrace=False)
    item.stash[_SAVED] = os.environ.get(guard.ENV)
    os.environ[guard.ENV] = REASON


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    saved = item.stash.get(_SAVED, None)
    if saved is None:
        os.environ.pop(guard.ENV, None)
    else:
        os.environ[guard.ENV] = saved


_SAVED = pytest.StashKey()


# make unit runs on xdist with --dist loadgroup: a file's tests stay on one worker (as with --dist loadfile), except a
# file that sets XDIST_SPREAD = True, whose tests go to whichever worker is free. test_fabric_faults.py's cases mostly
# wait on the engine's real retry back-off against the HTTPS simulator: 81 s of one worker's wall time for 14 s of CPU.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if not getattr(getattr(item, "module", None), "XDIST_SPREAD", False) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
