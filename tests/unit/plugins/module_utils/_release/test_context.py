"""The run context (``_release.context``) alone: its recorders, the transition notifier, a component's timed step and the
run's view of namespaces - what every collaborator of a gated_release run shares, tested without a run."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import claim
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import DEPLOYING, FAILED, READY
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release.context import MAX_WARNINGS, Namespaces
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState

from release_helpers import comp, context


def test_warnings_are_kept_once_each_and_at_most_ten(fakes):
    ctx = context(fakes.FakeCluster(), None, [comp("x")])
    for i in range(MAX_WARNINGS + 5):
        ctx.warn("w%d" % i)
        ctx.warn("w%d" % i)
    assert ctx.warnings == ["w%d" % i for i in range(MAX_WARNINGS)]


def test_a_foreign_claim_is_reported_once_and_as_a_warning(fakes):
    ctx = context(fakes.FakeCluster(), None, [comp("x")])
    ctx.claim(claim("release", "apps", "x", "test", "labelled for stack test but not in its inventory"), "release apps/x is not ours")
    ctx.claim(claim("release", "apps", "x", "test", "labelled for stack test but not in its inventory"), "release apps/x is not ours")
    assert [(c["kind"], c["namespace"], c["name"], c["message"]) for c in ctx.foreign_claims] == [
        ("release", "apps", "x", "foreign claim: release apps/x is not ours")]
    assert ctx.warnings == ["foreign claim: release apps/x is not ours"]


def test_transitions_are_told_once_per_phase_and_a_failing_callback_is_a_warning(fakes):
    seen = []

    def callback(result):
        seen.append((result["name"], result["phase"]))
        if result["phase"] == READY:
            raise ValueError("status store down")

    ctx = context(fakes.FakeCluster(), None, [comp("x")])
    ctx.on_transition = callback
    st = ComponentState(ctx.plan.by_name["x"])
    st.phase = DEPLOYING
    ctx.transition(st)
    ctx.transition(st)  # the same phase again: not told twice
    st.phase = READY
    ctx.transition(st)
    assert seen == [("x", DEPLOYING), ("x", READY)]
    assert ctx.warnings == ["on_transition: the status callback failed for component x (phase Ready): ValueError: status store down"]


def test_a_step_is_deploying_first_then_failed_with_the_error_and_timed(fakes):
    ctx = context(fakes.FakeCluster(), None, [comp("x")])
    times = iter([100.0, 102.5])
    ctx.clock = lambda: next(times)
    ctx.wall = lambda: 0.0
    phases = []
    ctx.on_transition = lambda result: phases.append(result["phase"])
    st = ComponentState(ctx.plan.by_name["x"])
    deadlines = []

    def work(deadline):
        deadlines.append(deadline)
        raise AicrError("component x: not Ready")

    with pytest.raises(AicrError):
        ctx.step(st, 105.0, work)
    assert deadlines == [105.0]  # the overall deadline is earlier than the component's timeout (10 s)
    assert (st.phase, st.message, st.duration) == (FAILED, "component x: not Ready", 2.5)
    assert phases == [DEPLOYING, FAILED]


def test_a_namespace_is_read_once_and_created_once(fakes):
    cluster = fakes.FakeCluster()
    ctx = context(cluster, None, [comp("x")])
    namespaces = Namespaces(ctx)
    assert namespaces.present("default") and namespaces.present("default")
    assert namespaces.ensure("apps") is True
    assert namespaces.ensure("apps") is False
    creates = [a for a in cluster.audit if a[0] == "create" and a[1] == "Namespace"]
    assert len(creates) == 1 and ctx.actions == ["create namespace apps"]


def test_a_namespace_another_component_created_meanwhile_is_not_an_error(fakes):
    class Racing(fakes.FakeCluster):
        def create(self, obj):
            raise ClusterError("namespaces \"apps\" already exists", status=409)

    ctx = context(Racing(), None, [comp("x")])
    namespaces = Namespaces(ctx)
    assert namespaces.ensure("apps") is False
    assert namespaces.present("apps") and ctx.actions == []
