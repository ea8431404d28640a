"""The release engine's ``on_transition`` hook: every phase change, in order, serialised, never fatal."""

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import run_dag
from transitions_example import charts, comp, example  # noqa: F401  pylint: disable=import-error,unused-import


class Recorder:
    """An on_transition callback that records every call and checks calls never overlap."""

    def __init__(self, fail_on=None):
        self.calls = []
        self.threads = set()
        self.active = 0
        self.overlaps = 0
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def __call__(self, result):
        with self.lock:
            self.active += 1
            if self.active > 1:
                self.overlaps += 1
        try:
            self.calls.append(dict(result))
            self.threads.add(threading.current_thread().name)
            if self.fail_on and self.fail_on(result):
                raise ValueError("status store is down")
        finally:
            with self.lock:
                self.active -= 1

    def phases(self):
        per = {}
        for call in self.calls:
            per.setdefault(call["name"], []).append(call["phase"])
        return per


def run_with(cluster, helm, recipe, recorder, **opts):
    opts.setdefault("poll_interval", 0.01)
    opts.setdefault("timeout", 10)
    opts.setdefault("stack", "test")
    plan = build_plan(recipe)
    return GatedRelease(cluster, helm, plan, Options(**opts), on_transition=recorder).run()


def test_every_transition_in_order_per_component_then_unchanged_on_rerun(example):
    cluster, helm, recipe = example
    recorder = Recorder()
    result = run_with(cluster, helm, recipe, recorder, concurrency=4)
    assert "failed_message" not in result and "warnings" not in result
    assert recorder.phases() == dict((n, ["Deploying", "Ready"]) for n in ("crds", "operator", "agent", "monitoring", "config"))
    assert recorder.overlaps == 0, "calls are serialised"
    assert any(t != threading.current_thread().name for t in recorder.threads), "called from the scheduler threads"
    final = dict((c["name"], c) for c in result["components"])
    last = {}
    for call in recorder.calls:
        last[call["name"]] = call
    for name, call in last.items():
        assert call["phase"] == final[name]["phase"] and call["revision"] == final[name]["revision"], "the last call is the final result"
    order = [(c["name"], c["phase"]) for c in recorder.calls]
    assert order.index(("crds", "Ready")) < order.index(("operator", "Deploying")) < order.index(("operator", "Ready")) \
        < order.index(("agent", "Deploying")), "a dependent starts only after its dependency is Ready"

    again = Recorder()
    assert run_with(cluster, helm, recipe, again)["changed"] is False
    assert again.phases() == dict((n, ["Deploying", "Unchanged"]) for n in ("crds", "operator", "agent", "monitoring", "config"))
    assert all(c["action"] == "unchanged" for c in again.calls)


def test_failure_and_blocked_are_reported_as_they_happen(example):
    cluster, helm, recipe = example
    helm.fail["operator"] = "chart not found"
    recorder = Recorder()
    result = run_with(cluster, helm, recipe, recorder)
    phases = recorder.phases()
    assert phases["operator"] == ["Deploying", "Failed"] and phases["agent"] == ["Blocked"]
    blocked = [c for c in recorder.calls if c["name"] == "agent"][0]
    assert blocked["blocked_by"] == ["operator"] and blocked["message"] == "blocked: dependency operator failed"
    order = [(c["name"], c["phase"]) for c in recorder.calls]
    assert order.index(("operator", "Failed")) < order.index(("agent", "Blocked"))
    assert "failed: operator" in result["failed_message"] and "blocked: agent (by operator)" in result["failed_message"]


def test_a_raising_callback_never_breaks_the_rollout(example):
    cluster, helm, recipe = example
    recorder = Recorder(fail_on=lambda r: True)
    result = run_with(cluster, helm, recipe, recorder)
    assert "failed_message" not in result
    assert set(c["phase"] for c in result["components"]) == {"Ready"} and result["changed"] is True
    assert len(recorder.calls) == 10, "still called at every transition"
    assert result["warnings"][0].startswith("on_transition: the status callback failed for component ")
    assert "ValueError: status store is down" in result["warnings"][0]
    assert len(result["warnings"]) == len(set(result["warnings"])) <= 10


def test_check_mode_calls_nothing_and_prune_and_absent_report_removed(example):
    cluster, helm, recipe = example
    recorder = Recorder()
    run_with(cluster, helm, recipe, recorder, check_mode=True)
    assert recorder.calls == []
    run_with(cluster, helm, recipe, Recorder())
    smaller = {"components": [c for c in recipe["components"] if c["name"] not in ("agent", "config")]}
    pruned = Recorder()
    run_with(cluster, helm, smaller, pruned, prune=True)
    phases = pruned.phases()
    assert phases["agent"] == ["Deploying", "Removed"] and phases["config"] == ["Deploying", "Removed"]
    assert phases["crds"] == ["Deploying", "Unchanged"]
    gone = Recorder()
    run_with(cluster, helm, smaller, gone, state="absent", concurrency=1)
    assert gone.phases() == dict((n, ["Deploying", "Removed"]) for n in ("crds", "operator", "monitoring"))
    removed = [c["name"] for c in gone.calls if c["phase"] == "Removed"]
    assert removed.index("operator") < removed.index("crds"), "reverse dependency order"


def test_overall_timeout_blocks_are_reported(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes, {"x": 0.3}))
    recipe = {"components": [comp("x"), comp("y", ["x"])]}
    recorder = Recorder()
    result = run_with(cluster, helm, recipe, recorder, overall_timeout=0.1)
    phases = recorder.phases()
    assert phases["x"] == ["Deploying", "Failed"] and phases["y"] == ["Blocked"]
    assert result["summary"]["blocked"] == ["y"]


def test_scheduler_on_block_is_immediate_and_grows_with_more_failures():
    seen = []
    events = []

    def work(name):
        events.append(("start", name))
        if name in ("a", "b"):
            raise RuntimeError("boom " + name)
        return name

    def on_block(outcome):
        seen.append((outcome.name, list(outcome.blocked_by)))
        events.append(("blocked", outcome.name))

    outcomes = run_dag(["a", "b", "c", "d", "e"], {"c": ["a", "b"], "d": ["c"]}, work, concurrency=1, on_block=on_block)
    assert outcomes["c"].status == outcomes["d"].status == "blocked"
    assert ("c", ["a"]) in seen and ("d", ["a"]) in seen and ("c", ["a", "b"]) in seen
    assert events.index(("blocked", "c")) < events.index(("start", "e")), "told before the rest of the run"
    timed = []
    run_dag(["p", "q"], {}, lambda n: n, concurrency=1, deadline=0, clock=lambda: 1.0, on_block=lambda o: timed.append((o.name, o.error)))
    assert timed == [("p", "overall timeout reached before it could start"), ("q", "overall timeout reached before it could start")]
