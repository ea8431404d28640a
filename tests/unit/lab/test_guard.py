"""Unit tests run without the lab: each of its entry points fails at once, saying why (tests/unit/conftest.py)."""

import os

import pytest

from aicr_lab import guard
from aicr_lab.charts.helm import find_binary
from aicr_lab.charts.oci import start_registry
from aicr_lab.controlplane import build
from aicr_lab.controlplane.cluster import ControlPlane


def test_the_lab_is_disabled_in_unit_tests():
    assert "tests/integration" in os.environ[guard.ENV]


@pytest.mark.parametrize("start", [
    lambda tmp: ControlPlane(tmp / "controlplane").start(),
    lambda tmp: find_binary("helm"),
    lambda tmp: start_registry(tmp / "registry"),
    lambda tmp: build.ensure_binaries(),
], ids=["control plane", "helm", "registry", "binaries"])
def test_every_entry_point_of_the_lab_fails_saying_why(tmp_path, start):
    with pytest.raises(guard.LabDisabled, match="the lab is disabled here .*belongs in tests/integration"):
        start(tmp_path)
    assert not (tmp_path / "controlplane").exists(), "nothing was started"


def test_a_unit_test_asking_for_the_cluster_fails_saying_why(pytester):
    pytester.makeconftest('pytest_plugins = ["aicr_lab.pytest_plugin"]\n')
    pytester.makepyfile(test_cluster="def test_uses_the_cluster(kube):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*LabDisabled: the lab's cluster (fixture lab_kube, or kube): the lab is disabled here*"])
