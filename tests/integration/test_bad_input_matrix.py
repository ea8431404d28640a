"""Bad input is refused before anything changes (issue 36 item 5): a data-driven matrix over every module, both lookups
and the four roles, each case run normally and in check mode.

The cases are data, one file per module, lookup or role in ``bad_inputs/`` (its README gives the format). Each case is
one task of a generated playbook - a module task, a ``set_fact`` of the lookup, or ``include_role`` with the case's
variables - in a block whose rescue lets the play go on. The playbooks are few (one per lane and mode, see ``LANES``)
and run once per test module; every case is then a test of its own, ``test_bad_input[<mode>-<group>/<id>]``, reading
what its task did from the runner's events. A case passes when:

* its task failed (for a role: a task of the role failed);
* ``msg`` (of a loop: the first failed item's) is one line naming the case's ``field`` (a dotted field also matches
  Ansible's own wording for a sub-option, ``'nodes' ... found in 'criteria'``) and containing ``expect`` when given. A
  role's argument-spec refusal is Ansible's ``Validation of arguments failed:`` followed by one line per problem; the
  role cannot change that wording, so the line after it must be the only one;
* nothing crashed: no ``module_stderr``, no ``Traceback``, no ``unexpected`` in ``msg``;
* nothing changed: the result is not ``changed``, the lab's audit log holds no mutating request (server-side dry runs
  and access reviews left out) by the group's least-privilege identity in the case's time window (from the start of
  its task to the start of the next case's), and the fabric simulator's request log no attach or detach in it.

Two lanes run at the same time (two cores): their groups run as different identities and only one of them drives the
fabric, so each audit entry and fabric request belongs to exactly one case. Everything runs in a namespace of the
matrix's own, with stacks, Leases and CRDs of its own, removed afterwards.
"""

import concurrent.futures
import copy
import datetime
import json
import re
import resource
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from aicr_lab.charts.pytest_fixture import start_chart_repo

from lab_support import FabricNodes, dump, example_catalog

HERE = Path(__file__).resolve().parent
DATA = HERE / "bad_inputs"
REPO = HERE.parents[1]
BIN = REPO / ".venv" / "bin"
HELM = BIN / "helm4"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
MODES = ("normal", "check")
KINDS = ("module", "lookup", "role")
CASE_KEYS = {"id", "set", "drop", "field", "expect"}
# Lanes run side by side: a lane's groups are those whose identity is in it (None: the groups that reach no cluster).
LANES = {"a": {"release", "reconciler", None}, "b": {"facts", "crd-publisher", "fabric", "stack"}}
# Creates that change nothing: the authorizer's reviews.
NOT_A_CHANGE = {"selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews", "tokenreviews", "selfsubjectreviews"}
ARGSPEC_PREFIX = "Validation of arguments failed:"
CASE_TIMEOUT = 180  # a hung case fails (Ansible's task timeout) instead of holding the whole matrix

# A YAML alias bomb: six levels of nine aliases, 8 lines and under 300 bytes, that expand to 531 441 leaves.
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    "%s: &%s [%s]\n" % (name, name, ", ".join(["*" + prev] * 9)) for prev, name in zip("abcde", "bcdef"))
# Not YAML: a tab cannot start a token.
NOT_YAML = "apiVersion: v1\nkind: Config\nclusters:\n\t- name: lab\n"


# --- the data ------------------------------------------------------------------------------------------------------

def load_groups():
    groups = {}
    for path in sorted(DATA.glob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        doc["group"] = path.stem
        groups[path.stem] = doc
    return groups


GROUPS = load_groups()
CASES = [(group, case["id"]) for group, doc in GROUPS.items() for case in doc["cases"]]


def case_of(group, case_id):
    return next(c for c in GROUPS[group]["cases"] if c["id"] == case_id)


def arguments(doc, case):
    args = {k: v for k, v in doc["base"].items() if k not in (case.get("drop") or [])}
    args.update(case.get("set") or {})
    return copy.deepcopy(args)  # no YAML anchors in the playbook


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lane_of(doc):
    return next(lane for lane, identities in LANES.items() if doc.get("identity") in identities)


def task_name(group, case_id):
    return "%s/%s" % (group, case_id)


def case_task(doc, case):
    """The task of one case: the module, a set_fact of the lookup, or the role."""
    name = task_name(doc["group"], case["id"])
    args = arguments(doc, case)
    if doc["kind"] == "module":
        task = {"name": name, doc["name"]: args}
    elif doc["kind"] == "lookup":
        terms = args.pop("_terms", [])
        task = {"name": name, "vars": {"matrix_terms": terms, "matrix_keywords": args},
                "ansible.builtin.set_fact": {"matrix_value": "{{ lookup('%s', *matrix_terms, **matrix_keywords) }}" % doc["name"]}}
    else:
        task = {"name": name, "ansible.builtin.include_role": {"name": doc["name"]}, "vars": args}
    return {"name": "case " + name, "timeout": CASE_TIMEOUT, "block": [task],
            "rescue": [{"name": "refused " + name, "ansible.builtin.debug": {"msg": "refused"}}]}


def playbook(groups, selected, kubeconfigs):
    plays = []
    for doc in groups:
        tasks = [case_task(doc, c) for c in doc["cases"] if (doc["group"], c["id"]) in selected]
        if tasks:
            plays.append({"name": doc["group"], "hosts": "localhost", "gather_facts": False,
                          "vars": {"kubeconfig": kubeconfigs.get(doc.get("identity"), "")}, "tasks": tasks})
    return plays


# --- what a run did, per case ----------------------------------------------------------------------------------------

def _epoch(event):
    return datetime.datetime.fromisoformat(event["created"]).timestamp()


class Outcome:
    """What one case's task did in one mode: its failure (the first failed task that was not ignored), its result when it
    passed, and its time window."""

    def __init__(self, start):
        self.start = start
        self.end = None
        self.failed = None
        self.failed_task = None
        self.ok = None
        self.identity = None
        self.writes = []
        self.fabric = []


def outcomes_of(run, names):
    """{task name: Outcome} of the cases run in ``run``; windows end where the next case starts (the last at the end)."""
    found, current = {}, None
    for event in run.events:
        kind, data = event.get("event"), event.get("event_data") or {}
        if kind == "playbook_on_task_start" and data.get("task") in names:
            now = _epoch(event)
            if current is not None:
                current.end = now
            current = found[data["task"]] = Outcome(now)
        elif current is None:
            continue
        elif kind == "runner_on_failed" and not data.get("ignore_errors") and current.failed is None:
            current.failed, current.failed_task = data.get("res") or {}, data.get("task")
        elif kind == "runner_on_ok" and current.failed is None:
            current.ok = {"task": data.get("task"), "res": data.get("res") or {}}
        elif kind == "playbook_on_stats":
            current.end = _epoch(event)
    if current is not None and current.end is None:
        current.end = time.time()
    return found


def one_line_message(res):
    """``msg`` as the one line the case asks for (a role's argument-spec refusal: its one problem), or None with why."""
    msg = str(res.get("msg") or "").strip()
    if msg.startswith(ARGSPEC_PREFIX):
        msg = msg[len(ARGSPEC_PREFIX):].strip()
    if not msg:
        return None, "no msg"
    if "\n" in msg:
        return None, "msg is %d lines" % (msg.count("\n") + 1)
    return msg, None


def names_field(msg, field):
    """Whether ``msg`` names ``field`` as a whole word (``timeout`` is not named by ``overall_timeout``); a dotted or
    indexed field also by its last part with every earlier part named too (Ansible: ``'nodes' ... found in 'criteria'``)."""
    def word(text):
        return re.search(r"(?<![\w])%s(?![\w])" % re.escape(text), msg) is not None

    if word(field):
        return True
    parts = [p for p in re.split(r"[.\[\]]+", field) if p]
    return len(parts) > 1 and all(word(p) for p in parts)


def describe(entry):
    """An audit entry (or a fabric request in its shape) as text."""
    return "%s %s %s/%s by %s (HTTP %s)" % (entry["verb"], entry["resource"], entry["namespace"] or "-", entry["name"] or "*", entry["user"], entry["code"])


def problems_of(case, outcome, lab):
    """Every way the case was not refused cleanly, as text (empty: refused before anything changed)."""
    if outcome is None:
        return ["the case did not run"]
    problems = []
    if outcome.failed is None:
        res = (outcome.ok or {}).get("res") or {}
        problems.append("accepted: the task did not fail (changed=%s; %s)" % (res.get("changed"), str(res.get("msg") or "")[:300]))
    else:
        res = outcome.failed
        text = json.dumps(res, default=str)
        if "module_stderr" in res or "Traceback (most recent call last)" in text:
            problems.append("a crash: module_stderr or a traceback in the result")
        # a loop's failure is Ansible's "One or more items failed": the message is the first failed item's
        items = [r for r in res.get("results") or [] if isinstance(r, dict) and r.get("failed")]
        msg, why = one_line_message(items[0] if items else res)
        if msg is None:
            problems.append("%s: %r" % (why, str(res.get("msg"))[:600]))
        else:
            fields = case["field"] if isinstance(case["field"], list) else [case["field"]]
            fields = [lab.render(f) for f in fields]
            if " unexpected " in " %s " % msg:
                problems.append("unexpected (an exception the engine did not expect): %r" % msg)
            if not any(names_field(msg, f) for f in fields):
                problems.append("msg does not name %s: %r" % (" or ".join(fields), msg))
            if case.get("expect") and lab.render(case["expect"]) not in msg:
                problems.append("msg does not say %r: %r" % (lab.render(case["expect"]), msg))
        if res.get("changed"):
            problems.append("the failed result says changed: true")
    problems += ["the cluster was changed: %s" % describe(e) for e in outcome.writes]
    problems += ["the fabric was asked to %s (%s %s)" % (r["op"], r["method"], r["path"]) for r in outcome.fabric]
    return problems


# --- the lab the matrix runs in -------------------------------------------------------------------------------------

def write_inputs(directory, namespace, kubeconfig, silent_port):
    """The files the cases name (``{{ lab.<key> }}``), in ``directory``: the example catalog (and a copy with an alias bomb
    in a values file), a bomb, a file that is not YAML, a path that does not exist, a private cache directory, a scratch
    directory, and kubeconfigs of an API server that refuses connections and of one that never answers."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bomb.yaml").write_text(BOMB)
    (directory / "not-yaml.yaml").write_text(NOT_YAML)
    (directory / "cache").mkdir(mode=0o700)
    (directory / "scratch").mkdir()
    paths = {"catalog": example_catalog(directory / "catalog", namespace), "bomb_catalog": example_catalog(directory / "bomb-catalog", namespace)}
    values = paths["bomb_catalog"] / "components" / "example-monitoring" / "values.yaml"
    values.write_text(values.read_text() + "\n" + BOMB)
    for name, server in (("unreachable", "https://127.0.0.1:1"), ("silent", "https://127.0.0.1:%d" % silent_port)):  # port 1: refused
        config = yaml.safe_load(Path(kubeconfig).read_text())
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = server
        paths[name] = directory / ("%s.kubeconfig" % name)
        paths[name].write_text(yaml.safe_dump(config))
        paths[name].chmod(0o600)
    paths.update(bomb=directory / "bomb.yaml", not_yaml=directory / "not-yaml.yaml", missing=directory / "does-not-exist",
                 cache_dir=directory / "cache", scratch=directory / "scratch")
    return {key: str(path) for key, path in paths.items()}


class Lab:
    """Paths and endpoints the cases name as ``{{ lab.* }}``, and the clean-up."""

    def __init__(self, lab_kube, directory, repo, sim, nodes):
        self.kube = lab_kube
        self.namespace = lab_kube.create_namespace("bad-input-matrix")
        self.crd_group = "matrix-%s.example.aicr.io" % uuid.uuid4().hex[:6]
        self.sim = sim
        self.directory = directory
        self.crds_before = set(self._crds())
        # an API server that accepts connections (the kernel does, into the backlog) and never answers
        self.silent = socket.socket()
        self.silent.bind(("127.0.0.1", 0))
        self.silent.listen(64)
        state = sim.control.state()
        self.vars = dict(write_inputs(directory, self.namespace, lab_kube.kubeconfig_for("release"), self.silent.getsockname()[1]),
                         namespace=self.namespace, crd_group=self.crd_group, chart=str(REPO / "examples" / "charts" / "example-operator"),
                         helm=str(HELM), repo_url=repo.url, mirrors={EXAMPLE_REPO: repo.url},
                         fabric=dict(sim.credentials, endpoint=sim.endpoint, tenant_id=state["tenant_id"], cluster_id=state["cluster_id"],
                                     ca_path=sim.ca_path, machine=nodes.machine_ids[0], node=nodes.names[0]))
        self.kubeconfigs = {identity: lab_kube.kubeconfig_for(identity)
                            for identities in LANES.values() for identity in identities if identity}
        self.users = [lab_kube.user(identity) for identity in self.kubeconfigs]

    def render(self, text):
        """``{{ lab.x }}`` in a case's field or expected text, filled in as Ansible fills in its arguments."""
        return re.sub(r"\{\{\s*lab\.(\w+)\s*\}\}", lambda m: str(self.vars[m.group(1)]), str(text))

    def writes(self, mark):
        return [e for e in self.kube.audit(since=mark, mutating=True, user=self.users)
                if "dryRun" not in (e.get("query") or "") and e["resource"] not in NOT_A_CHANGE]

    def _crds(self):
        return [crd["metadata"]["name"] for crd in self.kube.rest.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]]

    def close(self):
        """What an accepted case may have left: the namespace's releases, the matrix's CRDs, the namespace."""
        self.silent.close()
        helm = [str(HELM), "--kubeconfig", self.kube.kubeconfig]
        listed = subprocess.run(helm + ["list", "-a", "-q", "-n", self.namespace], capture_output=True, text=True, check=False, timeout=60)
        for release in listed.stdout.split():
            subprocess.run(helm + ["uninstall", release, "-n", self.namespace], capture_output=True, check=False, timeout=120)
        for name in set(self._crds()) - self.crds_before:  # the matrix's own, or example-crds' installed by an accepted case
            self.kube.rest.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s" % name)
        self.kube.rest.delete("/api/v1/namespaces/%s" % self.namespace, propagationPolicy="Background")
        self.kube.namespaces.remove(self.namespace)


class Matrix:
    """Every case's outcome in each mode, the writes and fabric requests no case accounts for, and the run's figures."""

    def __init__(self, lab):
        self.lab = lab
        self.outcomes = {}
        self.unattributed = []
        self.runs = {}
        self.seconds = {}
        self.devices_after = []

    def group_seconds(self):
        """Seconds each group's cases took, both modes together (to balance the lanes)."""
        totals = {}
        for key, outcome in self.outcomes.items():
            totals[key[1]] = round(totals.get(key[1], 0) + outcome.end - outcome.start, 1)
        return totals

    def run(self, run_playbook, selected):
        """Run the selected cases (two lanes side by side, normal mode then check mode) and give each its outcome, the
        writes and the fabric requests of its window."""
        lab = self.lab
        books = {}
        for lane in LANES:
            plays = playbook([doc for doc in GROUPS.values() if lane_of(doc) == lane], selected, lab.kubeconfigs)
            if plays:
                books[lane] = lab.directory / ("matrix-%s.yml" % lane)
                books[lane].write_text(yaml.safe_dump(plays, sort_keys=False, width=200))
        lab.sim.control.clear_requests()
        mark = lab.kube.audit_mark()
        started, cpu = time.monotonic(), _children_cpu()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(books) or 1) as pool:
            for mode in MODES:
                begun = time.monotonic()
                futures = {lane: pool.submit(run_playbook, str(path), extravars={"lab": lab.vars}, check=(mode == "check"))
                           for lane, path in books.items()}
                for lane, future in futures.items():
                    self.runs[(mode, lane)] = future.result()
                self.seconds[mode] = round(time.monotonic() - begun, 1)
        self.seconds["total"] = round(time.monotonic() - started, 1)
        self.seconds["cpu"] = round(_children_cpu() - cpu, 1)
        names = {task_name(group, case_id): (group, case_id) for group, case_id in selected}
        for (mode, _lane), run in self.runs.items():
            for name, outcome in outcomes_of(run, set(names)).items():
                group, case_id = names[name]
                outcome.identity = GROUPS[group].get("identity")
                self.outcomes[(mode, group, case_id)] = outcome
        self._attribute(lab.writes(mark), lambda e: e["user"], lambda o: lab.kube.user(o.identity) if o.identity else None, "writes")
        fabric = [dict(r, verb=r["op"], resource="fabric", namespace="", name=r["path"], user="fabric", code=r.get("status"), time=r["t"])
                  for r in lab.sim.control.requests(mutating=True)]
        self._attribute(fabric, lambda r: "fabric", lambda o: o.identity, "fabric")

    def _attribute(self, entries, who, whose, where):
        """Each entry to the case that ran as ``who(entry)`` when it was made (``whose(outcome)``: who a case runs as);
        one no case accounts for to ``unattributed``."""
        for entry in entries:
            owners = [o for o in self.outcomes.values() if whose(o) == who(entry) and o.start <= entry["time"] < o.end]
            for owner in owners:
                getattr(owner, where).append(entry)
            if not owners:
                self.unattributed.append(entry)


def _selected(session):
    """The cases the session's selected tests of this module ask for (all when only the other tests are selected)."""
    wanted = set()
    for item in session.items:
        if item.module is not None and item.module.__name__ == __name__ and hasattr(item, "callspec") and "case" in item.callspec.params:
            wanted.add(item.callspec.params["case"])
    return wanted or set(CASES)


@pytest.fixture(scope="module")
def matrix(request, lab_kube, run_playbook_module, tmp_path_factory):
    lab_kube.require_lab("the audit log and the fabric simulator")
    directory = tmp_path_factory.mktemp("bad-input-matrix")
    (directory / "charts").mkdir()
    repo = start_chart_repo(directory / "charts")
    nodes = FabricNodes(lab_kube, count=1)
    sim = nodes.simulator(directory / "sim")
    lab = Lab(lab_kube, directory / "lab", repo, sim, nodes)
    try:
        handle = Matrix(lab)
        handle.run(run_playbook_module, _selected(request.session))
        handle.devices_after = [d for machine in nodes.machine_ids for d in sim.control.devices(machine)]
        print("bad-input matrix: %d case runs in %s s (normal %s s, check %s s; %s s of CPU); seconds per group: %s"
              % (len(handle.outcomes), handle.seconds["total"], handle.seconds.get("normal"), handle.seconds.get("check"), handle.seconds["cpu"],
                 json.dumps(handle.group_seconds(), sort_keys=True)))
        yield handle
    finally:
        lab.close()
        nodes.close()
        repo.stop()
        shutil.rmtree(str(directory), ignore_errors=True)


# --- the tests ------------------------------------------------------------------------------------------------------

# the first test also waits for the whole matrix (its fixture): more than pytest.ini's 900 s on a busy machine
pytestmark = [pytest.mark.helm, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.mark.parametrize("case", CASES, ids=["%s/%s" % c for c in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_bad_input(matrix, mode, case):
    group, case_id = case
    outcome = matrix.outcomes.get((mode, group, case_id))
    problems = problems_of(case_of(group, case_id), outcome, matrix.lab)
    if outcome is None:
        detail = None
    else:
        detail = outcome.failed if outcome.failed is not None else outcome.ok
    assert not problems, "%s %s (%s) was not refused cleanly:\n- %s\nresult: %s" % (
        mode, task_name(group, case_id), getattr(outcome, "failed_task", None), "\n- ".join(problems), dump(detail))


def test_nothing_changed_outside_the_cases(matrix):
    """No write and no fabric change between the cases either, and no device left on the matrix's machine."""
    assert matrix.unattributed == [], "\n".join(describe(e) for e in matrix.unattributed)
    assert matrix.devices_after == [], dump(matrix.devices_after)


def test_the_matrix_covers_every_module_lookup_and_role():
    """At least 150 cases; a group for every module, lookup and role the collection ships; well-formed cases."""
    assert len(CASES) >= 150, len(CASES)
    assert len(set(CASES)) == len(CASES), "duplicate case ids"
    shipped = {("module", "aicr.runtime." + p.stem) for p in (REPO / "plugins" / "modules").glob("*.py")}
    shipped |= {("lookup", "aicr.runtime." + p.stem) for p in (REPO / "plugins" / "lookup").glob("*.py")}
    shipped |= {("role", "aicr.runtime." + p.name) for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()}
    assert shipped <= {(doc["kind"], doc["name"]) for doc in GROUPS.values()}
    for doc in GROUPS.values():
        assert doc["kind"] in KINDS and any(doc.get("identity") in ids for ids in LANES.values()), doc["group"]
        for case in doc["cases"]:
            assert set(case) <= CASE_KEYS and case.get("field"), (doc["group"], case)
