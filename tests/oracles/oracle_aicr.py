"""The AICR CLI v0.19.0 as an oracle for recipe_resolve, the recipe lookup and cluster_facts' fingerprint.

``generate(binary, golden_dir, log)`` asks a built ``aicr`` binary (see docs/modules/recipe_resolve.md,
"Conformance") two sets of questions and writes its answers, with their provenance, to ``golden_dir/aicr``:

* ``criteria.json.gz``: ``aicr recipe [--service S] [--accelerator A] [--intent I] [--os O] [--platform P]
  [--profile N=V] --format json`` for every combination of the catalog's dimension values (``aicr_cases``), each
  value of the configuration profile of every composition that declares one, and a few queries that state
  nothing or only a node count;
* ``snapshots.json.gz``: ``aicr recipe --snapshot snapshot.json [--intent I] --format json`` for every generated
  Snapshot in AICR's shape, each with each intent.

An answer is a RecipeResult (kept once per content digest; a case names its digest) or a refusal: the exit code,
AICR's error code and its message (``[CODE] message`` without the code). The binary reads its embedded catalog,
which is ``../shared/aicr/catalog``'s v0.19.0 ``recipes/`` (its digest is recorded). It runs with an empty HOME,
``KUBECONFIG=/dev/null`` (``recipe`` reads inputs only; nothing may reach a cluster) and ``--log-json`` (the
refusal is read from the ``command failed`` log record).
"""

import datetime
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import aicr_cases  # noqa: E402  pylint: disable=wrong-import-position

REPO = HERE.parents[1]
SHARED = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else REPO.parent / "shared"
CATALOG = SHARED / "aicr" / "catalog"
SOURCE = {"repository": "github:tjrasche/aicr (a public fork carrying NVIDIA/aicr's history)", "version": "v0.19.0",
          "commit": "f1f63463f7fae6dea608c89f92975b0dbc27c59c",
          "build": 'go build -mod=vendor -ldflags "-X github.com/NVIDIA/aicr/pkg/cli.version=v0.19.0" ./cmd/aicr'}
SNAPSHOT_FILE = "snapshot.json"
WORKERS = int(os.environ.get("AICR_ORACLE_WORKERS") or 2)
FLAGS = ("service", "accelerator", "intent", "os", "platform")


def canonical(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(doc):
    return hashlib.sha256(canonical(doc).encode("utf-8")).hexdigest()[:16]


def argv_for(query, profile=None, snapshot=False):
    """The ``aicr`` arguments for one question (after the binary)."""
    argv = ["--log-json", "recipe"]
    for dim in FLAGS:
        if query.get(dim) is not None:
            argv += ["--" + dim, str(query[dim])]
    if query.get("nodes"):
        argv += ["--nodes", str(query["nodes"])]
    if profile:
        argv += ["--profile", profile]
    if snapshot:
        argv += ["--snapshot", SNAPSHOT_FILE]
    return argv + ["--format", "json"]


class Runner(object):
    """Runs the binary in a private working directory per thread, with an environment that reaches nothing."""

    def __init__(self, binary):
        self.binary = str(binary)
        self.root = Path(tempfile.mkdtemp(prefix="aicr-oracle-"))
        self.local = threading.local()

    def _cwd(self):
        if not hasattr(self.local, "cwd"):
            self.local.cwd = Path(tempfile.mkdtemp(dir=str(self.root)))
        return self.local.cwd

    def env(self, cwd):
        return {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "KUBECONFIG": os.devnull, "NO_COLOR": "1", "LANG": "C.UTF-8"}

    def ask(self, argv, snapshot=None):
        """(outcome, result or None): outcome is {"result": digest} or {"exit", "code", "error"}."""
        cwd = self._cwd()
        if snapshot is not None:
            (cwd / SNAPSHOT_FILE).write_text(json.dumps(snapshot, indent=1), encoding="utf-8")
        proc = subprocess.run([self.binary] + argv, cwd=str(cwd), env=self.env(cwd), capture_output=True, check=False, timeout=120)
        if proc.returncode == 0:
            result = json.loads(proc.stdout.decode("utf-8"))
            return {"result": digest(result)}, result
        return refusal(proc.returncode, proc.stderr.decode("utf-8", "replace")), None

    def version(self):
        proc = subprocess.run([self.binary, "--version"], env=self.env(self.root), capture_output=True, check=False)
        return " ".join(proc.stdout.decode("utf-8", "replace").split())


def refusal(exit_code, stderr):
    """The exit code and the error of the ``command failed`` record AICR logs (``[CODE] message``)."""
    error = None
    for line in stderr.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == "command failed":
            error = record.get("error")
    if error is None:
        return {"exit": exit_code, "code": "", "error": stderr.strip()[-2000:]}
    code, message = "", error
    if error.startswith("[") and "] " in error:
        code, message = error[1:error.index("] ")], error[error.index("] ") + 2:]
    return {"exit": exit_code, "code": code, "error": message}


def _load_yaml(path):
    import yaml  # pylint: disable=import-outside-toplevel
    with open(str(path)) as handle:
        return yaml.safe_load(handle)


def profile_values(catalog_dir):
    """{profile name: [values]} of every profile declaration in the catalog's overlays."""
    out = {}
    for path in sorted((Path(catalog_dir) / "overlays").glob("*.yaml")):
        decl = ((_load_yaml(path) or {}).get("spec") or {}).get("profile")
        if isinstance(decl, dict) and decl.get("name"):
            out.setdefault(decl["name"], set()).update((decl.get("values") or {}).keys())
    return dict((name, sorted(values)) for name, values in out.items())


def catalog_digest(catalog_dir):
    """sha256 over the catalog's files (path and content), to see that the goldens and the catalog belong together."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(catalog_dir).rglob("*") if p.is_file()):
        rel = path.relative_to(catalog_dir).as_posix()
        h.update(rel.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


# Queries beyond the combinations: nothing stated, only a node count, a profile where none is declared, a bad one.
EXTRA_CRITERIA = (
    ({}, None), ({"nodes": 4}, None), ({"service": "any"}, None), ({"intent": "any", "nodes": 2}, None),
    ({"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu", "nodes": 16}, None),
    ({"service": "kind", "intent": "training"}, "gpuStack=azure-managed"),
    ({"service": "aks", "accelerator": "h100", "intent": "training"}, "gpuStack=nonexistent"),
    ({"service": "aks", "accelerator": "h100", "intent": "training"}, "nonexistent=value"),
)


def _run_all(runner, jobs, log, label):
    results, outcomes = {}, [None] * len(jobs)
    done = [0]
    lock = threading.Lock()

    def one(index):
        argv, snapshot = jobs[index]
        outcome, result = runner.ask(argv, snapshot)
        with lock:
            outcomes[index] = outcome
            if result is not None:
                results[outcome["result"]] = result
            done[0] += 1
            if done[0] % 500 == 0:
                log("aicr %s: %d/%d" % (label, done[0], len(jobs)))

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(one, range(len(jobs))))
    return results, outcomes


def criteria_golden(runner, log):
    values = aicr_cases.criteria_values(CATALOG, _load_yaml)
    queries = [(q, None) for q in aicr_cases.criteria_space(values)]
    results, outcomes = _run_all(runner, [(argv_for(q, p), None) for q, p in queries], log, "criteria")
    declared = profile_values(CATALOG)
    profiled = []
    for (query, _p), outcome in zip(queries, outcomes):
        selected = (results.get(outcome.get("result")) or {}).get("metadata", {}).get("selectedProfile")
        if selected:
            profiled += [(query, "%s=%s" % (selected["name"], v)) for v in declared.get(selected["name"], [])]
    extra = profiled + list(EXTRA_CRITERIA)
    more, extra_outcomes = _run_all(runner, [(argv_for(q, p), None) for q, p in extra], log, "criteria (profiles, extras)")
    results.update(more)
    cases = []
    for (query, profile), outcome in zip(queries + extra, outcomes + extra_outcomes):
        case = {"query": query}
        if profile:
            case["profile"] = profile
        case.update(outcome)
        cases.append(case)
    return {"dimension_values": values, "profiles": declared, "cases": cases, "results": results,
            "command": "aicr --log-json recipe [--service S] [--accelerator A] [--intent I] [--os O] [--platform P] [--nodes N] "
                       "[--profile NAME=VALUE] --format json"}


def snapshots_golden(runner, log):
    specs = aicr_cases.snapshot_space()
    jobs, keys = [], []
    for case_id, spec in specs:
        snap = aicr_cases.build_snapshot(spec)
        for intent in aicr_cases.SNAPSHOT_INTENTS:
            query = {"intent": intent} if intent else {}
            jobs.append((argv_for(query, snapshot=True), snap))
            keys.append((case_id, query))
    results, outcomes = _run_all(runner, jobs, log, "snapshots")
    snapshots = dict((case_id, aicr_cases.build_snapshot(spec)) for case_id, spec in specs)
    cases = []
    for (case_id, query), outcome in zip(keys, outcomes):
        case = {"snapshot": case_id, "query": query}
        case.update(outcome)
        cases.append(case)
    return {"snapshots": snapshots, "cases": cases, "results": results,
            "command": "aicr --log-json recipe --snapshot snapshot.json [--intent I] --format json "
                       "(the case's Snapshot as snapshot.json in the working directory)"}


# RecipeResults share most of their parts: each componentRef, the constraints and the validation block are kept once
# in pool.json.gz (by content digest), shared by both files, and a result names them (``compare_aicr.load_golden``).
POOLED_LISTS = ("componentRefs",)
POOLED = ("constraints", "validation")


def pack(docs):
    """Replace the pooled parts of every result of ``docs`` ({kind: golden}) by their digests; returns the pool."""
    pool = {}

    def put(obj):
        key = digest(obj)
        pool[key] = obj
        return key

    for doc in docs.values():
        for name, result in list(doc["results"].items()):
            packed = dict(result)
            for field in POOLED_LISTS:
                if field in packed:
                    packed[field] = [put(item) for item in packed[field]]
            for field in POOLED:
                if field in packed:
                    packed[field] = put(packed[field])
            doc["results"][name] = packed
    return pool


def write_golden(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=None, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
    with open(str(path), "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as handle:
            handle.write(data)


def generate(binary, golden_dir, log):
    if not (CATALOG / "overlays" / "base.yaml").is_file():
        raise RuntimeError("the AICR catalog is not at %s (set AICR_SHARED, or make's SHARED, to the shared data)" % CATALOG)
    runner = Runner(binary)
    provenance = dict(SOURCE, tool="aicr", binary_version=runner.version(), date=datetime.date.today().isoformat(),
                      catalog="../shared/aicr/catalog (the v0.19.0 recipes/, embedded in the binary)", catalog_sha256=catalog_digest(CATALOG),
                      environment="HOME=<empty dir> KUBECONFIG=/dev/null, working directory = an empty dir holding only snapshot.json")
    docs = {}
    for name, build in (("criteria", criteria_golden), ("snapshots", snapshots_golden)):
        log("aicr: %s" % name)
        docs[name] = build(runner, log)
        docs[name]["provenance"] = dict(provenance, command=docs[name].pop("command"))
    return write_all(Path(golden_dir) / "aicr", docs, provenance)


def write_all(out, docs, provenance):
    """Write the goldens (pooled parts in pool.json.gz) and PROVENANCE.json; returns the summary."""
    summary = {}
    for name, doc in docs.items():
        summary[name] = {"cases": len(doc["cases"]), "recipes": len(doc["results"]),
                         "refusals": sum(1 for c in doc["cases"] if "result" not in c)}
        if "snapshots" in doc:
            summary[name]["snapshots"] = len(doc["snapshots"])
    pool = pack(docs)
    for name, doc in docs.items():
        write_golden(out / ("%s.json.gz" % name), doc)
    write_golden(out / "pool.json.gz", {"provenance": provenance, "pool": pool})
    summary["pool"] = {"parts": len(pool)}
    provenance["goldens"] = summary
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary
