"""Build the control plane's binaries from Go modules, once per machine, into a cache outside the clone.

Three Go modules under ``tests/controlplane`` pin what is built (their ``go.mod``/``go.sum`` are the
only place a version is written):

    kubernetes/  kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (k8s.io/kubernetes)
    etcd/        etcd (go.etcd.io/etcd/server/v3)
    kwok/        kwok (sigs.k8s.io/kwok): fake nodes and pod status

Target groups: ``controlplane`` (the three modules above, what the lab runs; the default) and
``peers`` (``tests/peers``: the tools the benchmarks compare the collection with, built only when a
bench asks for them with ``ensure_binaries(groups=["peers"])``):

    peers/helmfile/  helmfile (github.com/helmfile/helmfile), run with the venv's real helm binary

Binaries go to ``$AICR_CACHE_DIR`` (default ``~/.cache/aicr-runtime``)
``/<group>/<module>-<version>/``, next to a stamp holding the digest of the module's
``go.mod`` + ``go.sum`` and the Go version: a later run with the same stamp reuses them, so only a
fresh machine (or a version change) builds. Module downloads and Go's build cache stay in Go's own
caches (``GOMODCACHE``, ``GOCACHE``), also outside the clone. A file lock serialises concurrent
builds (``make unit`` and ``make demo`` started together build once).

    python -m aicr_lab.controlplane.build            # build what is missing, print the binaries (JSON)
    python -m aicr_lab.controlplane.build peers      # the same for another group (or several)
"""

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from aicr_lab import guard

MODULES_DIR = Path(__file__).resolve().parents[3] / "controlplane"
PEERS_DIR = Path(__file__).resolve().parents[3] / "peers"

# module directory -> (the Go module whose version names the cache, {binary: package})
TARGETS = {
    "kubernetes": ("k8s.io/kubernetes", {
        "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
        "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
        "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
        "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    }),
    "etcd": ("go.etcd.io/etcd/server/v3", {"etcd": "."}),
    "kwok": ("sigs.k8s.io/kwok", {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}),
}
# the peers group: tests/peers/<module directory>, same shape as TARGETS
PEER_TARGETS = {
    "helmfile": ("github.com/helmfile/helmfile", {"helmfile": "github.com/helmfile/helmfile"}),
}
# group -> (directory of its Go modules, its targets); "controlplane" is what the lab runs
GROUPS = {
    "controlplane": (MODULES_DIR, TARGETS),
    "peers": (PEERS_DIR, PEER_TARGETS),
}
DEFAULT_GROUPS = ("controlplane",)
PROGRESS_SECONDS = 30


class BuildError(RuntimeError):
    """Go is missing, or a module did not build."""


def _group(group):
    if group not in GROUPS:
        raise BuildError("unknown build group %r (known: %s)" % (group, ", ".join(sorted(GROUPS))))
    return GROUPS[group]


def cache_root(group="controlplane"):
    _group(group)
    configured = os.environ.get("AICR_CACHE_DIR")
    base = Path(configured) if configured else Path(os.path.expanduser("~")) / ".cache" / "aicr-runtime"
    return base / group


def _module_dir_path(module_dir, group):
    return _group(group)[0] / module_dir


def module_version(module_dir, module_path, group="controlplane"):
    """The version ``go.mod`` in ``module_dir`` (of ``group``) requires of ``module_path``."""
    path = _module_dir_path(module_dir, group)
    text = (path / "go.mod").read_text(encoding="utf-8")
    match = re.search(r"^\s*(?:require\s+)?%s\s+(v\S+)" % re.escape(module_path), text, re.MULTILINE)
    if not match:
        raise BuildError("tests/%s/%s/go.mod does not require %s" % (path.parent.name, module_dir, module_path))
    return match.group(1)


def kubernetes_version():
    return module_version("kubernetes", "k8s.io/kubernetes")


def _ldflags(module_dir, group="controlplane"):
    flags = ["-s", "-w"]
    if group == "peers" and module_dir == "helmfile":
        # `helmfile version` answers what go.szostok.io/version was told at link time (helmfile's own Makefile)
        flags.append("-X go.szostok.io/version.version=%s" % module_version("helmfile", "github.com/helmfile/helmfile", group))
    if group == "controlplane" and module_dir == "kubernetes":
        # /version answers what component-base was told at link time; helm and kubectl compare it
        # with charts' kubeVersion constraints, so it must be the real release.
        version = kubernetes_version()
        major, minor = version.lstrip("v").split(".")[:2]
        for key, value in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean")):
            flags.append("-X k8s.io/component-base/version.%s=%s" % (key, value))
            flags.append("-X k8s.io/client-go/pkg/version.%s=%s" % (key, value))
    return " ".join(flags)


def _go():
    for candidate in (os.environ.get("GO"), "go", "/usr/local/go/bin/go"):
        if not candidate:
            continue
        try:
            out = subprocess.run([candidate, "version"], capture_output=True, text=True, check=True).stdout.strip()
            return candidate, out
        except (OSError, subprocess.CalledProcessError):
            continue
    raise BuildError("Go is needed to build the control plane (go 1.26 or newer on PATH, or $GO)")


def _stamp(module_dir, go_version, group="controlplane"):
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((_module_dir_path(module_dir, group) / name).read_bytes())
    digest.update(go_version.encode())
    digest.update(_ldflags(module_dir, group).encode())
    return digest.hexdigest()


def binary_dir(module_dir, group="controlplane"):
    module_path, _binaries = _group(group)[1][module_dir]
    return cache_root(group) / ("%s-%s" % (module_dir, module_version(module_dir, module_path, group)))


def _heartbeat(label, done, log):
    started = time.monotonic()
    while not done.wait(PROGRESS_SECONDS):
        log("  … still building %s (%d s)" % (label, time.monotonic() - started))


def _build_module(module_dir, go, go_version, log, group="controlplane"):
    target = binary_dir(module_dir, group)
    stamp_file = target / ".stamp"
    _module_path, binaries = _group(group)[1][module_dir]
    source = _module_dir_path(module_dir, group)
    where = "tests/%s/%s" % (source.parent.name, module_dir)
    stamp = _stamp(module_dir, go_version, group)
    if stamp_file.is_file() and stamp_file.read_text(encoding="utf-8") == stamp and all((target / b).is_file() for b in binaries):
        return target, False
    target.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -trimpath", GOTOOLCHAIN="local")
    label = "%s (%s)" % (", ".join(binaries), target.name)
    log("building %s from Go modules; a fresh machine takes several minutes" % label)
    started = time.monotonic()
    done = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(label, done, log), daemon=True)
    beat.start()
    try:
        argv = [go, "build", "-ldflags", _ldflags(module_dir, group), "-o", str(target) + os.sep] + list(binaries.values())
        result = subprocess.run(argv, cwd=str(source), env=env, capture_output=True, text=True, check=False)
    finally:
        done.set()
    if result.returncode != 0:
        raise BuildError("go build in %s failed:\n%s" % (where, (result.stderr or result.stdout)[-4000:]))
    if group == "controlplane" and module_dir == "etcd":
        # `go build .` names the binary after the module's last path element
        built = target / "etcd"
        if not built.is_file():
            raise BuildError("go build in tests/controlplane/etcd did not produce %s" % built)
    stamp_file.write_text(stamp, encoding="utf-8")
    log("built %s in %.0f s" % (label, time.monotonic() - started))
    return target, True


def ensure_binaries(log=None, groups=DEFAULT_GROUPS):
    """Build whatever is missing or stale in ``groups`` (default: the control plane); return ``{binary name: absolute path}``."""
    guard.check("build or find the lab's binaries")
    log = log or (lambda line: sys.stderr.write(line + "\n"))
    for group in groups:
        _group(group)
    go, go_version = _go()
    paths = {}
    for group in groups:
        root = cache_root(group)
        root.mkdir(parents=True, exist_ok=True)
        with open(root / ".lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for module_dir, (_module_path, binaries) in _group(group)[1].items():
                target, _built = _build_module(module_dir, go, go_version, log, group)
                for name in binaries:
                    paths[name] = str(target / name)
    return paths


def link(binaries, directory, names):
    """Symlink some binaries into ``directory`` (e.g. kubectl into the venv's bin); return the links."""
    os.makedirs(directory, exist_ok=True)
    links = []
    for name in names:
        link_path = os.path.join(directory, name)
        if os.path.islink(link_path) and os.readlink(link_path) == binaries[name]:
            links.append(link_path)
            continue
        if os.path.lexists(link_path):
            os.unlink(link_path)
        os.symlink(binaries[name], link_path)
        links.append(link_path)
    return links


def versions(group="controlplane"):
    """``{"kubernetes": "v1.37.2", "etcd": ..., "kwok": ...}`` as pinned by the go.mod files (``peers``: ``{"helmfile": ...}``)."""
    return {module_dir: module_version(module_dir, module_path, group) for module_dir, (module_path, _b) in _group(group)[1].items()}


def main(argv=None):
    groups = tuple((sys.argv[1:] if argv is None else argv) or DEFAULT_GROUPS)
    try:
        paths = ensure_binaries(groups=groups)
        pinned = {}
        for group in groups:
            pinned.update(versions(group))
    except BuildError as exc:
        sys.stderr.write("aicr-lab build: %s\n" % exc)
        return 1
    print(json.dumps({"versions": pinned, "binaries": paths}, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
