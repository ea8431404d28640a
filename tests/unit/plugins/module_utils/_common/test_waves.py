"""Canary waves: the batches Ansible's serial makes from the same list (counts or percentages, not cumulative, the last repeating)."""

import pytest

from ansible.playbook.play import Play
from ansible.executor.playbook_executor import PlaybookExecutor

from ansible_collections.aicr.runtime.plugins.filter.fleet_gate import fleet_gate
from ansible_collections.aicr.runtime.plugins.filter.fleet_waves import fleet_waves
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.waves import plan_waves

HOSTS = ["c%02d" % i for i in range(1, 51)]


@pytest.mark.parametrize("sizes, lengths", [
    ([1, "10%", "100%"], [1, 5, 44]),
    ([1, 2, 3], [1, 2] + [3] * 15 + [2]),
    (["1%", "50%"], [1, 25, 24]),
    (["2", "30%"], [2, 15, 15, 15, 3]),
    ([100], [50]),
])
def test_waves_are_the_batches_ansibles_serial_makes(sizes, lengths):
    waves = plan_waves(HOSTS, sizes)
    assert [len(w) for w in waves] == lengths
    assert [h for w in waves for h in w] == HOSTS, "every host once, in order: the first is the canary"
    # the same list given to ansible-core's own batching
    play = Play.load({"hosts": "all", "serial": sizes, "tasks": []})

    class _Inventory(object):
        def get_hosts(self, *_args, **_kwargs):
            return list(HOSTS)

    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = _Inventory()  # pylint: disable=protected-access
    assert executor._get_serialized_batches(play) == waves  # pylint: disable=protected-access


def test_six_clusters_in_waves_of_one_two_three():
    assert fleet_waves(HOSTS[:6], [1, 2, 3]) == [["c01"], ["c02", "c03"], ["c04", "c05", "c06"]]


@pytest.mark.parametrize("sizes, field", [
    ([], "fleet_waves"), ("1", "fleet_waves"), ([0], "fleet_waves[0]"), ([1, -2], "fleet_waves[1]"), ([1, "0%"], "fleet_waves[1]"),
    (["120%"], "fleet_waves[0]"), (["ten"], "fleet_waves[0]"), ([True], "fleet_waves[0]"), ([1.5], "fleet_waves[0]"),
])
def test_bad_wave_sizes_are_refused_naming_the_entry(sizes, field):
    with pytest.raises(AicrError) as info:
        plan_waves(HOSTS, sizes)
    assert info.value.msg.startswith(field + ": ") and "allowed:" in info.value.msg and "\n" not in info.value.msg


def _stack(name, phase=None, health=None, suspended=False):
    status = {}
    if phase:
        status["phase"] = phase
    if health:
        status["conditions"] = [{"type": "Ready", "status": "True"}, {"type": "HealthChecksPassed", "status": health[0], "reason": health[1]}]
    return {"name": name, "status": status, "decision": {"suspended": suspended}}


def test_stack_gate_passes_ready_stacks_with_health_checks_passed_or_none():
    assert fleet_gate([_stack("a", "Ready", ("True", "Passed")), _stack("b", "Ready", ("True", "NoChecks")),
                       _stack("s", "Failed", suspended=True)]) == []
    assert fleet_gate([]) == []


def test_stack_gate_names_each_stack_that_is_not_through_its_wave():
    assert fleet_gate([_stack("a", "Degraded", ("False", "HealthCheckFailed")), _stack("b"), _stack("c", "Ready", ("False", "HealthCheckFailed")),
                       _stack("d", "Ready", ("Unknown", "NotRun")), _stack("e", "Ready")]) == [
        "a: phase Degraded", "b: phase none", "c: health checks not passed (HealthCheckFailed)",
        "d: health checks not passed (NotRun)", "e: health checks not passed (not run)"]
