"""Integration harness: drive the *installed* collection the way users do.

Playbooks run through ansible-runner (the engine AWX job templates use), with the
collection taken from ``.build/collections`` (``make collection`` builds and installs
it; this fixture does the same when it is missing, so ``pytest tests/integration``
also works on its own). Modules run under this virtualenv's Python so they find
``kubernetes``, ``jsonschema`` and the other requirements.

The cluster is the lab's real control plane (``aicr_lab.pytest_plugin``: ``kube`` is the
session's cluster plus a fresh namespace per test). It is shared by every test of the session,
so a test installs into its own namespace (``lab_support.example_catalog`` is the example catalog
with that namespace as every component's default), names its stacks uniquely and removes what it
created cluster-wide. Helpers the test modules import live in ``lab_support.py`` (a module of its
own: ``from conftest import`` would find whichever conftest.py was imported first). The collection runs as the shipped least-privilege identities
(``kube.kubeconfig_for("release")`` …); the admin kubeconfig is for set-up and inspection only.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import ansible_runner

# the example charts over HTTP (session-scoped; read-only, so every module shares one server)
from aicr_lab.charts.pytest_fixture import example_repo  # noqa: F401  pylint: disable=unused-import

# tests/integration is on sys.path; dump and example_catalog are re-exported for modules still doing `from conftest import`
from lab_support import FabricNodes, dump, example_catalog  # noqa: F401  # pylint: disable=import-error,unused-import
# the collection tests' fixtures (client, stacks, fab, fake_cluster, ...), shared with the unit tests
from plugin_fixtures import *  # noqa: F401,F403  pylint: disable=import-error,wildcard-import,unused-wildcard-import

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO_ROOT / ".build" / "collections"
INSTALLED = COLLECTIONS / "ansible_collections" / "aicr" / "runtime"
PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
VENV_BIN = Path(sys.executable).parent


def _install_collection():
    dist = REPO_ROOT / ".build" / "dist"
    dist.mkdir(parents=True, exist_ok=True)
    galaxy = str(VENV_BIN / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--force", "--output-path", str(dist), str(REPO_ROOT)], check=True, capture_output=True)
    tarball = sorted(dist.glob("aicr-runtime-*.tar.gz"))[-1]
    subprocess.run([galaxy, "collection", "install", "--force", "-p", str(COLLECTIONS), str(tarball)], check=True, capture_output=True)


@pytest.fixture(scope="session")
def installed_collection():
    # pytest-xdist's workers are sessions of their own, all using .build/collections: one builds (under the lock) and
    # notes the run's id; the others wait for it and use that build (a second build would replace files in use)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    built_for = REPO_ROOT / ".build" / "collection.run"
    built_for.parent.mkdir(parents=True, exist_ok=True)
    with open(str(REPO_ROOT / ".build" / "collection.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = run_id is not None and built_for.is_file() and built_for.read_text(encoding="utf-8") == run_id
        if not done and (os.environ.get("AICR_REBUILD_COLLECTION") == "1" or not (INSTALLED / "MANIFEST.json").is_file()):
            _install_collection()
            built_for.write_text(run_id or "", encoding="utf-8")
    return INSTALLED


class PlaybookRun:
    """The outcome of one ansible-playbook run: rc, status, and every task's result."""

    def __init__(self, runner):
        self.rc = runner.rc
        self.status = runner.status
        self.stdout = runner.stdout.read()
        self.events = list(runner.events)

    def results(self, task_name):
        """Results (``res`` dicts) of every run of the task with this name, in order."""
        found = []
        for event in self.events:
            data = event.get("event_data", {})
            if event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped") and data.get("task") == task_name:
                found.append(data.get("res", {}))
        return found

    def result(self, task_name):
        matches = self.results(task_name)
        assert matches, "task %r did not run; output:\n%s" % (task_name, self.stdout[-4000:])
        return matches[-1]

    @property
    def failed_tasks(self):
        return [e["event_data"].get("task") for e in self.events if e.get("event") == "runner_on_failed"]

    @property
    def changed_tasks(self):
        return [
            e["event_data"].get("task")
            for e in self.events
            if e.get("event") == "runner_on_ok" and e["event_data"].get("res", {}).get("changed")
        ]


def _playbook_runner(directory):
    """Run a playbook (a path, or a name under tests/integration/playbooks) with ansible-runner, its private data
    directories under ``directory``."""

    def run(playbook, extravars=None, inventory=None, check=False, diff=False, envvars=None, limit=None):
        playbook = Path(playbook)
        if not playbook.is_absolute():
            playbook = PLAYBOOKS / playbook
        private_dir = Path(tempfile.mkdtemp(prefix="runner-", dir=str(directory)))
        cmdline = []
        if check:
            cmdline.append("--check")
        if diff:
            cmdline.append("--diff")
        env = {
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "PATH": "%s:%s" % (VENV_BIN, os.environ.get("PATH", "")),
        }
        if os.environ.get("AICR_SHARED"):
            env["AICR_SHARED"] = os.environ["AICR_SHARED"]
        env.update(envvars or {})
        runner = ansible_runner.run(
            private_data_dir=str(private_dir),
            playbook=str(playbook),
            inventory=inventory or "localhost ansible_connection=local",
            extravars=extravars or {},
            envvars=env,
            cmdline=" ".join(cmdline) or None,
            limit=limit,
            quiet=True,
        )
        return PlaybookRun(runner)

    return run


@pytest.fixture
def run_playbook(installed_collection, tmp_path):  # pylint: disable=unused-argument
    """Run a playbook (a path, or a name under tests/integration/playbooks) with ansible-runner."""
    return _playbook_runner(tmp_path)


@pytest.fixture(scope="module")
def run_playbook_module(installed_collection, tmp_path_factory):  # pylint: disable=unused-argument
    """``run_playbook`` for module-scoped fixtures (a few playbooks whose results many tests read)."""
    return _playbook_runner(tmp_path_factory.mktemp("runner"))


@pytest.fixture(scope="session")
def scratch_dir():
    path = Path(tempfile.mkdtemp(prefix="aicr-it-"))
    yield path
    shutil.rmtree(str(path), ignore_errors=True)


@pytest.fixture
def fabric_nodes(kube):
    """Two fake nodes of the test's own backed by fabric machines (``lab_support.FabricNodes``), deleted afterwards."""
    nodes = FabricNodes(kube)
    yield nodes
    nodes.close()
