"""stack_reconcile's node_scheduling.j2: a ClusterStack's spec.nodeScheduling (camelCase) as recipe_resolve's
node_scheduling, else the role's stack_reconcile_node_scheduling (rendered with Jinja2 and the filters it uses)."""

import json
from pathlib import Path

import jinja2
import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import scheduling

TEMPLATE = Path(__file__).resolve().parents[3] / "roles" / "stack_reconcile" / "templates" / "node_scheduling.j2"


def _render(spec, role_default=None):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"])
    env.filters["to_json"] = json.dumps
    text = env.from_string(TEMPLATE.read_text()).render(stack_reconcile_stack={"spec": spec},
                                                        stack_reconcile_node_scheduling=role_default if role_default is not None else {})
    return json.loads(text)


def test_the_specs_camel_case_becomes_the_options_names():
    spec = {"nodeScheduling": {"system": {"nodeSelector": {"pool": "sys"}}, "accelerated": {"tolerations": [{"operator": "Exists"}]},
                               "nodes": 4, "workloadGate": "k:NoSchedule", "workloadSelector": {"app": "x"}}}
    out = _render(spec, {"nodes": 9})
    assert out == {"system": {"node_selector": {"pool": "sys"}}, "accelerated": {"tolerations": [{"operator": "Exists"}]},
                   "nodes": 4, "workload_gate": "k:NoSchedule", "workload_selector": {"app": "x"}}
    scheduling.settings(out)  # a valid option


@pytest.mark.parametrize("role_default,expected", [({"nodes": 9}, {"nodes": 9}), ({}, None)])
def test_without_the_spec_field_the_roles_default(role_default, expected):
    assert _render({"criteria": {}}, role_default) == expected
