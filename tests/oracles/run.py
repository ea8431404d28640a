#!/usr/bin/env python
"""`make oracles`: regenerate the goldens in tests/oracles/golden from the real peer tools.

The peers are built outside the clone from their public sources (never committed, nor any script that builds
them); this script only *runs* binaries that already exist and writes what they answer as data, with its
provenance. Each tool is optional: it is looked for in its environment variable, then in the default build
location under ``~/.cache/aicr-runtime/peers``; a tool that is not found is reported (with where it was looked
for) and its goldens are left as they are. The unit tests check the engines against the committed goldens
without any peer.

Usage: ``make oracles`` (every tool found), ``make oracles ORACLES=aicr`` (only those named),
``python tests/oracles/run.py --list`` (where each tool is looked for; nothing is run).
Exit status: 0 when every tool that was found regenerated its goldens (also when none was found: the message
says which are missing), 1 when a generator failed, 2 for a bad argument; ``--strict`` makes a missing tool an
error too.
"""

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN = HERE / "golden"
PEERS = Path(os.environ.get("AICR_PEERS_DIR") or Path.home() / ".cache" / "aicr-runtime" / "peers")


class Tool(object):
    """One peer: its name, the environment variable naming its binary, its default build path, its generator."""

    def __init__(self, name, env, default, module, what):
        self.name, self.env, self.default, self.module, self.what = name, env, default, module, what

    def candidates(self):
        out = []
        if os.environ.get(self.env):
            out.append(("$%s" % self.env, Path(os.environ[self.env]).expanduser()))
        out.append(("default", PEERS / self.default))
        return out

    def locate(self):
        for _source, path in self.candidates():
            if path.is_file() and os.access(str(path), os.X_OK):
                return path
        return None

    def how(self):
        where = ", then ".join("%s (%s)" % (path, source) for source, path in self.candidates())
        if not os.environ.get(self.env):
            where = "$%s (not set), then %s" % (self.env, where)
        return where


# Every peer whose answers are goldens. A generator module exposes ``generate(binary, golden_dir, log) -> dict``.
TOOLS = (
    Tool("aicr", "AICR_ORACLE_AICR", "aicr-v0.19.0/aicr", "oracle_aicr.py",
         "the AICR CLI v0.19.0 (github:tjrasche/aicr @ f1f63463f7fae6dea608c89f92975b0dbc27c59c, ./cmd/aicr)"),
    Tool("aicr-bundle", "AICR_ORACLE_AICR", "aicr-v0.19.0/aicr", "oracle_aicr_bundle.py",
         "the AICR CLI v0.19.0's `aicr bundle` (helm deployer): node scheduling in each component's values"),
)


def _load(filename):
    spec = importlib.util.spec_from_file_location(Path(filename).stem, str(HERE / filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def log(msg):
    print("oracles: %s" % msg, file=sys.stderr, flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tools", nargs="*", help="only these tools (default: every tool found): %s" % ", ".join(t.name for t in TOOLS))
    parser.add_argument("--list", action="store_true", help="say where each tool is looked for and whether it is there; run nothing")
    parser.add_argument("--strict", action="store_true", help="a missing tool is an error")
    args = parser.parse_args(argv[1:])
    names = set(t.name for t in TOOLS)
    unknown = sorted(set(args.tools) - names)
    if unknown:
        parser.error("unknown tool %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(names))))
    chosen = [t for t in TOOLS if not args.tools or t.name in args.tools]
    report = {"tools": {}}
    missing = []
    for tool in chosen:
        binary = tool.locate()
        if binary is None:
            missing.append(tool)
            report["tools"][tool.name] = {"status": "missing", "looked_in": tool.how(), "what": tool.what}
            continue
        if args.list:
            report["tools"][tool.name] = {"status": "found", "binary": str(binary), "what": tool.what}
            continue
        log("%s: %s" % (tool.name, binary))
        began = time.time()
        try:
            summary = _load(tool.module).generate(binary, GOLDEN, log)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            report["tools"][tool.name] = {"status": "failed", "error": "%s: %s" % (type(exc).__name__, exc)}
            continue
        summary["status"] = "regenerated"
        summary["wall_s"] = round(time.time() - began, 1)
        report["tools"][tool.name] = summary
    for tool in missing:
        log("missing: %s - %s; looked in %s. Build it outside the clone (see docs/modules/recipe_resolve.md, "
            "Conformance) and set %s." % (tool.name, tool.what, tool.how(), tool.env))
    print(json.dumps(report, indent=2, sort_keys=True))
    if any(t.get("status") == "failed" for t in report["tools"].values()):
        return 1
    return 1 if (missing and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
