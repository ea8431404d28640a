# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The readiness pre-flight: the recipe's constraints evaluated on the cluster's facts before any change.

AICR's ``aicr validate`` starts with ``checkReadiness``: every top-level ``constraints`` entry of the recipe is
evaluated on a Snapshot with AICR's evaluator (here ``_recipe.constraints.evaluate``, the one evaluator). The facts
are, in order: ``snapshot`` (a Snapshot, a cluster_facts result or a file; gated_release's own option or
``resolve.snapshot``), or - with ``preflight: live`` - the cluster read through the API as cluster_facts reads it
(``_recipe.facts.build_snapshot``; the identity needs get/list on nodes). ``preflight: auto`` (the default) runs
when a snapshot is given; ``never`` never.

Outcome per constraint: ``passed``, ``failed`` (expected vs actual), ``skipped`` (the snapshot lacks the
measurement: AICR's graceful signal, a warning) or ``error`` (a malformed constraint or an unparseable version:
AICR skips these with a warning; here they fail closed, a pre-flight must not pass on what it cannot evaluate).
Any failed or error constraint fails the run before the Lease, the inventory or any release is touched; check mode
reports the same.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import aicrerrors, facts
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as constraints_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snapshot_mod

MODES = ("auto", "live", "never")


def constraints_of(recipe):
    """The recipe's top-level constraints (``[{name, value}]``) of a recipe_resolve result; [] for a components list."""
    if not isinstance(recipe, dict):
        return []
    return [c for c in (recipe.get("recipe") or {}).get("constraints") or [] if isinstance(c, dict)]


def live_snapshot(cluster):
    """The cluster's facts as a Snapshot, read through the API (``cluster_facts``' reading: version and nodes)."""
    try:
        version = cluster.get_path("/version") or {}
        snap, _chosen, _conflicts = facts.build_snapshot(version, cluster.list("v1", "Node"))
    except AicrError as exc:
        # say why the nodes were read: a 403 here is the identity lacking get/list on nodes, which only this mode needs
        details = dict(exc.details, field="preflight", value="live")
        raise AicrError("preflight: live: the cluster's facts could not be read (this mode needs get/list on nodes; give a "
                        "snapshot or use preflight: never otherwise): %s" % exc.msg, **details)
    return snap


def evaluate(constraints, snap, source):
    """The pre-flight result: ``{passed, source, constraints: [...], failed: [...], skipped: [...]}`` (nothing raised)."""
    entries = []
    for constraint in constraints:
        result = constraints_mod.evaluate(constraint, snap)
        entry = {"name": constraint.get("name") or "", "expected": str(constraint.get("value") or ""), "actual": result.actual}
        if result.error_code == constraints_mod.NOT_FOUND:
            entry.update(outcome="skipped", message=aicrerrors.message(result.error))
        elif result.error:
            entry.update(outcome="error", message=aicrerrors.message(result.error))
        elif result.passed:
            entry.update(outcome="passed", message="")
        else:
            entry.update(outcome="failed", message="expected %s, got %s" % (entry["expected"], result.actual or "(empty)"))
        entries.append(entry)
    failing = [e for e in entries if e["outcome"] in ("failed", "error")]
    return {"passed": not failing, "source": source, "constraints": entries,
            "failed": [e["name"] for e in failing], "skipped": [e["name"] for e in entries if e["outcome"] == "skipped"]}


def run(mode, recipe, snapshot=None, cluster=None):
    """The pre-flight of ``recipe`` (a recipe_resolve result) or None when it does not run; raises AicrError for a bad option."""
    if mode not in MODES:
        raise AicrError("preflight: %r is not allowed; use %s" % (mode, ", ".join(MODES)), field="preflight")
    if mode == "never" or (mode == "auto" and snapshot is None):
        return None
    constraints = constraints_of(recipe)
    if snapshot is not None:
        snap, source = snapshot_mod.load(snapshot), "snapshot"
    else:
        snap, source = live_snapshot(cluster), "cluster"
    return evaluate(constraints, snap, source)


def failure_message(result):
    """The one-line message of a pre-flight that did not pass."""
    parts = []
    for entry in result["constraints"]:
        if entry["outcome"] == "failed":
            parts.append("%s expected %s, got %s" % (entry["name"], entry["expected"], entry["actual"] or "(empty)"))
        elif entry["outcome"] == "error":
            parts.append("%s (%s): %s" % (entry["name"], entry["expected"], entry["message"]))
    return "preflight: %d of %d constraint(s) not met on the %s; nothing was changed: %s" % (
        len(parts), len(result["constraints"]), "given snapshot" if result["source"] == "snapshot" else "cluster's facts", "; ".join(parts))
