"""The snapshot's GPU driver state on a resolved recipe (AICR v0.19.0's ``applyGPUDriverAutoOverride``), on the real catalog."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import gpudriver
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod


def _snap(hardware):
    measurements = [{"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.35.0"}}]}]
    if hardware is not None:
        measurements.append({"type": "GPU", "subtypes": [{"subtype": "hardware", "data": hardware}]})
    return snap_mod.check({"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": measurements})


@pytest.mark.parametrize("hardware,state", [
    (None, ""),
    ({"gpu-present": True, "gpu-count": 8}, ""),  # no driver-loaded reading: unknown
    ({"gpu-present": True, "gpu-count": 8, "driver-loaded": True}, "preinstalled"),
    ({"gpu-present": True, "gpu-count": 8, "driver-loaded": False}, "absent"),
    ({"gpu-present": True, "gpu-count": 8, "driver-loaded": "true"}, ""),  # not a boolean: unknown
    ({"gpu-present": False, "gpu-count": 0, "driver-loaded": False}, ""),  # no GPU on the sampled node
    ({"gpu-count": 0.0, "driver-loaded": True}, ""),
    ({"gpu-count": False, "driver-loaded": True}, "preinstalled"),  # a boolean is no count
])
def test_driver_state(hardware, state):
    assert gpudriver.driver_state(_snap(hardware)) == state


def _resolved(cat, criteria, profile=None):
    return resolve_mod.build_recipe(cat, crit.parse_criteria(criteria, cat.registered), profile)


def _gpu_operator(result):
    return [ref for ref in result["componentRefs"] if ref["name"] == "gpu-operator"][0]


def test_preinstalled_driver_on_a_preinstalled_driver_recipe_turns_the_operator_driver_off(aicr_catalog):
    # OKE's gpu-operator values already say driver.enabled: false; no profile owns the path
    result = _resolved(aicr_catalog, {"service": "oke", "accelerator": "gb200", "os": "ol", "intent": "training"})
    before = dict(_gpu_operator(result).get("overrides") or {})
    gpudriver.apply(aicr_catalog, result, _snap({"gpu-present": True, "gpu-count": 4, "driver-loaded": True}))
    assert result["metadata"]["gpuDriverState"] == "preinstalled"
    assert _gpu_operator(result)["overrides"]["driver"]["enabled"] is False
    assert dict((k, v) for k, v in _gpu_operator(result)["overrides"].items() if k != "driver") == \
        dict((k, v) for k, v in before.items() if k != "driver")


def test_preinstalled_driver_elsewhere_is_only_recorded(aicr_catalog):
    result = _resolved(aicr_catalog, {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"})
    refs = [dict(ref) for ref in result["componentRefs"]]
    gpudriver.apply(aicr_catalog, result, _snap({"gpu-present": True, "gpu-count": 8, "driver-loaded": True}))
    assert result["metadata"]["gpuDriverState"] == "preinstalled" and result["componentRefs"] == refs


def test_a_profile_that_owns_the_driver_is_left_alone(aicr_catalog):
    result = _resolved(aicr_catalog, {"service": "aks", "accelerator": "h100", "intent": "training"})
    assert gpudriver.profile_owns(result, "gpu-operator", "driver.enabled")
    refs = [dict(ref) for ref in result["componentRefs"]]
    gpudriver.apply(aicr_catalog, result, _snap({"gpu-present": True, "gpu-count": 8, "driver-loaded": True}))
    assert result["metadata"]["gpuDriverState"] == "preinstalled" and result["componentRefs"] == refs


def test_absent_driver_is_recorded_and_changes_nothing(aicr_catalog):
    result = _resolved(aicr_catalog, {"service": "oke", "accelerator": "gb200", "os": "ol", "intent": "training"})
    refs = [dict(ref) for ref in result["componentRefs"]]
    gpudriver.apply(aicr_catalog, result, _snap({"gpu-present": True, "gpu-count": 4, "driver-loaded": False}))
    assert result["metadata"]["gpuDriverState"] == "absent" and result["componentRefs"] == refs
    gpudriver.apply(aicr_catalog, result, _snap(None))  # re-applied to an unknown state: the field goes
    assert "gpuDriverState" not in result["metadata"]
