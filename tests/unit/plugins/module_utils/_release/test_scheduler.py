"""DAG scheduler: gates, concurrency, Blocked propagation (property tests over generated DAGs)."""

import random
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import BLOCKED, FAILED, OK, levels, run_dag, validate_dag


@st.composite
def dags(draw, max_nodes=10):
    """Nodes n0..nk; each node depends on a subset of the earlier ones."""
    count = draw(st.integers(min_value=1, max_value=max_nodes))
    order = ["n%d" % i for i in range(count)]
    deps = {}
    for i, name in enumerate(order):
        deps[name] = sorted(draw(st.sets(st.sampled_from(order[:i]), max_size=3))) if i else []
    return order, deps


def descendants(deps, roots):
    found = set()
    changed = True
    while changed:
        changed = False
        for name, parents in deps.items():
            if name not in found and any(p in roots or p in found for p in parents):
                found.add(name)
                changed = True
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.integers(min_value=1, max_value=4), st.data())
def test_no_node_starts_before_its_dependencies_succeed(dag, concurrency, data):
    order, deps = dag
    failing = set(data.draw(st.sets(st.sampled_from(order), max_size=2)))
    delays = dict((n, data.draw(st.floats(min_value=0, max_value=0.01))) for n in order)
    finished = set()
    lock = threading.Lock()
    violations = []
    running = [0, 0]  # current, max

    def work(name):
        with lock:
            missing = [d for d in deps[name] if d not in finished]
            if missing:
                violations.append((name, missing))
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(delays[name])
        with lock:
            running[0] -= 1
        if name in failing:
            raise AicrError("boom %s" % name)
        with lock:
            finished.add(name)
        return name

    outcomes = run_dag(order, deps, work, concurrency=concurrency)
    assert not violations
    assert running[1] <= concurrency
    blocked = descendants(deps, failing)
    for name in order:
        outcome = outcomes[name]
        if name in blocked:
            assert outcome.status == BLOCKED, name
            assert outcome.started is None
            assert set(outcome.blocked_by) <= failing and outcome.blocked_by
        elif name in failing:
            assert outcome.status == FAILED and outcome.error == "boom %s" % name
        else:
            assert outcome.status == OK, name


def test_starts_a_dependent_as_soon_as_its_gate_opens():
    """``c`` (after the fast ``b``) must start while the slow, independent ``a`` still runs."""
    c_started = threading.Event()

    def work(name):
        if name == "a":
            assert c_started.wait(5), "c did not start while a was running: the scheduler waits level by level"
        if name == "c":
            c_started.set()
        return name

    outcomes = run_dag(["a", "b", "c"], {"a": [], "b": [], "c": ["b"]}, work, concurrency=2)
    assert all(o.status == OK for o in outcomes.values())


def test_blocked_by_names_root_failures_and_independent_branch_continues():
    deps = {"a": [], "b": ["a"], "c": ["b"], "x": [], "y": ["x"], "z": ["c", "y"]}
    order = ["a", "x", "b", "y", "c", "z"]

    def work(name):
        if name in ("a",):
            raise RuntimeError("bad chart")
        return name

    outcomes = run_dag(order, deps, work, concurrency=3)
    assert outcomes["a"].status == FAILED and outcomes["a"].error == "RuntimeError: bad chart"
    assert [outcomes[n].status for n in ("b", "c", "z")] == [BLOCKED] * 3
    assert outcomes["z"].blocked_by == ["a"]
    assert outcomes["x"].status == OK and outcomes["y"].status == OK


def test_deadline_stops_new_starts():
    now = [0.0]

    def clock():
        return now[0]

    def work(name):
        now[0] += 10
        return name

    outcomes = run_dag(["a", "b"], {"a": [], "b": ["a"]}, work, concurrency=1, deadline=5, clock=clock)
    assert outcomes["a"].status == OK
    assert outcomes["b"].status == BLOCKED and "overall timeout" in outcomes["b"].error


def test_invalid_dags():
    with pytest.raises(AicrError, match="depends on zz"):
        validate_dag(["a"], {"a": ["zz"]})
    with pytest.raises(AicrError, match="cycle"):
        validate_dag(["a", "b"], {"a": ["b"], "b": ["a"]})
    with pytest.raises(AicrError, match="duplicate"):
        validate_dag(["a", "a"], {})


@given(dags(max_nodes=15))
def test_levels_are_one_more_than_the_deepest_dependency(dag):
    order, deps = dag
    level = levels(order, deps)
    for name in order:
        assert level[name] == 1 + max([level[d] for d in deps[name]] or [0])


def test_random_large_dag_runs_everything():
    rng = random.Random(7)
    order = ["c%02d" % i for i in range(40)]
    deps = dict((n, rng.sample(order[:i], min(i, rng.randint(0, 3)))) for i, n in enumerate(order))
    outcomes = run_dag(order, deps, lambda n: n, concurrency=4)
    assert all(o.status == OK for o in outcomes.values())
