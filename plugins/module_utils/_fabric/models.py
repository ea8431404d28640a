# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fabric's model names and free pools (:class:`ModelsAndPools`, given the run's backend), before anything changes.

- A model that differs only in case is the fabric's spelling (machine devices, then ``backend.pool_models``, then -
  FTI FM, which cannot list its models - the free pool under other spellings), with a warning.
- All or nothing: the deficits drawing on one free pool (``backend.pool_key``) are added up, and a pool that cannot
  cover them fails every machine on it before its first attach.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


class ModelsAndPools:
    """Model spellings and the all-or-nothing pool check over one fabric ``backend``."""

    def __init__(self, backend):
        self.backend = backend

    def resolve_model(self, run, target, devices):
        """The fabric's spelling of ``target.model``: exact, else the one model on the machine (or in the pool) that differs
        only in case (with a warning naming it). A present target whose model the fabric does not know fails listing the
        models it has; an absent one of a model the machine does not hold says so."""
        requested = target.model
        if not requested:
            return
        held = sorted(set(d.model for d in devices if d.type == target.type and d.model))
        if requested in held:
            return
        folded = [m for m in held if m.lower() == requested.lower()]
        if len(folded) == 1:
            return self.respell(run, target, folded[0], "on the machine")
        if target.state == "absent":
            if not target.devices and not self.known_model(run, target):
                run.warnings.append("%s: no %s of model %s on the machine (it holds: %s); nothing to detach"
                                    % (target.label, target.type, requested, ", ".join(held) or "no %s" % target.type))
            return
        offered = self.backend.pool_models(run.machine_id, target.type)
        if offered is None:
            return  # FTI FM cannot list its models: the free-pool check tries the other spellings (pool_need)
        if requested in offered:
            return
        folded = [m for m in offered if m.lower() == requested.lower()]
        if len(folded) == 1:
            return self.respell(run, target, folded[0], "in the pool")
        if target.count:
            raise AicrError("%s: model %s is not a %s model of this fabric; the machine holds %s, the pool offers %s"
                            % (target.label, requested, target.type, ", ".join(held) or "none", ", ".join(offered) or "none"),
                            field="model", machine_models=held, pool_models=list(offered))

    def known_model(self, run, target):
        """Whether the fabric knows ``target.model`` exactly: in its model list, or (FTI FM, no list) free in its pool."""
        offered = self.backend.pool_models(run.machine_id, target.type)
        if offered is not None:
            return target.model in offered
        try:
            return bool(self.backend.free_count(run.machine_id, target.type, target.model))
        except AicrError:
            return False

    @staticmethod
    def respell(run, target, spelling, where):
        """``target.model`` becomes the fabric's ``spelling`` (the one given kept as ``requested_model``), with a warning."""
        run.warnings.append("%s: model %s matched the fabric's %s %s (case-insensitive); write model: %s to silence this warning"
                            % (target.label, target.model, spelling, where, spelling))
        target.requested_model = target.model
        target.model = spelling

    def pool_need(self, run, target, devices, deficit):
        """Note the deficit and the free pool for it; with FTI FM (no model list) a pool with nothing free under the spelling
        given is asked for its lower- and upper-case forms too."""
        free = self.backend.free_count(run.machine_id, target.type, target.model)
        tried = [target.model]
        if free == 0 and target.model and self.backend.pool_models(run.machine_id, target.type) is None:
            held = set(d.model for d in devices if d.type == target.type)
            if target.model not in held:
                for spelling in (target.model.lower(), target.model.upper()):
                    if spelling in tried:
                        continue
                    tried.append(spelling)
                    other = self.backend.free_count(run.machine_id, target.type, spelling)
                    if other:
                        self.respell(run, target, spelling, "in the pool")
                        free = other
                        break
        run.needs.append({"target": target, "deficit": deficit, "free": free, "tried": tried,
                          "held": sorted(set(d.model for d in devices if d.type == target.type and d.model))})

    def check_pools(self, runs):
        """All or nothing: the deficits drawing on one free pool are added up; when the pool cannot cover them every machine
        that draws on it fails before its first attach."""
        demand = {}
        for run in runs:
            if run.error is not None:
                continue
            for need in run.needs:
                if need["free"] is None:
                    continue
                target = need["target"]
                key = (self.backend.pool_key(run.machine_id), target.type, target.model)
                demand.setdefault(key, []).append((run, need))
        for key in sorted(demand, key=str):
            items = demand[key]
            total = sum(need["deficit"] for _run, need in items)
            free = min(need["free"] for _run, need in items)
            if total <= free:
                continue
            for run, need in items:
                if run.error is not None:
                    continue
                target = need["target"]
                others = sorted(set(r.node or r.machine_id for r, _need in items if r is not run))
                shared = " (%d with %s on the same pool)" % (total, ", ".join(others)) if others else ""
                msg = "%s: %d × %s requested%s, %d free, nothing attached" % (
                    target.label, need["deficit"], target.model or "%s (any model)" % target.type, shared, free)
                if free == 0 and target.model and len(need["tried"]) > 1:
                    spellings = " or ".join(need["tried"])
                    msg += "; no free %s is spelled %s (the machine holds: %s)" % (target.type, spellings, ", ".join(need["held"]) or "none")
                run.error = msg
                run.error_details = {"free": free, "needed": need["deficit"], "pool_needed": total, "model": target.model}
