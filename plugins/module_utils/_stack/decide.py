# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The reconcile decision: does this ClusterStack need a converge run, and why.

In order: ``spec.suspend`` (never), no status yet, ``metadata.generation`` != ``status.observedGeneration``,
the ``runtime.aicr.io/reconcile-requested`` annotation differs from the value the last run handled,
the last run did not end Ready (Failed, Degraded, or interrupted mid-run), a newer catalog release with
autoUpdate on, and the resync interval (default 5 minutes, ``spec.resyncInterval`` per stack) elapsed
since ``status.reconcile.lastReconcileTime``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import READY, RECONCILE_ANNOTATION
from ansible_collections.aicr.runtime.plugins.module_utils._common.timeutil import parse as parse_time
DEFAULT_RESYNC_SECONDS = 300
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value, field="spec.resyncInterval"):
    """Seconds from an int or a duration string like ``90s``, ``5m``, ``1h30m``."""
    if isinstance(value, bool):
        raise AicrError("%s: %r is not allowed; allowed: seconds or a duration like 30s, 5m, 1h30m" % (field, value), field=field)
    if isinstance(value, (int, float)):
        if value < 0 or math.isnan(value) or math.isinf(value):  # a NaN is not a number of seconds
            raise AicrError("%s: %r is not allowed; allowed: zero or more seconds" % (field, value), field=field)
        return int(value)
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    if not text or not match or not any(match.groups()):
        raise AicrError("%s: %r is not allowed; allowed: seconds or a duration like 30s, 5m, 1h30m" % (field, value), field=field)
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def auto_update_of(spec, default):
    """(enabled, source): ``spec.autoUpdate`` when set (source ``spec``), else the operator default (source ``default``)."""
    value = (spec or {}).get("autoUpdate")
    if value is None:
        return bool(default), "default"
    return bool(value), "spec"


def decide(stack, now, default_resync_seconds=DEFAULT_RESYNC_SECONDS, catalog=None):
    """Decision for one stack (``{metadata, spec, status}``) at ``now`` (a datetime, UTC).

    ``catalog`` is the catalog selection (see releases.select) or None. Returns a dict with
    ``needs_converge``, ``reason``, ``suspended``, ``resync_seconds``, ``reconcile_request``.
    """
    meta = stack.get("metadata") or {}
    spec = stack.get("spec") or {}
    status = stack.get("status") or {}
    reconcile = status.get("reconcile") or {}
    request = (meta.get("annotations") or {}).get(RECONCILE_ANNOTATION) or ""
    resync = parse_duration(spec["resyncInterval"]) if spec.get("resyncInterval") not in (None, "") else int(default_resync_seconds)
    result = {"needs_converge": False, "suspended": False, "resync_seconds": resync, "reconcile_request": request,
              "generation": meta.get("generation"), "observed_generation": status.get("observedGeneration")}

    def verdict(needed, reason):
        result.update(needs_converge=needed, reason=reason)
        return result

    if spec.get("suspend"):
        result["suspended"] = True
        return verdict(False, "suspended (spec.suspend is true)")
    if not status or status.get("observedGeneration") is None:
        return verdict(True, "never reconciled (no status.observedGeneration)")
    if meta.get("generation") is not None and meta.get("generation") != status.get("observedGeneration"):
        return verdict(True, "generation %s != observedGeneration %s" % (meta.get("generation"), status.get("observedGeneration")))
    if request != (reconcile.get("lastHandledReconcileRequest") or ""):
        return verdict(True, "reconcile requested (annotation %s=%r, last handled %r)"
                       % (RECONCILE_ANNOTATION, request, reconcile.get("lastHandledReconcileRequest") or ""))
    if status.get("phase") != READY:
        return verdict(True, "last run ended in phase %s" % (status.get("phase") or "unknown"))
    if catalog and catalog.get("upgrade"):
        return verdict(True, "catalog %s is newer than %s and autoUpdate is on" % (catalog.get("version"), catalog.get("resolved_version")))
    last = parse_time(reconcile.get("lastReconcileTime"))
    if last is None:
        return verdict(True, "no status.reconcile.lastReconcileTime")
    age = (now - last).total_seconds()
    if age >= resync:
        return verdict(True, "resync interval %ds elapsed (last reconcile %ds ago)" % (resync, int(age)))
    return verdict(False, "up to date (generation %s observed, next resync in %ds)" % (meta.get("generation"), int(resync - age)))
