"""Helpers of the fidelity suite's tests: a command-line client bound to a kubeconfig, waiting on a condition."""

import json
import subprocess
import sys
from pathlib import Path

import yaml
# imported from here by the fidelity tests
from waiting import wait_until  # noqa: F401  pylint: disable=import-error,unused-import

BIN = Path(sys.executable).parent


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
