# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a rollout reports: one result per component, the plan (waves), the actions, the diff and the summary.

:class:`ComponentState` is what the survey found and what the run did for one component; its
:meth:`~ComponentState.as_result` is the component result gated_release returns (and hands to ``on_transition``,
which the ClusterStack status writer turns into a status entry).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps, timeline
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import BLOCKED, FAILED, PENDING, READY, REMOVED, UNCHANGED
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift, health
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import good_after, recorded_crds


class ComponentState(object):
    """What the survey found and what the run did, for one component."""

    def __init__(self, comp):
        self.comp = comp
        self.deployed = None
        self.action = "unchanged"
        self.reason = ""
        self.objects = {"pre": [], "post": []}  # [(ManifestObject, action, reason)]
        self.stale_objects = []  # inventory refs no longer rendered
        self.phase = PENDING
        self.message = ""
        self.blocked_by = []
        self.revision = None
        self.started = None
        self.duration = None
        self.changed = False
        self.resources = 0
        self.objects_surveyed = False
        self.health = None  # the health check's entry (``_release.health``), once planned or run
        self.early_start = False  # its helm was started early and waited at its gate (``_release.early``)
        self.waiting_helm = None  # that helm (``helm.EarlyUpgrade``) from the step's start until its gate opens
        # what the inventory records (``_release.inventory.entry_of``)
        self.applied = {}  # {object id: {uid, digest}} of the objects this run applied
        self.release_record = None  # the release this run installed ({uid, revision, digest}), once helm succeeded
        self.release_foreign = False  # the deployed release is not this stack's: the inventory does not record it
        self.left_alone = None  # removal: why the release was not uninstalled
        self.rolled_back = None  # on_failure: rollback: what was decided for it (``_release.rollback``)
        self.chart_crds = []  # the chart CRDs this run applied for it (chart_crds: managed; ``_release.chartcrds``)
        self.drift = None  # drift entries (``_release.drift``) when the run reads drift; None with drift: ignore

    def object_actions(self):
        return [a for wave in ("pre", "post") for (_o, a, _r) in self.objects[wave]]

    def object_refs(self):
        """Every surveyed object as an inventory ref (with its wave)."""
        return [dict(mobj.ref(), wave=wave) for wave in ("pre", "post") for mobj, _a, _r in self.objects[wave]]

    def needs_change(self, prune):
        return self.action != "unchanged" or any(a != "unchanged" for a in self.object_actions()) or bool(prune and self.stale_objects)

    def as_result(self, prev=None):
        """The component result; ``prev``: its inventory entry as read (for ``last_known_good``)."""
        comp = self.comp
        good = good_after(self, prev or {})
        crds = recorded_crds(self, prev or {})
        objs = []
        for wave in ("pre", "post"):
            for mobj, action, reason in self.objects[wave]:
                ref = mobj.ref()
                ref.update({"wave": wave, "action": action, "reason": reason})
                objs.append(ref)
        for ref in self.stale_objects:
            objs.append(dict(ref, action="remove", reason="no longer rendered (prune)"))
        return {
            "name": comp.name, "kind": comp.kind, "phase": self.phase, "blocked_by": list(self.blocked_by),
            "chart": comp.chart or None, "version": comp.version or None, "revision": self.revision, "namespace": comp.namespace,
            "objects": objs, "started": self.started, "duration": self.duration, "message": self.message,
            "action": self.action, "reason": self.reason, "dependencies": list(comp.gate), "changed": self.changed,
            **({"health": dict(self.health)} if self.health is not None else {}),
            **({"early_start": True} if self.early_start else {}),
            **({"rollback": dict(self.rolled_back)} if self.rolled_back is not None else {}),
            **({"last_known_good": int(good["revision"])} if good is not None else {}),
            **({"drift": drift.reported(self.drift)} if self.drift is not None else {}),
            **({"chart_crds": crds} if crds else {})
        }


class Reporter(object):
    """The result of one run (``ctx``: a ``context.RunContext``; ``rollbacker``: the run's ``rollback.RollBacker``, for
    check mode's planned rollbacks; ``crds``: its ``chartcrds.ChartCrdManager``)."""

    def __init__(self, ctx, rollbacker, crds):
        self.ctx = ctx
        self.rollbacker = rollbacker
        self.crds = crds

    def result(self, outcomes, lease):
        plan = self.ctx.plan
        names = list(plan.order) + [n for n, _e in self.ctx.leftovers if n not in plan.by_name]
        if self.ctx.opts.state == "absent" or (self.ctx.opts.prune and self.ctx.leftovers):
            for name, entry in self.ctx.leftovers:
                if name not in self.ctx.states:
                    self.ctx.states[name] = self.ctx.leftover_state(name, entry)
                else:
                    self.ctx.states[name].action = "remove"
                    self.ctx.states[name].reason = self.ctx.leftover_reason(name)
        if self.ctx.opts.state == "absent":
            for name in plan.order:
                st = self.ctx.states[name]
                present = (st.deployed is not None and not st.release_foreign) or bool(self.ctx.inventory.objects_of(name))
                if present:
                    st.action, st.reason = "remove", "state is absent"
                else:  # a release of another stack (or labelled for this one without its inventory) is never removed
                    st.action, st.reason = "unchanged", "nothing of stack %s deployed" % self.ctx.opts.stack if st.deployed is not None else "nothing deployed"
        if self.ctx.opts.state == "present":
            for name in plan.order:
                if self.ctx.states[name].health is None:
                    self.ctx.states[name].health = health.planned(self.ctx.checks.get(name), name, self.ctx.opts.health)
        components = [self.ctx.states[n].as_result(self.ctx.inventory.loaded_entry(n)) for n in names if n in self.ctx.states]
        changed = any(c["changed"] for c in components)
        if self.ctx.opts.check_mode:
            changed = any(c["action"] != "unchanged" or any(o["action"] != "unchanged" for o in c["objects"]) for c in components) \
                or bool(self._planned_corrections())
        failed = [c for c in components if c["phase"] == FAILED]
        blocked = [c for c in components if c["phase"] == BLOCKED]
        result = {
            "changed": changed,
            "components": components,
            "waves": self._waves(),
            "actions": (list(self.ctx.actions) if not self.ctx.opts.check_mode
                        else _planned_actions(components) + self.rollbacker.planned() + self._planned_corrections()),
            "summary": self._summary(components, failed, blocked),
            "timeline": timeline.gantt(timeline.from_results(components), title="%s of stack %s" % (
                "removal" if self.ctx.opts.state == "absent" else "rollout", self.ctx.opts.stack)),
        }
        if self.ctx.opts.state == "present":
            result["summary"]["health_checks"] = dict((s, sum(1 for c in components if (c.get("health") or {}).get("status") == s))
                                                      for s in set((c.get("health") or {}).get("status") for c in components if c.get("health")))
        if self.ctx.opts.drift != "ignore" and self.ctx.opts.state == "present":
            result["summary"]["drifted"] = [c["name"] for c in components if c.get("drift")]
            if self.ctx.opts.drift == "correct" and not self.ctx.opts.check_mode:  # re-applied, the component then Ready
                result["summary"]["drift_corrected"] = [c["name"] for c in components if c.get("drift") and c["phase"] == READY]
        if lease is not None and lease.taken_over:
            result["summary"]["lease_taken_over_from"] = lease.taken_over
        if self.ctx.opts.diff:
            result["diff"] = self._diff()
        result["foreign_claims"] = list(self.ctx.foreign_claims)
        if self.ctx.opts.on_failure == "rollback":
            result["rollbacks"] = [dict(entry) for entry in self.ctx.rollbacks]
        if self.ctx.warnings:
            result["warnings"] = list(self.ctx.warnings)
        if failed or blocked:
            result["failed_message"] = _failed_message(components, failed, blocked)
        return result

    def refused_up_front(self, refused):
        """The result of a rollout that did not start: the refused components Failed, every other one not started."""
        names = [st.comp.name for st, _field in refused]
        for st in self.ctx.states.values():
            if st.comp.name not in names:
                st.message = "not started: the values of %s were refused before anything was installed" % ", ".join(names)
        result = self.result(None, None)
        # a refusal changed nothing, and in check mode would change nothing either: not the plan's "would install"
        result["changed"] = False
        result["actions"] = list(self.ctx.actions)
        if self.crds.managing():
            result["chart_crds"] = []  # a refused rollout applies no CRD, nor would it in check mode
        result["failed_message"] = "gated_release: %d of %d components refused before anything was installed (nothing was changed): %s" % (
            len(refused), len(self.ctx.plan.order), "; ".join("%s (%s)" % (st.comp.name, st.message) for st, _field in refused))
        result["errors"] = [{"field": field, "component": st.comp.name, "message": st.message} for st, field in refused]
        return result

    def _waves(self):
        waves = []
        for wave in self.ctx.plan.waves():
            entries = []
            for n in wave["components"]:
                acts = self.ctx.states[n].object_actions()
                entries.append({"name": n, "action": self.ctx.states[n].action, "reason": self.ctx.states[n].reason,
                                "objects": dict((a, acts.count(a)) for a in set(acts))})
            waves.append({"wave": wave["wave"], "components": entries})
        if self.ctx.opts.state == "absent":
            waves = [{"wave": w["wave"], "components": w["components"]} for w in reversed(waves)]
        return waves

    def _summary(self, components, failed, blocked):
        reached = [c for c in components if c["phase"] in (READY, UNCHANGED, REMOVED) and c["started"]]
        return {
            "recipe_name": self.ctx.opts.recipe_name, "stack": self.ctx.opts.stack, "state": self.ctx.opts.state,
            "component_count": len(self.ctx.plan.order), "deployed_components": [c["name"] for c in sorted(reached, key=lambda c: c["started"])],
            "skipped_components": list(self.ctx.plan.skipped),
            "failed": [c["name"] for c in failed], "blocked": [c["name"] for c in blocked],
            "phases": dict((p, sum(1 for c in components if c["phase"] == p)) for p in set(c["phase"] for c in components)),
        }

    def _planned_corrections(self):
        """Check mode with drift: correct: what a real run would re-apply."""
        if self.ctx.opts.drift != "correct":
            return []
        return ["would correct drift of %s: %s" % (n, drift.describe(e)) for n in self.ctx.plan.order
                for e in drift.correctable(self.ctx.states[n].drift) if self.ctx.states[n].action == "unchanged"]

    def _drift_diff(self):
        """``--diff`` of the drifted fields: live (before) and what we last applied (after); a Secret's values hidden."""
        diffs = []
        for name in self.ctx.plan.order:
            for entry in self.ctx.states[name].drift or []:
                what = "%s %s %s/%s" % (name, entry["kind"], entry.get("namespace") or "-", entry["name"])
                diffs.append({
                    "before_header": "%s (live%s)" % (what, ", missing" if entry["state"] == "missing" else ""),
                    "after_header": "%s (last applied)" % what,
                    "before": deps.yaml.safe_dump(entry["before"], default_flow_style=False, sort_keys=True) if entry["before"] else "",
                    "after": deps.yaml.safe_dump(entry["after"], default_flow_style=False, sort_keys=True) if entry["after"] else "",
                })
        return diffs

    def _diff(self):
        diffs = self._drift_diff()
        for name in self.ctx.plan.order:
            st = self.ctx.states[name]
            if st.comp.manifest_only:
                continue
            before = st.deployed.values if st.deployed is not None else None
            after = st.comp.values if self.ctx.opts.state == "present" else None
            if before == after and st.action == "unchanged":
                continue
            # values under sensitive paths never leave the run: <hidden>, or <changed> after when they changed
            before, after = self.ctx.opts.sensitive.redact_pair(before, after)
            diffs.append({
                "before_header": "%s values (revision %s)" % (name, st.deployed.revision) if st.deployed is not None else "%s (not installed)" % name,
                "after_header": "%s values (%s)" % (name, st.action),
                "before": deps.yaml.safe_dump(before, default_flow_style=False, sort_keys=True) if before is not None else "",
                "after": deps.yaml.safe_dump(after, default_flow_style=False, sort_keys=True) if after is not None else "",
            })
        return diffs


def _planned_actions(components):
    acts = []
    for c in components:
        if c["action"] != "unchanged":
            acts.append("would %s %s (%s)" % (c["action"], c["name"], c["reason"]))
        for o in c["objects"]:
            if o["action"] != "unchanged":
                acts.append("would %s object %s (%s)" % ("apply" if o["action"] in ("create", "update") else o["action"], o["id"], o["reason"]))
    return acts


def _failed_message(components, failed, blocked):
    parts = []
    if failed:
        parts.append("failed: " + "; ".join("%s (%s)" % (c["name"], c["message"]) for c in failed))
    if blocked:
        parts.append("blocked: " + "; ".join("%s (by %s)" % (c["name"], ", ".join(c["blocked_by"]) or c["message"]) for c in blocked))
    return "gated_release: %d of %d components did not converge; %s" % (len(failed) + len(blocked), len(components), " | ".join(parts))
