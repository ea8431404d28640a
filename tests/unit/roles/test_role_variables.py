"""Every role refuses, as its first task, a variable with its prefix that it does not know (issue 36): a misspelled
cluster_runtime_critera used to be ignored and the base recipe planned. What a role knows is its argument spec; what it
sets itself (registered results, facts, loop variables) is read from its tasks and never flagged."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common import rolevars

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())


@pytest.mark.parametrize("role", ROLES)
def test_the_first_task_refuses_unknown_variables(role):
    first = yaml.safe_load((REPO / "roles" / role / "tasks" / "main.yml").read_text())[0]
    assert first["ansible.builtin.assert"]["that"] == "lookup('aicr.runtime.unknown_variables') | length == 0"
    assert first["ansible.builtin.assert"]["fail_msg"] == "{{ lookup('aicr.runtime.unknown_variables') | join('; ') }}"


@pytest.mark.parametrize("role", ROLES)
def test_every_default_and_every_name_the_role_sets_is_known(role):
    declared, own = rolevars.role_names(str(REPO / "roles" / role))
    defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    assert set(defaults) <= declared
    assert rolevars.unknown_variables(role, set(defaults) | own | declared, declared, own) == []


def test_a_misspelling_names_the_nearest_declared_variable():
    declared = {"cluster_runtime_criteria", "cluster_runtime_stack", "cluster_runtime_state"}
    problems = rolevars.unknown_variables("cluster_runtime", ["cluster_runtime_critera", "cluster_runtime_zzzzzz", "cluster_runtime_result",
                                                              "composable_gpu_x", "aicr_catalog"], declared, {"cluster_runtime_result"})
    assert problems == [
        "cluster_runtime_critera: not a variable of role cluster_runtime (its variables are the options of its meta/argument_specs.yml); "
        "did you mean cluster_runtime_criteria?",
        "cluster_runtime_zzzzzz: not a variable of role cluster_runtime (its variables are the options of its meta/argument_specs.yml)"]


def test_own_variables_are_read_from_blocks_facts_loops_and_vars():
    tasks = [{"name": "a", "register": "r_one", "vars": {"r_two": 1}},
             {"block": [{"ansible.builtin.set_fact": {"r_three": 1, "cacheable": True}}],
              "rescue": [{"set_fact": {"r_four": 2}}], "always": [{"loop_control": {"loop_var": "r_five", "index_var": "r_six"}}]}]
    assert rolevars.own_variables(tasks) == {"r_one", "r_two", "r_three", "r_four", "r_five", "r_six"}


def test_a_play_with_a_misspelled_variable_fails_before_the_role_does_anything(tmp_path):
    """The role, run as a play runs it (check mode, its registered result already defined as after an earlier run)."""
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  roles: [aicr.runtime.cluster_runtime]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "dev"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    extra = {"cluster_runtime_catalog": "/nonexistent", "cluster_runtime_critera": {"service": "eks"}, "cluster_runtime_result": {}}
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", "--check", str(playbook),
                          "-e", yaml.safe_dump(extra, default_flow_style=True)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 2, run.stdout + run.stderr
    assert ('"msg": "cluster_runtime_critera: not a variable of role cluster_runtime (its variables are the options of its '
            'meta/argument_specs.yml); did you mean cluster_runtime_criteria?"') in run.stdout
    assert "gated_release" not in run.stdout.split("cluster_runtime_critera")[0]  # nothing ran before the check but Ansible's spec validation
