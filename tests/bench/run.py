#!/usr/bin/env python
"""`make bench`: run every tests/bench/bench_<area>.py and print one JSON document.

Each bench module exposes ``run() -> dict`` with its figures (and, where the issue
names one, the target it is measured against). A bench that fails is reported
with its error instead of hiding the others' figures; the exit code is then 1.
"""

import importlib.util
import json
import platform
import os
import sys
import time
import traceback
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    only = set(argv[1:])
    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "benchmarks": {},
    }
    failed = False
    for path in sorted(BENCH_DIR.glob("bench_*.py")):
        area = path.stem[len("bench_"):]
        if only and area not in only:
            continue
        began = time.perf_counter()
        try:
            figures = load(path).run()
        except Exception:  # pylint: disable=broad-exception-caught
            failed = True
            figures = {"error": traceback.format_exc(limit=5)}
        figures["bench_wall_seconds"] = round(time.perf_counter() - began, 3)
        report["benchmarks"][area] = figures
        print("bench %s done in %.1fs" % (area, figures["bench_wall_seconds"]), file=sys.stderr)
    print(json.dumps(report, indent=2, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
