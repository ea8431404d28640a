"""_recipe.scheduling: node scheduling written as AICR v0.19.0's bundler writes it (pkg/bundler, pkg/component)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import scheduling

EXISTS = [{"operator": "Exists"}]
ENTRY = {
    "nodeScheduling": {
        "system": {"nodeSelectorPaths": ["operator.nodeSelector"], "tolerationPaths": ["operator.tolerations", "worker.tolerations"]},
        "accelerated": {"nodeSelectorPaths": ["daemonsets.nodeSelector"], "tolerationPaths": ["daemonsets.tolerations", "worker.tolerations"],
                        "taintStrPaths": ["runtimeRequiredTaint"]},
        "nodeCountPaths": ["estimatedNodeCount", "deep.count"],
    },
    "podScheduling": {"workload": {"workloadSelectorPaths": ["workloadSelector"]}},
}
FULL = {
    "system": {"node_selector": {"pool": "sys"}, "tolerations": ["dedicated=system:NoSchedule"]},
    "accelerated": {"node_selector": {"pool": "gpu"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    "nodes": 4, "workload_gate": "skyhook.nvidia.com=runtime-required:NoSchedule", "workload_selector": {"app": "train"},
}


def _apply(values, option=None, overrides=None, entry="the test's"):
    return scheduling.apply(values, ENTRY if entry == "the test's" else entry, overrides, scheduling.settings(option))


def test_no_option_writes_aicrs_default_tolerations_and_nothing_else():
    assert _apply({"operator": {"image": "x"}}) == {
        "operator": {"image": "x", "tolerations": EXISTS}, "worker": {"tolerations": EXISTS}, "daemonsets": {"tolerations": EXISTS}}


def test_every_path_kind_is_written():
    out = _apply({"deep": {}}, FULL)
    sys_tol = [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]
    gpu_tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert out == {
        "operator": {"nodeSelector": {"pool": "sys"}, "tolerations": sys_tol},
        "daemonsets": {"nodeSelector": {"pool": "gpu"}, "tolerations": gpu_tol},
        "worker": {"tolerations": gpu_tol},  # named by both: replaced twice, the accelerated tolerations win
        "workloadSelector": {"app": "train"},
        "runtimeRequiredTaint": "skyhook.nvidia.com=runtime-required:NoSchedule",
        "estimatedNodeCount": 4, "deep": {"count": 4},
    }


def test_selectors_and_tolerations_replace_and_create_parents():
    out = _apply({"operator": {"nodeSelector": {"old": "1"}, "tolerations": [{"key": "old"}]}, "daemonsets": "not-a-map"}, FULL)
    assert out["operator"]["nodeSelector"] == {"pool": "sys"} and out["operator"]["tolerations"][0]["key"] == "dedicated"
    assert out["daemonsets"]["nodeSelector"] == {"pool": "gpu"}


def test_scalars_skip_a_path_under_a_non_mapping_as_aicrs_strict_set_does():
    out = _apply({"deep": "scalar"}, FULL)
    assert out["deep"] == "scalar" and out["estimatedNodeCount"] == 4


def test_node_count_zero_and_no_gate_write_nothing():
    out = _apply({}, {"nodes": 0})
    assert "estimatedNodeCount" not in out and "runtimeRequiredTaint" not in out and "workloadSelector" not in out


def test_the_recipes_empty_override_opts_a_path_out():
    values = {"daemonsets": {"tolerations": []}}
    out = _apply(values, FULL, overrides={"daemonsets": {"tolerations": []}, "operator": {"nodeSelector": None}})
    assert out["daemonsets"]["tolerations"] == [] and "nodeSelector" not in out["operator"]
    assert out["daemonsets"]["nodeSelector"] == {"pool": "gpu"}


def test_the_recipes_non_empty_toleration_override_is_appended_to():
    own = [{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]
    out = _apply({"operator": {"tolerations": list(own)}}, None, overrides={"operator": {"tolerations": own}})
    assert out["operator"]["tolerations"] == own + EXISTS
    # a path set by the chart's values file only (not the recipe's overrides) is replaced
    assert _apply({"worker": {"tolerations": list(own)}})["worker"]["tolerations"] == EXISTS


def test_empty_tolerations_write_none_and_the_input_is_not_changed():
    values = {"operator": {}}
    out = _apply(values, {"system": {"tolerations": []}, "accelerated": {"tolerations": []}})
    assert out == {"operator": {}} and values == {"operator": {}}


def test_a_component_without_a_registry_entry_is_untouched():
    assert _apply({"a": 1}, FULL, entry=None) == {"a": 1}


@pytest.mark.parametrize("text,expected", [
    ("*", {"operator": "Exists"}),
    ("k:NoExecute", {"key": "k", "operator": "Exists", "effect": "NoExecute"}),
    ("k=v:PreferNoSchedule", {"key": "k", "operator": "Equal", "value": "v", "effect": "PreferNoSchedule"}),
])
def test_tolerations_in_aicrs_flag_syntax(text, expected):
    assert scheduling.settings({"system": {"tolerations": [text]}})["system"]["tolerations"] == [expected]


@pytest.mark.parametrize("option,field", [
    ("x", "node_scheduling"),
    ({"sytem": {}}, "node_scheduling.sytem"),
    ({"system": {"tolerations": "k:NoSchedule"}}, "node_scheduling.system.tolerations"),
    ({"system": {"tolerations": ["k=v"]}}, "node_scheduling.system.tolerations[0]"),
    ({"accelerated": {"tolerations": ["k:Sometimes"]}}, "node_scheduling.accelerated.tolerations[0]"),
    ({"accelerated": {"tolerations": [{"key": "k", "operator": "Maybe"}]}}, "node_scheduling.accelerated.tolerations[0].operator"),
    ({"accelerated": {"tolerations": [{"operator": "Equal", "value": "v"}]}}, "node_scheduling.accelerated.tolerations[0].operator"),
    ({"accelerated": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}, "node_scheduling.accelerated.tolerations[0].value"),
    ({"accelerated": {"tolerations": [{"key": "k", "tolerationSeconds": "soon"}]}},
     "node_scheduling.accelerated.tolerations[0].tolerationSeconds"),
    ({"system": {"node_selector": {"pool": 3}}}, "node_scheduling.system.node_selector.pool"),
    ({"nodes": -1}, "node_scheduling.nodes"),
    ({"nodes": "many"}, "node_scheduling.nodes"),
    ({"workload_gate": "k=v"}, "node_scheduling.workload_gate"),
    ({"workload_gate": "=v:NoSchedule"}, "node_scheduling.workload_gate"),
    ({"workload_selector": ["app=x"]}, "node_scheduling.workload_selector"),
])
def test_bad_input_is_refused_naming_the_field(option, field):
    with pytest.raises(AicrError) as caught:
        scheduling.settings(option)
    assert caught.value.details["field"] == field
    assert caught.value.msg.startswith("node_scheduling") and "\n" not in caught.value.msg


def test_every_problem_is_listed():
    with pytest.raises(AicrError) as caught:
        scheduling.settings({"nodes": -1, "workload_gate": "x"})
    assert [e["field"] for e in caught.value.details["errors"]] == ["node_scheduling.nodes", "node_scheduling.workload_gate"]
    assert "1 more problem" in caught.value.msg


def test_the_dra_driver_carries_the_gpu_operators_chart_version():
    values = {"nvidia-dra-driver-gpu": {"controller": {"podAnnotations": {"a": "b"}}}, "gpu-operator": {}}
    scheduling.annotate_dra(values, {"gpu-operator": "v26.3.3", "nvidia-dra-driver-gpu": "25.8.0"})
    dra = values["nvidia-dra-driver-gpu"]
    assert dra["controller"]["podAnnotations"] == {"a": "b", scheduling.DRA_CHART_VERSION: "v26.3.3"}
    assert dra["kubeletPlugin"]["podAnnotations"] == {scheduling.DRA_CHART_VERSION: "v26.3.3"}
    lone = {"nvidia-dra-driver-gpu": {}}
    scheduling.annotate_dra(lone, {"nvidia-dra-driver-gpu": "25.8.0"})
    assert lone == {"nvidia-dra-driver-gpu": {}}


def test_resolve_refuses_a_bad_option_before_reading_the_catalog(tmp_path):
    with pytest.raises(AicrError) as caught:
        resolve_mod.resolve(str(tmp_path / "missing"), {"service": "eks"}, persist_cache=False, node_scheduling={"nodes": -1})
    assert caught.value.details["field"] == "node_scheduling.nodes"
