#!/usr/bin/env python
"""Goldens from the real peers of values_schema (issue #38): crdify's verdicts on CRD pairs, and the JSON Schemas
losisin/helm-values-schema-json and dadav/helm-schema generate for every corpus chart.

    make oracles-schema            # or: .venv/bin/python tests/oracles/schema_peers.py [crdify losisin dadav]

Each peer is optional. It is looked for, in order, at the path in its environment variable (``AICR_PEER_CRDIFY``,
``AICR_PEER_LOSISIN``, ``AICR_PEER_DADAV``) and at ``~/.cache/aicr-runtime/peers/<tool>-<rev>/<binary>``; a missing
peer is reported (which one, and where it was looked for) and its golden is left as it is. The peers are built
outside this repository from their public sources (docs/modules/values_schema.md, "The real peers as oracles");
nothing of theirs is committed here but their output, in ``tests/golden/schema/``, with its provenance (tool, commit,
command, date).

Goldens are compact: crdify's findings per pair, normalised (``schema_cases.crdify_findings``); per chart, the type
set of every property of the generated schema (``schema_cases.type_tree``) and the sha256 of the whole output.
A golden's date changes only when its content does.
"""

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN_DIR = REPO / "tests" / "golden" / "schema"
SHARED = Path(os.environ.get("AICR_SHARED") or REPO.parent / "shared")
PEER_HOME = Path(os.environ.get("AICR_PEERS_DIR") or Path.home() / ".cache" / "aicr-runtime" / "peers")
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "bench"))
import bench_schema  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import  # exposes the repository as the collection
import schema_cases  # noqa: E402  pylint: disable=wrong-import-position

PEERS = {
    "crdify": {"env": "AICR_PEER_CRDIFY", "source": "github:kubernetes-sigs/crdify", "rev": "v0.5.0",
               "commit": "69e65223aee06a450f77870eb7cdc8cf8ebfe611", "dir": "crdify-v0.5.0", "binary": "crdify", "build": "go build ."},
    "losisin": {"env": "AICR_PEER_LOSISIN", "source": "github:losisin/helm-values-schema-json", "rev": "v2.5.0",
                "commit": "8cda3afd59c3a92783f752ec8e49bc57fb07feb4", "dir": "helm-values-schema-json-v2.5.0",
                "binary": "helm-values-schema-json", "build": "go build ."},
    "dadav": {"env": "AICR_PEER_DADAV", "source": "github:dadav/helm-schema", "rev": "0.23.4",
              "commit": "7b1b46e5de83884053aca8edec6e0d193a41f842", "dir": "helm-schema-0.23.4", "binary": "helm-schema",
              "build": "go build ./cmd/helm-schema"},
}
COMMANDS = {
    "crdify": "crdify -o json file://old.json file://new.json  (each CRD written as JSON, which crdify reads as YAML)",
    "losisin": "helm-values-schema-json -f values.yaml -o values.schema.json  (in a directory holding only the chart's values.yaml: "
               "no .schema.yaml, no --bundle, so no $ref is fetched)",
    "dadav": "helm-schema -c . -n -o values.schema.json -l error  (in a directory holding only the chart's Chart.yaml and values.yaml)",
}


def golden_path(tool):
    return GOLDEN_DIR / ("%s.json" % tool)


def find(tool):
    """(binary path or None, how it was looked for)."""
    peer = PEERS[tool]
    given = os.environ.get(peer["env"])
    default = PEER_HOME / peer["dir"] / peer["binary"]
    looked = "$%s (%s), then %s" % (peer["env"], given or "unset", default)
    for candidate in ([given] if given else []) + [str(default)]:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, looked
    return None, looked


def missing_message(tool, looked):
    peer = PEERS[tool]
    return "%s: missing: looked at %s; build %s@%s outside the clone (%s) or point %s at a binary" % (
        tool, looked, peer["source"], peer["rev"], peer["build"], peer["env"])


def commit_of(binary, tool):
    """The commit the binary was built from: a COMMIT file beside it (the build writes one), else the pinned one."""
    marker = Path(binary).parent / "COMMIT"
    if marker.is_file():
        return marker.read_text().strip()
    return PEERS[tool]["commit"] or "unknown (no COMMIT file beside %s)" % PEERS[tool]["binary"]


def provenance(tool, binary, extra=None):
    peer = PEERS[tool]
    data = {"tool": tool, "source": peer["source"], "rev": peer["rev"], "commit": commit_of(binary, tool), "command": COMMANDS[tool],
            "built_with": peer["build"] + " (outside this repository; never committed)",
            "generator": "tests/oracles/schema_peers.py"}
    data.update(extra or {})
    return data


def _run(argv, cwd, timeout=300):
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=str(cwd), capture_output=True, text=True, timeout=timeout, check=False,
                          env=dict(os.environ, HOME=str(cwd), NO_COLOR="1"))
    return done, time.perf_counter() - began


# --- crdify ----------------------------------------------------------------------------------------

def run_crdify(binary, old, new, workdir):
    """(exit code, normalised findings, wall seconds) of one crdify process on a pair."""
    Path(workdir, "old.json").write_text(json.dumps(old))
    Path(workdir, "new.json").write_text(json.dumps(new))
    done, seconds = _run([binary, "-o", "json", "file://old.json", "file://new.json"], workdir)
    try:
        report = json.loads(done.stdout or "{}")
    except ValueError:
        raise RuntimeError("crdify gave no JSON (exit %s): %s" % (done.returncode, (done.stderr or done.stdout)[-400:]))
    return done.returncode, schema_cases.crdify_findings(report), seconds


def crdify_golden(binary, pairs):
    entries = {}
    with tempfile.TemporaryDirectory(prefix="aicr-crdify-") as workdir:
        for pair in pairs:
            code, findings, _seconds = run_crdify(binary, pair["old"], pair["new"], workdir)
            entry = {"digest": schema_cases.diff_digest(pair["old"], pair["new"]), "exit": code, "findings": [list(f) for f in findings]}
            if pair.get("path"):
                entry["path"] = pair["path"]
            entries[pair["id"]] = entry
    return entries


# --- the schema generators ----------------------------------------------------------------------

def stage_chart(chart_dir, workdir, with_chart_yaml):
    for stale in Path(workdir).iterdir():
        if stale.is_dir():
            shutil.rmtree(str(stale))
        else:
            stale.unlink()
    shutil.copyfile(str(Path(chart_dir) / "values.yaml"), str(Path(workdir) / "values.yaml"))
    if with_chart_yaml:
        shutil.copyfile(str(Path(chart_dir) / "Chart.yaml"), str(Path(workdir) / "Chart.yaml"))


def generator_argv(tool, binary):
    if tool == "losisin":
        return [binary, "-f", "values.yaml", "-o", "values.schema.json"]
    return [binary, "-c", ".", "-n", "-o", "values.schema.json", "-l", "error"]


def run_generator(tool, binary, chart_dir, workdir):
    """(exit code, schema or None, stderr tail, wall seconds) of one generator process on a chart."""
    stage_chart(chart_dir, workdir, tool == "dadav")
    done, seconds = _run(generator_argv(tool, binary), workdir)
    out = Path(workdir) / "values.schema.json"
    schema = json.loads(out.read_text()) if done.returncode == 0 and out.is_file() else None
    return done.returncode, schema, (done.stderr or "").strip().splitlines()[-1:] if done.returncode else [], seconds


def generator_golden(tool, binary, charts):
    entries = {}
    with tempfile.TemporaryDirectory(prefix="aicr-%s-" % tool) as workdir:
        for chart in charts:
            code, schema, error, _seconds = run_generator(tool, binary, chart, workdir)
            entry = {"exit": code}
            if schema is None:
                entry["error"] = error
            else:
                text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
                entry["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
                entry["types"] = schema_cases.type_tree(schema)
            entries[chart.name] = entry
    return entries


# --- writing -----------------------------------------------------------------------------------

def golden_text(meta, body_key, body):
    """One line per entry, keys sorted, compact: diffs show what changed and nothing else."""
    lines = ['{', '  "provenance": %s,' % json.dumps(meta, sort_keys=True), '  "%s": {' % body_key]
    keys = sorted(body)
    for index, key in enumerate(keys):
        lines.append('    %s: %s%s' % (json.dumps(key), json.dumps(body[key], sort_keys=True, separators=(",", ":")), "," if index < len(keys) - 1 else ""))
    return "\n".join(lines + ['  }', '}', ''])


def write_golden(tool, meta, body_key, body):
    """Write the golden; its date stays when its content does. Returns True when the file changed."""
    path = golden_path(tool)
    old = json.loads(path.read_text()) if path.is_file() else {}
    date = datetime.date.today().isoformat()
    if old.get(body_key) == body and dict(old.get("provenance") or {}, date=None) == dict(meta, date=None):
        date = old["provenance"]["date"]
    text = golden_text(dict(meta, date=date), body_key, body)
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def main(argv):
    wanted = argv[1:] or list(PEERS)
    unknown = [t for t in wanted if t not in PEERS]
    if unknown:
        print("unknown peer(s) %s; known: %s" % (", ".join(unknown), ", ".join(PEERS)), file=sys.stderr)
        return 2
    missing = []
    found = {}
    for tool in wanted:
        binary, looked = find(tool)
        if binary is None:
            missing.append(missing_message(tool, looked))
        else:
            found[tool] = binary
    for line in missing:
        print(line)
    if "crdify" in found:
        pairs = schema_cases.pairs(SHARED)
        body = crdify_golden(found["crdify"], pairs)
        changed = write_golden("crdify", provenance("crdify", found["crdify"], {
            "inputs": "schema_cases.pairs: corpus CRDs (values_schema engine) x mutations, juiceshop versions, ../shared/crd-compat",
            "normalised": "schema_cases.crdify_findings"}), "pairs", body)
        print("crdify: %d pairs, %s %s" % (len(body), "wrote" if changed else "unchanged", golden_path("crdify")))
    charts = schema_cases.corpus_charts(SHARED)
    for tool in ("losisin", "dadav"):
        if tool in found:
            body = generator_golden(tool, found[tool], charts)
            changed = write_golden(tool, provenance(tool, found[tool], {
                "inputs": "every ../shared/values-corpus chart", "reduced_to": "schema_cases.type_tree (every property's type set), "
                                                                               "sha256 of the whole output (canonical JSON)"}),
                                   "charts", body)
            print("%s: %d charts, %s %s" % (tool, len(body), "wrote" if changed else "unchanged", golden_path(tool)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
