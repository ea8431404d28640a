# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options that resolve a recipe, shared by ``recipe_resolve`` and ``gated_release``'s ``resolve``.

Both modules must coerce and check criteria the same way (a survey answer ``"4"`` for ``nodes`` is an
int in both), so the argument spec lives here once, next to :func:`resolve_from_options`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CRITERIA_SPEC = dict(
    service=dict(type="str"),
    accelerator=dict(type="str"),
    intent=dict(type="str"),
    os=dict(type="str"),
    platform=dict(type="str"),
    nodes=dict(type="int"),
)

RESOLVE_SPEC = dict(
    catalog=dict(type="path", required=True),
    criteria=dict(type="dict", default={}, options=CRITERIA_SPEC),
    profile=dict(type="str"),
    skip_components=dict(type="list", elements="str", default=[]),
    component_overrides=dict(type="dict", default={}),
    use_cache=dict(type="bool", default=True),
)

# A Snapshot, a cluster_facts result, or the path of a Snapshot file: recipe_resolve's option and gated_release's
# ``resolve.snapshot``.
SNAPSHOT_SPEC = dict(snapshot=dict(type="raw"))


def resolve_from_options(options, cache_dir=None, check_mode=False):
    """``resolve.resolve`` from validated RESOLVE_SPEC options; check mode reads the catalog cache but never writes it."""
    # Imported here so that importing the argument spec does not import the engine.
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod  # pylint: disable=import-outside-toplevel

    criteria = dict((key, value) for key, value in (options.get("criteria") or {}).items() if value is not None)
    return resolve_mod.resolve(
        options["catalog"],
        criteria=criteria,
        profile=options.get("profile"),
        skip_components=options.get("skip_components") or [],
        component_overrides=options.get("component_overrides") or {},
        cache_dir=cache_dir,
        persist_cache=options.get("use_cache", True),
        write_cache=not check_mode,
        snapshot=options.get("snapshot"),
    )
