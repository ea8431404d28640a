"""Shared pytest set-up for every suite.

Unit tests import the engines the way Ansible does
(``ansible_collections.aicr.runtime.plugins.module_utils...``), so the repository is
exposed under a namespace path in ``.build/dev`` (a symlink, created on first use).
Integration tests drive the *installed* collection in ``.build/collections`` instead
(see ``tests/integration/conftest.py``). The lab's fixtures (a real control plane per pytest
session, a namespace per test, least-privilege identities, the audit log, the fault proxy)
come from ``aicr_lab.pytest_plugin``.
"""

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["aicr_lab.pytest_plugin", "pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEV_NAMESPACE_ROOT = REPO_ROOT / ".build" / "dev"
# helper modules every suite imports by name (``from waiting import wait_for``, ``from plugin_fixtures import *``)
SUPPORT = str(Path(__file__).resolve().parent / "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)


def _expose_repo_as_collection():
    link = DEV_NAMESPACE_ROOT / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        except FileExistsError:  # another xdist worker won the race
            pass
    if str(DEV_NAMESPACE_ROOT) not in sys.path:
        sys.path.insert(0, str(DEV_NAMESPACE_ROOT))


_expose_repo_as_collection()


def shared_root():
    """Where the upstream test data lives: $AICR_SHARED or ../shared beside the clone."""
    configured = os.environ.get("AICR_SHARED")
    return Path(configured) if configured else REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def repo_root():
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir():
    root = shared_root()
    if not (root / "README.md").is_file():
        pytest.fail("upstream test data not found at %s (set AICR_SHARED)" % root)
    return root
