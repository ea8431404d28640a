"""Bombs (issue 35/36): each refused in under 1 s and 50 MB, measured here and never in a unit test.

``run()`` returns, for each bomb, measured in a child process of its own that imports the engines and reads the bomb:
``wall_seconds`` (the read, from the input file to the refusal), ``process_wall_seconds`` (the whole child, interpreter
start included), ``peak_rss_mb`` (the child's own ``ru_maxrss``: interpreter and imports included), whether it was
refused and the line it was refused with:
- ``alias_bomb``: nine levels of nine aliases (9**9 = 387 420 489 nodes once expanded) read by ``_common.deps.load``;
- ``gzip_bomb_secret``: a helm release Secret whose gzip is about 710 KiB and inflates to about 714 MiB, decoded by
  ``_helm.storage.decode_release_secret``;
- ``chart_huge_member``: a chart archive whose ``values.yaml`` is 512 MiB of one byte (a 2.3 MB archive),
  read by ``_helm.helm.chart_schema_and_defaults`` and ``_schema.sources.load_tgz``;
- ``deep_nesting``: 100 000 nested flow sequences (200 KB), which overflow libyaml's C stack when composed;
``acceptance`` holds the bounds (``wall_seconds < 1``, ``peak_rss_mb < 50``) and ``all_within`` whether every bomb met them.
"""

import base64
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV_ROOT = REPO_ROOT / ".build" / "dev"
WALL_LIMIT = 1.0
RSS_LIMIT_MB = 50.0
SECRET_GZIP_BYTES = 707 * 1024
MIB = 1024 * 1024

CHILD = r"""
import json, resource, sys, time
kind, path, baseline = sys.argv[1], sys.argv[2], sys.argv[3] == "baseline"
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
if kind == "yaml":
    from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
elif kind in ("secret", "chart"):
    from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
    from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import decode_release_secret
else:
    from ansible_collections.aicr.runtime.plugins.module_utils._schema import sources
began = time.perf_counter()


def figures(**more):
    more.update(wall_seconds=round(time.perf_counter() - began, 3), peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1))
    return json.dumps(more)


try:
    if baseline:
        pass
    elif kind == "yaml":
        with open(path) as handle:
            deps.load(handle.read(), path)
    elif kind == "secret":
        with open(path) as handle:
            decode_release_secret(json.load(handle))
    elif kind == "chart":
        helm.chart_schema_and_defaults(path)
    else:
        sources.load_tgz(path)
    print(figures(refused=False))
except AicrError as exc:
    print(figures(refused=True, message=exc.msg))
"""


def _expose_collection():
    link = DEV_ROOT / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        except FileExistsError:
            pass


def alias_bomb(levels=9, width=9):
    lines = ["a0: &a0 [%s]" % ", ".join(["lol"] * width)]
    for level in range(1, levels):
        lines.append("a%d: &a%d [%s]" % (level, level, ", ".join(["*a%d" % (level - 1)] * width)))
    return "\n".join(lines) + "\n"


def gzip_bomb(target_bytes):
    """A gzip stream of about ``target_bytes`` that inflates to a JSON string of zeros ~1000 times larger, built in chunks."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [deflater.compress(b'{"name": "web", "manifest": "')]
    zeros = b"0" * MIB
    size, inflated = 0, 0
    while size < target_bytes:
        piece = deflater.compress(zeros)
        out.append(piece)
        size += len(piece)
        inflated += len(zeros)
    out.append(deflater.compress(b'"}'))
    out.append(deflater.flush())
    return b"".join(out), inflated


class _Zeros(object):
    def __init__(self, size):
        self.left = size

    def read(self, size=-1):
        size = self.left if size is None or size < 0 else min(size, self.left)
        self.left -= size
        return b"0" * size


def chart_with_huge_member(path, member_bytes):
    with tarfile.open(str(path), "w:gz", compresslevel=1) as archive:
        chart = b"apiVersion: v2\nname: demo\nversion: 1.0.0\n"
        info = tarfile.TarInfo("demo/Chart.yaml")
        info.size = len(chart)
        archive.addfile(info, io.BytesIO(chart))
        info = tarfile.TarInfo("demo/values.yaml")
        info.size = member_bytes
        archive.addfile(info, _Zeros(member_bytes))


def _child(kind, path, mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DEV_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), mode], capture_output=True, env=env, timeout=600, check=False)
    figures = {"process_wall_seconds": round(time.perf_counter() - began, 3), "returncode": done.returncode}
    try:
        figures.update(json.loads(done.stdout.decode("utf-8").strip().splitlines()[-1]))
    except (ValueError, IndexError):
        figures["stderr"] = done.stderr.decode("utf-8", "replace")[-300:]
    return figures


def measure(kind, path):
    """One child process reading one input: its own time for the read (``wall_seconds``), the whole child's
    (``process_wall_seconds``, interpreter start included), its peak RSS (``ru_maxrss``: interpreter and imports
    included), and ``added_rss_mb`` over the same child that imports the same engines and reads nothing."""
    figures = _child(kind, path, "read")
    base = _child(kind, path, "baseline")
    figures["baseline_rss_mb"] = base.get("peak_rss_mb")
    if "peak_rss_mb" in figures and "peak_rss_mb" in base:
        figures["added_rss_mb"] = round(figures["peak_rss_mb"] - base["peak_rss_mb"], 1)
    return figures


def run():
    _expose_collection()
    tmp = Path(tempfile.mkdtemp(prefix="aicr-bench-bombs-"))
    try:
        (tmp / "bomb.yaml").write_text(alias_bomb())
        (tmp / "deep.yaml").write_text("[" * 100000 + "]" * 100000)
        gz, inflated = gzip_bomb(SECRET_GZIP_BYTES)
        secret = {"metadata": {"name": "sh.helm.release.v1.web.v1", "namespace": "apps", "labels": {"owner": "helm", "name": "web"}},
                  "data": {"release": base64.b64encode(base64.b64encode(gz)).decode("ascii")}}
        (tmp / "secret.json").write_text(json.dumps(secret))
        chart_with_huge_member(tmp / "demo-1.0.0.tgz", 512 * MIB)
        cases = {
            "alias_bomb": dict(measure("yaml", tmp / "bomb.yaml"), input_bytes=(tmp / "bomb.yaml").stat().st_size, expanded_nodes=9 ** 9),
            "gzip_bomb_secret": dict(measure("secret", tmp / "secret.json"), gzip_bytes=len(gz), inflates_to_bytes=inflated,
                                     secret_data_bytes=len(secret["data"]["release"])),
            "chart_huge_member": dict(measure("chart", tmp / "demo-1.0.0.tgz"), archive_bytes=(tmp / "demo-1.0.0.tgz").stat().st_size,
                                      member_bytes=512 * MIB),
            "chart_huge_member_values_schema": measure("chart_values_schema", tmp / "demo-1.0.0.tgz"),
            "deep_nesting": dict(measure("yaml", tmp / "deep.yaml"), depth=100000),
        }
    finally:
        for child in tmp.iterdir():
            child.unlink()
        tmp.rmdir()
    within = all(case.get("refused") and case["wall_seconds"] < WALL_LIMIT and case["peak_rss_mb"] < RSS_LIMIT_MB for case in cases.values())
    return {"cases": cases, "acceptance": {"wall_seconds_lt": WALL_LIMIT, "peak_rss_mb_lt": RSS_LIMIT_MB, "refused": True}, "all_within": within}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, sort_keys=True))
