# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A resolution from recipe_resolve's options (``_recipe.options.RESOLVE_SPEC``): the recipe_resolve module's and
gated_release's ``resolve`` (``_entry.gated_release_inputs``) one way into ``_recipe.resolve``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod


def resolve_from_options(options, cache_dir=None, check_mode=False):
    """``resolve.resolve`` from validated RESOLVE_SPEC options; check mode reads the catalog cache but never writes it."""
    criteria = options.get("criteria")
    if isinstance(criteria, dict):  # anything else is refused by check_inputs, naming criteria
        criteria = dict((key, value) for key, value in criteria.items() if value is not None)
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
        node_scheduling=options.get("node_scheduling"),
    )
