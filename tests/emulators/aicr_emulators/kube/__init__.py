"""A Kubernetes API emulator for tests: real clients (kubectl, helm, the Python client) talk to it over HTTP.

Start one with ``aicr-kube-emulator --port 0 --kubeconfig PATH`` or, from Python,
``aicr_emulators.kube.pytest_fixture.start_emulator(tmp_dir)``. See docs/emulator.md.
"""

from .server import Emulator, Options

__all__ = ["Emulator", "Options"]
