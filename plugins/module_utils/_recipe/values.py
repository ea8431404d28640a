# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A component's effective Helm values.

Lowest to highest precedence: ``components/<name>/values.yaml`` (only when ``valuesFile`` points elsewhere),
``valuesFile``, ``overrides``, node scheduling (``scheduling``: AICR's bundle-time selectors and tolerations), then the
user's ``component_overrides[name].values``, each merged with
``_common.values.merge_null_deletes`` (a ``null`` deletes the key). AICR's ``overrides`` themselves were
merged across overlays, mixins and profiles with ``merge_null_kept``, so their ``null`` survives to delete here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import scheduling


def component_values(catalog, ref, user_values=None, node_scheduling=None):
    """Effective values of one resolved componentRef (see the module docstring for the order); with
    ``node_scheduling`` (``scheduling.settings``) written after ``overrides`` and before the user's values.

    Returns ``(values, files)`` where ``files`` lists the values files read, in order.
    """
    result = {}
    files = []
    values_file = ref.get("valuesFile") or ""
    field = "component %s valuesFile" % ref["name"]
    if values_file:
        base_file = "components/%s/values.yaml" % ref["name"]
        if values_file != base_file and catalog.has_file(base_file):
            files.append(base_file)
            result = merge_null_deletes(catalog.values_doc(base_file, field), catalog.values_doc(values_file, field))
        else:
            result = deep_copy(catalog.values_doc(values_file, field))
        files.append(values_file)
    if ref.get("overrides"):
        result = merge_null_deletes(result, ref["overrides"])
    if node_scheduling is not None:
        result = scheduling.apply(result, catalog.registry.get(ref["name"]), ref.get("overrides"), node_scheduling)
    if user_values:
        result = merge_null_deletes(result, user_values)
    return result, files
