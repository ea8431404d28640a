"""Locate and run the real helm binary (installed by scripts/install-helm) with an isolated home."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from aicr_lab import guard


class HelmError(RuntimeError):
    """helm exited non-zero; the message carries the argv and helm's own output."""

    def __init__(self, argv, returncode, output):
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        super().__init__("%s exited %d: %s" % (" ".join(str(a) for a in argv), returncode, output.strip()[-3000:]))


def find_binary(name="helm"):
    """Path of helm/helm3/helm4/kubectl: $AICR_<NAME>, then beside this Python (the venv), then PATH."""
    guard.check("find the %s binary" % name)
    override = os.environ.get("AICR_%s" % name.upper())
    if override:
        return override
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(str(beside), os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError("%s not found beside %s nor on PATH; run `make helm` (scripts/install-helm --dest .venv/bin)" % (name, sys.executable))
    return found


def isolated_env(home, base=None):
    """Environment that keeps helm's config, cache, data and registry credentials under ``home``."""
    home = Path(home)
    env = dict(os.environ if base is None else base)
    for var, sub in (("HELM_CONFIG_HOME", "config"), ("HELM_CACHE_HOME", "cache"), ("HELM_DATA_HOME", "data")):
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    env["HELM_REGISTRY_CONFIG"] = str(home / "config" / "registry.json")
    env["HELM_REPOSITORY_CONFIG"] = str(home / "config" / "repositories.yaml")
    env["HELM_REPOSITORY_CACHE"] = str(home / "cache" / "repository")
    return env


def run_helm(args, helm=None, env=None, timeout=300, cwd=None):
    """Run helm with an argv list; return stdout, raise HelmError on a non-zero exit."""
    argv = [helm or find_binary("helm")] + [str(a) for a in args]
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=timeout, cwd=cwd, check=False)
    if result.returncode != 0:
        raise HelmError(argv, result.returncode, result.stderr + result.stdout)
    return result.stdout
