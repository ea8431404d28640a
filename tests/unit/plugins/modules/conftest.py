"""Fixtures shared by the module tests."""

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    """An in-process Kubernetes API emulator, one per test module."""
    handle = start_emulator(tmp_path_factory.mktemp("kube"), in_process=True)
    yield handle
    handle.stop()
