"""Provide the kubernetes.core collection without Galaxy: extracted from PyPI's ``ansible`` wheel.

Galaxy is not reachable from this network, but the ``ansible`` community package on PyPI
bundles kubernetes.core.  This downloads that one wheel (``pip download --no-deps``, so
nothing of ``ansible`` is installed), checks it against the sha256 pinned below, and
extracts only ``ansible_collections/kubernetes/core/`` into a project-local collections
path, checking every extracted file against the collection's own ``FILES.json``.

    python tests/integration/fidelity/kubernetes_core.py --dest .build/deps-collections

then ``ANSIBLE_COLLECTIONS_PATH=.build/collections:.build/deps-collections``.
Idempotent: an existing extraction from the same pinned wheel is kept as is.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CACHE = REPO_ROOT / ".cache" / "kubernetes-core"
DEFAULT_DEST = REPO_ROOT / ".build" / "deps-collections"

# kubernetes.core 6.6.0 (in ansible 14.5.0) is the first we found whose helm module works with
# helm 4 (6.2.0, in ansible 12.x for ansible-core 2.19, runs `helm list --all`, which helm 4
# removed).  It declares requires_ansible >=2.16, so it runs on our ansible-core 2.19 pin; the
# wheel itself wants Python >= 3.12, hence --python-version for the download (nothing is installed).
REQUIREMENT = "ansible==14.5.0"
WHEEL = "ansible-14.5.0-py3-none-any.whl"
WHEEL_SHA256 = "245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84"
COLLECTION_VERSION = "6.6.0"
WHEEL_PYTHON = "3.12"
PREFIX = "ansible_collections/kubernetes/core/"
MARKER = ".aicr-source"


class ExtractError(Exception):
    """Download, checksum or layout problem."""


def sha256_of(path):
    digest = hashlib.sha256()
    with open(str(path), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def collection_dir(dest):
    return Path(dest) / "ansible_collections" / "kubernetes" / "core"


def is_current(dest):
    marker = collection_dir(dest) / MARKER
    return marker.is_file() and marker.read_text().strip() == "%s %s" % (REQUIREMENT, WHEEL_SHA256)


def fetch_wheel(cache):
    cache = Path(cache)
    wheel = cache / WHEEL
    if wheel.is_file() and sha256_of(wheel) == WHEEL_SHA256:
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps", "--only-binary", ":all:",
           "--python-version", WHEEL_PYTHON, "--dest", str(cache), REQUIREMENT]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if result.returncode != 0:
        raise ExtractError("pip download %s failed (exit %d): %s" % (REQUIREMENT, result.returncode, result.stdout.strip()[-2000:]))
    if not wheel.is_file():
        raise ExtractError("pip download %s did not produce %s" % (REQUIREMENT, WHEEL))
    actual = sha256_of(wheel)
    if actual != WHEEL_SHA256:
        raise ExtractError("checksum mismatch for %s: sha256 %s, pinned %s" % (wheel, actual, WHEEL_SHA256))
    return wheel


def extract(wheel, target):
    """Extract kubernetes.core from the wheel into target (a fresh directory); verify against FILES.json."""
    target = Path(target)
    with zipfile.ZipFile(str(wheel)) as archive:
        members = [m for m in archive.infolist() if m.filename.startswith(PREFIX) and not m.is_dir()]
        if not members:
            raise ExtractError("%s holds no %s" % (wheel, PREFIX))
        files = json.loads(archive.read(PREFIX + "FILES.json").decode())
        manifest = json.loads(archive.read(PREFIX + "MANIFEST.json").decode())
        version = manifest["collection_info"]["version"]
        if version != COLLECTION_VERSION:
            raise ExtractError("%s bundles kubernetes.core %s, expected %s" % (WHEEL, version, COLLECTION_VERSION))
        if hashlib.sha256(archive.read(PREFIX + "FILES.json")).hexdigest() != manifest["file_manifest_file"]["chksum_sha256"]:
            raise ExtractError("FILES.json does not match the checksum in MANIFEST.json")
        expected = {f["name"]: f["chksum_sha256"] for f in files["files"] if f["ftype"] == "file"}
        for member in members:
            relative = member.filename[len(PREFIX):]
            if relative.startswith("/") or ".." in relative.split("/"):
                raise ExtractError("unsafe member %s" % member.filename)
            data = archive.read(member)
            if relative not in ("FILES.json", "MANIFEST.json"):
                if relative not in expected:
                    raise ExtractError("%s is not listed in the collection's FILES.json" % relative)
                if hashlib.sha256(data).hexdigest() != expected[relative]:
                    raise ExtractError("checksum mismatch for kubernetes.core %s" % relative)
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    (target / MARKER).write_text("%s %s\n" % (REQUIREMENT, WHEEL_SHA256))
    return len(members)


def ensure(dest=DEFAULT_DEST, cache=DEFAULT_CACHE):
    """Make ``dest/ansible_collections/kubernetes/core`` the pinned kubernetes.core; return the collections root."""
    dest = Path(dest)
    if is_current(dest):
        return dest
    wheel = fetch_wheel(cache)
    final = collection_dir(dest)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".core-", dir=str(final.parent)))
    try:
        extract(wheel, staging)
        if final.exists():
            shutil.rmtree(str(final))
        os.replace(str(staging), str(final))
    finally:
        if staging.exists():
            shutil.rmtree(str(staging), ignore_errors=True)
    return dest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dest", default=str(DEFAULT_DEST), help="collections root (default: %(default)s)")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="download cache (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        root = ensure(args.dest, args.cache)
    except ExtractError as exc:
        sys.stderr.write("kubernetes_core: error: %s\n" % exc)
        return 2
    print("kubernetes.core %s in %s" % (COLLECTION_VERSION, collection_dir(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
