# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The snapshot's GPU driver state on a resolved recipe, as AICR v0.19.0's ``recipe --snapshot`` records it.

After a recipe is resolved against a snapshot, AICR reads the first ``GPU`` measurement's ``hardware`` subtype (NFD's
PCI discovery on the sampled GPU node):

* ``gpu-present: false`` or a ``gpu-count`` of 0: no GPU was sampled - nothing is recorded;
* ``driver-loaded`` (a boolean; absent or another type means unknown - nothing is recorded): ``true`` records
  ``metadata.gpuDriverState: preinstalled``, ``false`` records ``absent`` (``aicr bundle`` then refuses a recipe that
  expects a preinstalled driver);
* ``preinstalled`` and a recipe whose gpu-operator values already turn the operator's driver off (``driver.enabled:
  false``, the preinstalled-driver overlays) also get ``driver: {enabled: false}`` in gpu-operator's ``overrides``,
  unless the selected configuration profile owns ``driver.enabled``. Any other recipe is left as it is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snapshot_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import values as values_mod

GPU_OPERATOR = "gpu-operator"
PREINSTALLED = "preinstalled"
ABSENT = "absent"
DRIVER_ENABLED = "driver.enabled"


def _zero(count):
    if isinstance(count, bool) or not isinstance(count, (int, float)):
        return False
    return count == 0


def driver_state(snap):
    """``preinstalled``, ``absent`` or "" (unknown, or no GPU on the sampled node)."""
    hardware = snapshot_mod.subtype(snapshot_mod.measurement(snap, "GPU"), "hardware")
    if hardware is None:
        return ""
    readings = hardware.get("data") or {}
    if readings.get("gpu-present") is False or _zero(readings.get("gpu-count")):
        return ""
    loaded = readings.get("driver-loaded")
    if not isinstance(loaded, bool):
        return ""
    return PREINSTALLED if loaded else ABSENT


def _paths_intersect(a, b):
    left, right = a.split("."), b.split(".")
    return all(x == y for x, y in zip(left, right))


def profile_owns(result, component, path):
    selected = result["metadata"].get("selectedProfile") or {}
    return any(_paths_intersect(owned, path) for owned in (selected.get("ownedPaths") or {}).get(component) or [])


def _preinstalled_profile(catalog, ref):
    """Do the gpu-operator's values (values files + overrides) turn the operator's driver off?"""
    values, _files = values_mod.component_values(catalog, ref)
    driver = values.get("driver")
    return isinstance(driver, dict) and driver.get("enabled") is False


def apply(catalog, result, snap):
    """Record the driver state in ``result`` (an AICR RecipeResult dict) and turn the driver off where AICR does."""
    state = driver_state(snap)
    result["metadata"].pop("gpuDriverState", None)
    if state:
        result["metadata"]["gpuDriverState"] = state
    if state != PREINSTALLED or profile_owns(result, GPU_OPERATOR, DRIVER_ENABLED):
        return
    for ref in result["componentRefs"]:
        if ref["name"] != GPU_OPERATOR:
            continue
        if not _preinstalled_profile(catalog, ref):
            return
        overrides = deep_copy(ref.get("overrides") or {})
        if not isinstance(overrides.get("driver"), dict):
            overrides["driver"] = {}
        overrides["driver"]["enabled"] = False
        ref["overrides"] = overrides
        return
