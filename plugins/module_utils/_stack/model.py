# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ClusterStack status model: phase, conditions, components, devices, history.

Every function is pure: it takes the current status (a dict, never mutated) and returns a new one.
Conditions have the standard shape (type, status, reason, message, lastTransitionTime,
observedGeneration); ``lastTransitionTime`` changes only when ``status`` changes. History is a FIFO
of at most ``HISTORY_LIMIT`` events (oldest evicted first).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import DEGRADED, DEPLOYING, FAILED, PENDING, READY, REMOVED
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_PHASES as PHASES
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STATUS_PHASE_OF as RELEASE_PHASES
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

CONDITION_TYPES = ("Ready", "RecipeResolved", "DevicesReady", "PreflightPassed", "ComponentsReady", "HealthChecksPassed", "CatalogCurrent")
CONDITION_STATUSES = ("True", "False", "Unknown")
HISTORY_LIMIT = 50
COMPONENT_FIELDS = ("name", "kind", "namespace", "chart", "version", "revision", "ready", "phase", "blockedBy", "message",
                    "healthCheck", "lastTransitionTime", "timing")
ROLLBACK_EVENTS = {"rolled_back": "RolledBack", "refused": "RollbackRefused", "failed": "RollbackFailed", "left": "RollbackNotDone"}
HEALTH_FIELDS = ("status", "message", "check", "step", "resource", "expression", "expected", "actual")
DEVICE_FIELDS = ("node", "type", "model", "resUUID", "serial", "state")


def _require(value, allowed, field):
    if value not in allowed:
        raise AicrError("%s: %r is not allowed; allowed: %s" % (field, value, ", ".join(allowed)), field=field, value=value)


def set_condition(conditions, ctype, status, reason="", message="", generation=None, now=None):
    """Return ``conditions`` with ``ctype`` set; ``lastTransitionTime`` moves only when ``status`` changes."""
    _require(ctype, CONDITION_TYPES, "conditions[].type")
    status = {True: "True", False: "False", None: "Unknown"}.get(status, status) if not isinstance(status, str) else status
    _require(status, CONDITION_STATUSES, "conditions[].status")
    now = now or timeutil.now_rfc3339()
    result = []
    found = None
    for cond in conditions or []:
        if cond.get("type") == ctype:
            found = cond
        else:
            result.append(copy.deepcopy(cond))
    new = {"type": ctype, "status": status, "reason": reason or ("Unknown" if status == "Unknown" else ctype),
           "message": message or ""}
    if generation is not None:
        new["observedGeneration"] = int(generation)
    elif found and "observedGeneration" in found:
        new["observedGeneration"] = found["observedGeneration"]
    if found and found.get("status") == status and found.get("lastTransitionTime"):
        new["lastTransitionTime"] = found["lastTransitionTime"]
    else:
        new["lastTransitionTime"] = now
    result.append(new)
    order = dict((t, i) for i, t in enumerate(CONDITION_TYPES))
    result.sort(key=lambda c: order.get(c.get("type"), len(order)))
    return result


def get_condition(status, ctype):
    for cond in (status or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def add_events(history, events, now=None, limit=HISTORY_LIMIT):
    """Append events (dicts with type and message, or strings) and keep the newest ``limit``."""
    now = now or timeutil.now_rfc3339()
    result = copy.deepcopy(list(history or []))
    for event in events or []:
        if isinstance(event, str):
            event = {"type": "Info", "message": event}
        if not isinstance(event, dict) or not event.get("message"):
            raise AicrError("events[]: %r is not allowed; allowed: a string or a dict with type and message" % (event,), field="events")
        result.append({"time": event.get("time") or now, "type": str(event.get("type") or "Info"), "message": str(event["message"])})
    return result[-limit:] if limit and len(result) > limit else result


def component_entry(component, previous=None, now=None):
    """A status ``components[]`` entry from a gated_release component result (or an entry already in status shape)."""
    now = now or timeutil.now_rfc3339()
    name = component.get("name")
    if not name:
        raise AicrError("components[].name: missing; allowed: every component needs a name", field="components")
    raw_phase = component.get("phase") or PENDING
    phase = RELEASE_PHASES.get(raw_phase)
    if phase is None:
        raise AicrError("components[%s].phase: %r is not allowed; allowed: %s" % (name, raw_phase, ", ".join(sorted(RELEASE_PHASES))),
                        field="components", value=raw_phase)
    entry = {"name": name, "kind": component.get("kind") or "release", "namespace": component.get("namespace") or "",
             "chart": component.get("chart") or "", "version": str(component.get("version") or ""),
             "revision": int(component.get("revision") or 0), "ready": phase == READY, "phase": phase,
             "blockedBy": list(component.get("blocked_by", component.get("blockedBy")) or []),
             "message": str(component.get("message") or "")[:1024]}
    health = health_entry(component.get("health", component.get("healthCheck")))
    if health is None and previous and previous.get("healthCheck") and raw_phase in (PENDING, DEPLOYING):
        health = copy.deepcopy(previous["healthCheck"])  # a component being verified keeps its last check until it is run again
    if health is not None:
        entry["healthCheck"] = health
    timing = timing_entry(component)
    if timing is None and previous and previous.get("timing"):
        timing = copy.deepcopy(previous["timing"])  # the last finished rollout's timing stays until this one finishes
    if timing is not None:
        entry["timing"] = timing
    good = component.get("last_known_good", component.get("lastKnownGood", (previous or {}).get("lastKnownGood")))
    if good:
        entry["lastKnownGood"] = int(good)
    rollback = rollback_entry(component.get("rollback", component.get("rolledBack")))
    if rollback is not None:
        entry["rolledBack"] = rollback
    elif previous and previous.get("rolledBack") and phase != READY:
        entry["rolledBack"] = copy.deepcopy(previous["rolledBack"])  # kept until the component is Ready again
    drifted = drift_entries(component.get("drift"))
    if drifted is not None:
        entry["drift"] = drifted
    elif previous and "drift" in previous and "drift" not in component:
        entry["drift"] = list(previous["drift"])  # a transition that does not say keeps what the last survey found
    crds = component.get("chart_crds", component.get("chartCrds", (previous or {}).get("chartCrds")))
    if crds:
        entry["chartCrds"] = sorted(str(c) for c in crds)[:200]  # the chart CRDs the stack applied (gated_release chart_crds: managed)
    if previous and previous.get("phase") == phase and previous.get("lastTransitionTime"):
        entry["lastTransitionTime"] = previous["lastTransitionTime"]
    else:
        entry["lastTransitionTime"] = component.get("lastTransitionTime") or now
    return entry


def timing_entry(component):
    """A status ``timing`` ({start, seconds, checkSeconds, after}: the timing of the last rollout that changed (or
    failed) one component, what ``_common.timeline.from_status`` draws) from a finished gated_release component result,
    or an entry already in status shape; None while it has not finished, never ran or was left unchanged."""
    timing = component.get("timing")
    if isinstance(timing, dict):
        return copy.deepcopy(timing) if timing.get("start") else None
    seconds, check = _seconds(component.get("duration")), _seconds((component.get("health") or {}).get("duration"))
    if not component.get("started") or seconds is None:
        return None
    if not component.get("changed") and component.get("phase") != FAILED:
        return None  # a run that left it unchanged keeps the timing of the rollout that changed it: a no-op run writes no status
    entry = {"start": str(component["started"]), "seconds": seconds, "after": [str(d) for d in component.get("dependencies") or []]}
    if check:
        entry["checkSeconds"] = check
    return entry


def _seconds(value):
    """``value`` as seconds rounded to milliseconds; None when it is not a number."""
    try:
        return round(float(value), 3)
    except (TypeError, ValueError):
        return None


def rollback_entry(rollback):
    """A status ``rolledBack`` ({status, from, to, revision, reason, message}) from a gated_release component's
    ``rollback`` (``on_failure: rollback``; or an entry already in status shape); None without one."""
    if not isinstance(rollback, dict) or not rollback.get("status"):
        return None
    entry = dict((k, str(rollback[k])[:1024]) for k in ("status", "reason", "message") if rollback.get(k))
    entry.update((k, int(rollback[k])) for k in ("from", "to", "revision") if isinstance(rollback.get(k), int))
    return entry


def drift_entries(found, limit=20):
    """A status ``drift`` list (``Kind namespace/name: /path (manager), ...`` or ``... missing``) from a gated_release
    component's ``drift`` (or strings already in status shape); None when the result says nothing of drift."""
    if not isinstance(found, list):
        return None
    entries = []
    for item in found[:limit]:
        if not isinstance(item, dict):
            entries.append(str(item)[:512])
            continue
        what = "%s %s/%s" % (item.get("kind"), item.get("namespace") or "-", item.get("name"))
        fields = ", ".join("%s (%s)" % (f.get("path"), f.get("manager") or "removed") for f in item.get("fields") or [])
        entries.append(("%s: %s" % (what, fields if item.get("state") == "drifted" else item.get("state")))[:512])
    return entries


def drift_condition(rollout):
    """The ``Drifted`` condition a gated_release result implies when it read drift (``summary.drifted``); else None."""
    drifted = ((rollout or {}).get("summary") or {}).get("drifted")
    if drifted is None:
        return None
    corrected = ((rollout or {}).get("summary") or {}).get("drift_corrected") or []
    remaining = [n for n in drifted if n not in corrected]
    if remaining:
        return {"type": "Drifted", "status": "True", "reason": "LiveObjectsDiffer",
                "message": ("live objects differ from what the stack last applied: %s" % ", ".join(remaining))[:1024]}
    if corrected:
        return {"type": "Drifted", "status": "False", "reason": "Corrected", "message": ("drift corrected: %s" % ", ".join(corrected))[:1024]}
    return {"type": "Drifted", "status": "False", "reason": "NoDrift", "message": "every object matches what the stack last applied"}


def health_entry(health):
    """A status ``healthCheck`` ({status, message, and for a failure the step, resource and expression}) from a
    gated_release component's ``health`` (or an entry already in status shape); None without one."""
    if not isinstance(health, dict) or not health.get("status"):
        return None
    return dict((k, str(health[k])[:1024]) for k in HEALTH_FIELDS if health.get(k) not in (None, ""))


def gate_conditions(rollout):
    """The ``PreflightPassed`` and ``HealthChecksPassed`` conditions a gated_release result implies (those it can say)."""
    conditions = []
    pre = (rollout or {}).get("preflight")
    if isinstance(pre, dict):
        if pre.get("passed"):
            conditions.append({"type": "PreflightPassed", "status": "True", "reason": "ConstraintsMet",
                               "message": "%d constraint(s) met on the %s%s" % (
                                   len([c for c in pre.get("constraints") or [] if c.get("outcome") == "passed"]), pre.get("source") or "snapshot",
                                   "; skipped (not measured): %s" % ", ".join(pre["skipped"]) if pre.get("skipped") else "")})
        else:
            failing = [c for c in pre.get("constraints") or [] if c.get("outcome") in ("failed", "error")]
            conditions.append({"type": "PreflightPassed", "status": "False", "reason": "ConstraintsNotMet",
                               "message": "; ".join("%s expected %s, got %s" % (c.get("name"), c.get("expected"), c.get("actual") or "(empty)")
                                                    if c.get("outcome") == "failed" else "%s: %s" % (c.get("name"), c.get("message"))
                                                    for c in failing)[:1024]})
    healths = [(c.get("name"), c.get("health")) for c in (rollout or {}).get("components") or [] if isinstance(c.get("health"), dict)]
    if healths:
        failed = [(n, h) for n, h in healths if h.get("status") == "Failed"]
        passed = [n for n, h in healths if h.get("status") == "Passed"]
        not_run = [n for n, h in healths if h.get("status") == "NotRun"]
        if failed:
            conditions.append({"type": "HealthChecksPassed", "status": "False", "reason": "HealthCheckFailed",
                               "message": "; ".join("%s: %s" % (n, h.get("message")) for n, h in failed)[:1024]})
        elif not_run:
            conditions.append({"type": "HealthChecksPassed", "status": "Unknown", "reason": "NotRun",
                               "message": "not run: %s" % ", ".join(not_run)})
        else:
            conditions.append({"type": "HealthChecksPassed", "status": "True", "reason": "Passed" if passed else "NoChecks",
                               "message": "%d health check(s) passed, %d component(s) without one run" % (len(passed), len(healths) - len(passed))})
    drifted = drift_condition(rollout)
    if drifted is not None:
        conditions.append(drifted)
    return conditions


def merge_components(current, components, replace=False, now=None):
    """Entries for ``components`` merged by name into ``current`` (or replacing it); returns (list, transition events)."""
    previous = dict((c.get("name"), c) for c in current or [])
    events = []
    merged = {} if replace else dict((name, copy.deepcopy(c)) for name, c in previous.items())
    order = [] if replace else [c.get("name") for c in current or []]
    for comp in components or []:
        entry = component_entry(comp, previous.get(comp.get("name")), now)
        old = previous.get(entry["name"])
        if entry["phase"] != (old or {}).get("phase"):
            message = "component %s %s -> %s" % (entry["name"], (old or {}).get("phase") or "new", entry["phase"])
            if entry["blockedBy"]:
                message += " (blocked by %s)" % ", ".join(entry["blockedBy"])
            elif entry["phase"] == FAILED and entry["message"]:
                message += ": " + entry["message"]
            events.append({"type": "Component" + entry["phase"], "message": message[:1024]})
        rolled = entry.get("rolledBack")
        if rolled and rolled != (old or {}).get("rolledBack"):
            text = "component %s: %s (%s)" % (entry["name"], rolled.get("message") or rolled["status"], rolled.get("reason") or "")
            events.append({"type": ROLLBACK_EVENTS.get(rolled["status"], "RollbackNotDone"), "message": text[:1024]})
        if entry["name"] not in order:
            order.append(entry["name"])
        merged[entry["name"]] = entry
    return [merged[n] for n in order if n in merged and merged[n]["phase"] != REMOVED], events


def device_entry(device):
    """A status ``devices[]`` entry from a fabric_device device result (or an entry already in status shape)."""
    return {"node": str(device.get("node") or ""), "type": str(device.get("type") or "gpu"), "model": str(device.get("model") or ""),
            "resUUID": str(device.get("resUUID", device.get("res_uuid")) or ""), "serial": str(device.get("serial") or ""),
            "state": str(device.get("state", device.get("status")) or "")}


def ready_condition_for(status, phase):
    """(status, reason, message) of the Ready condition implied by the phase and the other conditions."""
    if phase == READY:
        return "True", "Reconciled", "every component is Ready"
    if phase in (FAILED, DEGRADED):
        for ctype in ("RecipeResolved", "DevicesReady", "PreflightPassed", "ComponentsReady", "HealthChecksPassed"):
            cond = get_condition(status, ctype)
            if cond and cond.get("status") == "False":
                return "False", phase, "%s: %s" % (ctype, cond.get("message") or cond.get("reason"))
        return "False", phase, "the stack is %s" % phase
    return "False", "Reconciling", "phase %s" % phase


def apply_update(status, update, now=None, generation=None):
    """Return (new status, events recorded) after applying ``update`` to ``status``.

    ``update`` keys (all optional): ``phase``, ``conditions`` (list of {type, status, reason, message}),
    ``components`` (gated_release results or status entries), ``replace_components`` (bool),
    ``devices``, ``recipe`` (dict), ``events`` (list), ``observed_generation`` (int),
    ``reconcile`` (dict merged into ``status.reconcile``: lastReconcileTime, lastHandledReconcileRequest,
    reason, resyncSeconds), ``catalog`` (dict merged into ``status.catalog``).
    Phase changes and component transitions are recorded in history.
    """
    now = now or timeutil.now_rfc3339()
    new = copy.deepcopy(status or {})
    events = []
    gen = update.get("observed_generation")
    cond_gen = gen if gen is not None else (generation if generation is not None else new.get("observedGeneration"))
    if update.get("recipe") is not None:
        recipe = dict(new.get("recipe") or {})
        incoming = dict(update["recipe"])
        if any(recipe.get(k) != v for k, v in incoming.items() if k != "resolvedAt"):
            incoming.setdefault("resolvedAt", now)
            events.append({"type": "RecipeResolved", "message": "recipe %s from catalog %s (%s)"
                           % (incoming.get("name", recipe.get("name")), incoming.get("catalogVersion", recipe.get("catalogVersion")) or "unversioned",
                              incoming.get("catalogDigest", recipe.get("catalogDigest")) or "no digest")})
        else:
            incoming.pop("resolvedAt", None)
        recipe.update(incoming)
        new["recipe"] = recipe
    if update.get("catalog") is not None:
        catalog = dict(new.get("catalog") or {})
        catalog.update(update["catalog"])
        new["catalog"] = catalog
    if update.get("reconcile") is not None:
        reconcile = dict(new.get("reconcile") or {})
        reconcile.update(update["reconcile"])
        new["reconcile"] = reconcile
    if update.get("components") is not None:
        new["components"], comp_events = merge_components(new.get("components"), update["components"],
                                                          replace=bool(update.get("replace_components")), now=now)
        events.extend(comp_events)
    if update.get("devices") is not None:
        new["devices"] = [device_entry(d) for d in update["devices"]]
    conditions = list(update.get("conditions") or [])
    if update.get("components") is not None and update.get("replace_components"):
        # the full component list of a rollout says whether its health checks passed (unless the update says it itself)
        given = set(c.get("type") for c in conditions)
        conditions = [c for c in gate_conditions({"components": update["components"]}) if c["type"] not in given] + conditions
    for cond in conditions:
        if cond.get("type") == "Ready":
            raise AicrError("conditions[].type: Ready is not allowed here; allowed: %s (Ready follows the phase)"
                            % ", ".join(CONDITION_TYPES[1:]), field="conditions")
        new["conditions"] = set_condition(new.get("conditions"), cond.get("type"), cond.get("status"), cond.get("reason"),
                                          cond.get("message"), cond_gen, now)
    phase = update.get("phase")
    if phase is not None:
        _require(phase, PHASES, "phase")
        if phase != new.get("phase"):
            events.append({"type": "Phase" + phase, "message": "phase %s -> %s" % (new.get("phase") or "new", phase)
                           + (": " + update["phase_message"] if update.get("phase_message") else "")})
        new["phase"] = phase
    if gen is not None:
        new["observedGeneration"] = int(gen)
    if new.get("phase"):
        ready = ready_condition_for(new, new["phase"])
        new["conditions"] = set_condition(new.get("conditions"), "Ready", ready[0], ready[1], ready[2], cond_gen, now)
    comps = new.get("components") or []
    if comps or "components" in new:
        new["readyComponents"] = "%d/%d" % (len([c for c in comps if c.get("ready")]), len(comps))
    events.extend(update.get("events") or [])
    if events:
        new["history"] = add_events(new.get("history"), events, now)
    return new, events


# the keys of status.recipe, status.catalog and status.reconcile a stack_status update may set: the CRD's status schema
# (_stack.crd.status_schema; a unit test holds them equal - the CRD would prune any other key)
UPDATE_MAPPINGS = {
    "recipe": ("name", "catalogVersion", "catalogDigest", "appliedOverlays", "resolvedAt"),
    "catalog": ("latestVersion", "autoUpdate", "autoUpdateSource"),
    "reconcile": ("lastReconcileTime", "lastHandledReconcileRequest", "reason", "resyncSeconds"),
}


def check_update(problems, update):
    """Add to ``problems`` what is wrong with a status ``update`` (the keys :func:`apply_update` takes), before any store is
    read: the phase, every condition, component, device and event, the recipe/catalog/reconcile keys, observed_generation."""
    problems.choice("phase", update.get("phase"), PHASES)
    problems.text("phase_message", update.get("phase_message"), empty=True)
    problems.number("observed_generation", update.get("observed_generation"), minimum=0, integer=True)
    for field in ("conditions", "components", "devices", "events"):
        value = update.get(field)
        if value is not None and not isinstance(value, list):
            problems.add(field, "a %s is not allowed; use a list" % type(value).__name__, value=value)
    for index, cond in enumerate(update.get("conditions") or [] if isinstance(update.get("conditions"), list) else []):
        where = "conditions[%d]" % index
        if not problems.mapping(where, cond):
            continue
        if cond.get("type") == "Ready":
            problems.add(where + ".type", "Ready is not allowed here; allowed: %s (Ready follows the phase)" % ", ".join(CONDITION_TYPES[1:]))
        else:
            problems.choice(where + ".type", cond.get("type"), CONDITION_TYPES[1:])
            if cond.get("type") is None:
                problems.add(where + ".type", "missing; allowed: %s" % ", ".join(CONDITION_TYPES[1:]))
        if not isinstance(cond.get("status"), bool) and cond.get("status") is not None:
            problems.choice(where + ".status", cond.get("status"), CONDITION_STATUSES)
        for key in ("reason", "message"):
            problems.text("%s.%s" % (where, key), cond.get(key), empty=True)
    for index, comp in enumerate(update.get("components") or [] if isinstance(update.get("components"), list) else []):
        where = "components[%d]" % index
        if problems.mapping(where, comp):
            if not comp.get("name"):
                problems.add(where + ".name", "missing; allowed: every component needs a name")
            problems.choice(where + ".phase", comp.get("phase") or None, sorted(RELEASE_PHASES))
    for index, device in enumerate(update.get("devices") or [] if isinstance(update.get("devices"), list) else []):
        problems.mapping("devices[%d]" % index, device)
    for index, event in enumerate(update.get("events") or [] if isinstance(update.get("events"), list) else []):
        if not isinstance(event, str) and not (isinstance(event, dict) and event.get("message")):
            problems.add("events[%d]" % index, "%r is not allowed; allowed: a string or a dict with type and message" % (event,), value=event)
    for field, keys in UPDATE_MAPPINGS.items():
        if problems.mapping(field, update.get(field)):
            problems.known_keys(field, update[field], keys)
    if isinstance(update.get("catalog"), dict):
        problems.choice("catalog.autoUpdateSource", update["catalog"].get("autoUpdateSource"), ("spec", "default"))
    if isinstance(update.get("reconcile"), dict):
        problems.number("reconcile.resyncSeconds", update["reconcile"].get("resyncSeconds"), minimum=0, integer=True)
    return problems


def same_status(left, right, ignore=("reconcile",)):
    """Whether two statuses are equal apart from the bookkeeping keys in ``ignore``."""
    def strip(status):
        return dict((k, v) for k, v in (status or {}).items() if k not in ignore)
    return strip(left) == strip(right)
