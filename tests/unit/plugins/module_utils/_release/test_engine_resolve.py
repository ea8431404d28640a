"""execute() with ``resolve``: the recipe is resolved in the module process, as recipe_resolve resolves it."""

from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.recipe_resolve import resolve_from_options
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from recipe_helpers import snapshot

EXAMPLE_CATALOG = str(Path(__file__).resolve().parents[5] / "examples" / "catalog")
CRITERIA = {"service": "kind", "accelerator": "h100", "intent": "training", "os": None, "platform": None, "nodes": None}


def resolve_options(**changes):
    """The options as AnsibleModule hands them over (unset criteria are None)."""
    options = {"catalog": EXAMPLE_CATALOG, "criteria": dict(CRITERIA), "profile": None, "skip_components": [],
               "component_overrides": {}, "use_cache": False}
    options.update(changes)
    return options


def plan(params, fakes):
    """execute() in check mode against an empty fake cluster."""
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster)
    result = execute(dict(params, poll_interval=0.01, timeout=10, render_cache=False), check_mode=True, cluster=cluster, helm=helm)
    assert not cluster.mutations(), "check mode writes nothing"
    assert not [call for call in helm.calls if call[0] in ("upgrade", "uninstall")], "check mode only renders and pulls"
    return result


def test_resolve_plans_exactly_what_a_registered_recipe_plans(fakes):
    registered = resolve_from_options(resolve_options())
    from_resolve = plan({"resolve": resolve_options()}, fakes)
    from_recipe = plan({"recipe": registered}, fakes)

    assert from_resolve.pop("resolved") == {
        "recipe_name": "h100-kind-training",
        "catalog_digest": registered["catalog_digest"],
        "catalog_root": EXAMPLE_CATALOG,
        "criteria": {"service": "kind", "accelerator": "h100", "intent": "training", "os": "any", "platform": "any"},
        "applied_overlays": ["base", "kind", "kind-training", "h100-kind-training"],
        "deployment_order": ["example-crds", "example-config", "example-monitoring", "example-jobs", "example-operator", "example-agent"],
    }
    assert "resolved" not in from_recipe
    assert from_resolve == from_recipe
    assert from_resolve["summary"]["recipe_name"] == "h100-kind-training" and from_resolve["summary"]["component_count"] == 6


def test_resolve_options_reach_the_recipe_engine(fakes):
    result = plan({"resolve": resolve_options(skip_components=["example-agent"], profile="agentMode=enforce",
                                              component_overrides={"example-jobs": {"namespace": "batch"}})}, fakes)
    by_name = dict((c["name"], c) for c in result["components"])
    assert "example-agent" not in by_name and "example-agent" not in result["resolved"]["deployment_order"]
    assert by_name["example-jobs"]["namespace"] == "batch"


def test_a_bad_criterion_fails_naming_the_field(fakes):
    with pytest.raises(AicrError) as failure:
        plan({"resolve": resolve_options(criteria=dict(CRITERIA, accelerator="h1000"))}, fakes)
    assert failure.value.details["field"] == "resolve.criteria.accelerator"
    assert failure.value.msg.startswith("resolve.criteria.accelerator: invalid accelerator type 'h1000' (valid: a100, ")


@pytest.mark.parametrize("criteria", ["kind", ["service=kind"]])
def test_criteria_that_is_no_mapping_fails_naming_resolve_criteria(fakes, criteria):
    """resolve.criteria is raw (issue 36): the engine refuses anything but a mapping, naming the field."""
    with pytest.raises(AicrError) as failure:
        plan({"resolve": resolve_options(criteria=criteria)}, fakes)
    assert failure.value.msg == "resolve.criteria: a %s is not allowed; use a mapping" % type(criteria).__name__
    assert failure.value.details["field"] == "resolve.criteria"


CLUSTER = {"K8s.server.version": "v1.35.0", "GPU.smi.gpu.model": "NVIDIA H100 80GB HBM3"}


def test_resolve_takes_a_snapshot_as_recipe_resolve_does(fakes):
    # the example catalog's gpu-node-agent mixin needs driver >= 550: a cluster that has it plans the same rollout
    satisfied = plan({"resolve": resolve_options(snapshot=snapshot(dict(CLUSTER, **{"GPU.smi.driver-version": "560.35"})))}, fakes)
    unconstrained = plan({"resolve": resolve_options()}, fakes)
    assert satisfied["resolved"] == unconstrained["resolved"] and "excluded_overlays" not in satisfied["resolved"]
    assert [c["name"] for c in satisfied["components"]] == [c["name"] for c in unconstrained["components"]]


def test_a_snapshot_that_fails_a_constraint_fails_naming_the_excluded_overlay(fakes):
    with pytest.raises(AicrError) as failure:
        plan({"resolve": resolve_options(snapshot=snapshot(dict(CLUSTER, **{"GPU.smi.driver-version": "535.104"})))}, fakes)
    assert failure.value.details["field"] == "resolve.snapshot"
    assert 'profile declaration from overlay "h100-kind-training" was removed by snapshot constraint filtering' in failure.value.msg
    assert any(item["name"] == "h100-kind-training" for item in failure.value.details["excludedOverlays"])


# issue 35: a recipe_resolve result whose secrets were hidden is never deployed ("<hidden>" as a password), and the
# values given in resolve.component_overrides are as secret in the task's output as component_overrides' own.
def test_a_recipe_with_hidden_values_is_refused_before_anything_runs(fakes):
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe.resolve import shown
    registered = resolve_from_options(resolve_options(component_overrides={"example-jobs": {"values": {"db": {"password": "pw-123456"}}}}))
    with pytest.raises(AicrError) as failure:
        plan({"recipe": shown(registered)}, fakes)
    assert failure.value.msg.startswith("recipe: its secret values are <hidden> (recipe_resolve without show_values); allowed: resolve")
    assert plan({"recipe": shown(resolve_from_options(resolve_options()))}, fakes)["summary"]["component_count"] == 6, \
        "a result with nothing hidden deploys as before"


def test_resolve_component_overrides_secrets_are_no_log_values():
    from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import secret_params
    params = {"resolve": resolve_options(component_overrides={"example-jobs": {"values": {"db": {"password": "pw-123456"}}}}),
              "component_overrides": {}, "sensitive_values": None}
    assert "pw-123456" in secret_params(params)
