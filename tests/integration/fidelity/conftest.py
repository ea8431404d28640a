"""Fixtures of the client fidelity suite: the Kubernetes API emulator driven by real clients only.

helm 3.17.3 / 4.3.1 and kubectl 1.31 (installed by ``make helm``), the ``kubernetes`` Python
client and kubernetes.core.  Every test gets its own emulator (it starts in well under a
second), so no state leaks between tests; chart repositories are shared per session.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aicr_lab.charts.helm import isolated_env
from aicr_lab.charts.pytest_fixture import shared_http_dir, start_chart_repo

BIN = Path(sys.executable).parent
HELMS = ["helm3", "helm4"]
HELM_VERSIONS = {"helm3": "v3.17.3", "helm4": "v4.3.1"}
FIDELITY_DIR = Path(__file__).resolve().parent


class CliError(AssertionError):
    """A client exited with an unexpected status; carries argv, status and output for the report."""


class Cli:
    """A real command-line client bound to one kubeconfig and a private home."""

    def __init__(self, binary, kubeconfig, env):
        self.binary = str(BIN / binary) if "/" not in binary else binary
        self.name = Path(binary).name
        self.kubeconfig = str(kubeconfig)
        self.env = env

    def run(self, *args, check=True, timeout=600, stdin=None):
        argv = [self.binary, "--kubeconfig", self.kubeconfig] + [str(a) for a in args]
        result = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=self.env,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise CliError("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), result.returncode, result.stdout[-4000:], result.stderr[-6000:]))
        return result

    def json(self, *args, **kwargs):
        return json.loads(self.run(*(list(args) + ["-o", "json"]), **kwargs).stdout)

    def yaml(self, *args, **kwargs):
        return yaml.safe_load(self.run(*(list(args) + ["-o", "yaml"]), **kwargs).stdout)


@pytest.fixture
def emulator(tmp_path):
    """A fresh emulated cluster (3 nodes) with a kubeconfig file."""
    from aicr_emulators.kube.pytest_fixture import start_emulator  # pylint: disable=import-outside-toplevel

    handle = start_emulator(tmp_path / "emulator")
    yield handle
    handle.stop()


@pytest.fixture
def client_env(tmp_path):
    """Environment with helm's and kubectl's homes under tmp_path (never ~)."""
    env = isolated_env(tmp_path / "helm-home")
    env["HOME"] = str(tmp_path / "home")
    Path(env["HOME"]).mkdir(exist_ok=True)
    env.pop("KUBECONFIG", None)
    return env


@pytest.fixture
def kubectl(emulator, client_env):
    return Cli("kubectl", emulator.kubeconfig, client_env)


@pytest.fixture(params=HELMS)
def helm(request, emulator, client_env):
    """helm 3 and helm 4, each against its own emulator."""
    return Cli(request.param, emulator.kubeconfig, client_env)


@pytest.fixture
def kube(emulator):
    """An ApiClient of the official Python client, configured from the emulator's kubeconfig."""
    from kubernetes import config  # pylint: disable=import-outside-toplevel

    api = config.new_client_from_config(config_file=str(emulator.kubeconfig))
    yield api
    api.close()


@pytest.fixture(scope="session")
def example_repo(tmp_path_factory):
    """The example charts at ``<url>`` (…/examples)."""
    server = start_chart_repo(tmp_path_factory.mktemp("fidelity-examples"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_repo(tmp_path_factory, shared_dir):
    """``charts-repo/http`` served one repository per slug."""
    server = start_chart_repo(tmp_path_factory.mktemp("fidelity-shared"), charts=["/=%s" % shared_http_dir(shared_dir)], url_prefix="")
    yield server
    server.stop()
