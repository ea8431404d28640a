"""Both rollout roles expose gated_release's clear_pending (issue 35: a helm killed mid-upgrade leaves its release
pending-*, every later run fails on it, and no role let the operator clear it): declared in the role's argument
spec, defaulted off in its defaults, and passed to the gated_release task. (The lab runs of both roles check that the
value reaches gated_release: tests/integration/test_stack_reconcile.py, test_gated_release_playbooks.py.)"""

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"


def gated_release_tasks(tasks):
    for task in tasks or []:
        if "block" in task:
            yield from gated_release_tasks(task["block"])
        if "aicr.runtime.gated_release" in task:
            yield task["aicr.runtime.gated_release"]


@pytest.mark.parametrize("role,tasks_file", [("cluster_runtime", "main.yml"), ("stack_reconcile", "converge.yml")])
def test_the_role_declares_defaults_and_passes_clear_pending(role, tasks_file):
    var = "%s_clear_pending" % role
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"][var]
    assert spec["type"] == "bool" and spec["default"] is False
    assert yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())[var] is False
    tasks = list(gated_release_tasks(yaml.safe_load((ROLES / role / "tasks" / tasks_file).read_text())))
    assert tasks and all(task.get("clear_pending") == "{{ %s }}" % var for task in tasks)
