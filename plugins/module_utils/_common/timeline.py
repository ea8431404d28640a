# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A rollout as a Mermaid ``gantt`` chart: each component's wait, install and health-check phases, the critical path marked.

Pure functions over data the collection already records, so the same chart comes from a gated_release result
(:func:`from_results`) or from a ClusterStack status alone (:func:`from_status`, its ``components[].timing``).
It lives in ``_common`` because both ``_release`` (the result) and ``_stack`` (the status) draw it.

A *bar* (a row of the chart) is ``{name, start, seconds, check, after, phase, blocked_by}``: ``start`` in epoch seconds (None: not
run), ``seconds`` the component's whole step (install or upgrade, wait until Ready, health check), ``check`` the
health check's part of it, ``after`` its dependencies. Components without a start are laid out as soon as their
dependencies end (from 0) when no component of the rollout has one (a plan drawn from durations only).

The critical path is measured, not assumed: from the component that ended last, back through the dependency that
ended last, until one with no timed dependency. On a schedule where each component starts when its dependencies
end that is the longest path of the DAG.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil

_UNSAFE = re.compile(r"[:;#%`\r\n\t\x00-\x1f]+")
_SPACES = re.compile(r"\s+")


def label(text):
    """``text`` safe as a Mermaid gantt title, section or task name: the characters its grammar reads (``:``, ``;``,
    ``#``, ``%``, line breaks) become spaces; never empty."""
    return _SPACES.sub(" ", _UNSAFE.sub(" ", str(text))).strip() or "?"


def epoch(text):
    """Epoch seconds of an RFC 3339 time (as gated_release's ``started``); None when not a time."""
    moment = timeutil.parse(text)
    if moment is None:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def _number(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def from_results(components):
    """Bars from gated_release's ``components`` (component results)."""
    return [{"name": c.get("name"), "start": epoch(c.get("started")), "seconds": _number(c.get("duration")),
             "check": _number((c.get("health") or {}).get("duration")), "after": list(c.get("dependencies") or []),
             "phase": c.get("phase"), "blocked_by": list(c.get("blocked_by") or [])} for c in components or [] if c.get("name")]


def from_status(status):
    """Bars from a ClusterStack ``status`` (its ``components[].timing``, the last rollout's)."""
    bars = []
    for c in (status or {}).get("components") or []:
        timing = c.get("timing") or {}
        bars.append({"name": c.get("name"), "start": epoch(timing.get("start")), "seconds": _number(timing.get("seconds")),
                     "check": _number(timing.get("checkSeconds")), "after": list(timing.get("after") or []),
                     "phase": c.get("phase"), "blocked_by": list(c.get("blockedBy") or [])})
    return [b for b in bars if b["name"]]


def schedule(bars):
    """``bars`` with a start for each that has a duration: its own, or (when none has one) as soon as its dependencies end."""
    if any(b["start"] is not None for b in bars):
        return [b for b in bars if b["start"] is not None and b["seconds"] is not None]
    by_name = dict((b["name"], b) for b in bars if b["seconds"] is not None)
    ends = {}

    def end(name, seen):
        if name in ends:
            return ends[name]
        if name in seen:  # a cycle: never here for a validated DAG; laid out from 0
            return 0.0
        row = by_name[name]
        start = max([end(d, seen | {name}) for d in row["after"] if d in by_name] or [0.0])
        bar_start = dict(row, start=start)
        by_name[name] = bar_start
        ends[name] = start + row["seconds"]
        return ends[name]

    for name in list(by_name):
        end(name, frozenset())
    return [by_name[b["name"]] for b in bars if b["name"] in by_name]


def critical_path(timed):
    """The names on the critical path of scheduled bars, first to last."""
    by_name = dict((b["name"], b) for b in timed)
    if not by_name:
        return []

    def end_of(row):
        return row["start"] + row["seconds"]

    last = max(timed, key=lambda b: (end_of(b), b["name"]))
    path = [last["name"]]
    while True:
        deps = [by_name[d] for d in by_name[path[-1]]["after"] if d in by_name and d not in path]
        if not deps:
            break
        path.append(max(deps, key=lambda b: (end_of(b), b["name"]))["name"])
    return list(reversed(path))


def _ms(seconds):
    return int(round(seconds * 1000))


def gantt(bars, title="rollout"):
    """The Mermaid ``gantt`` text of ``bars`` (see the module's doc)."""
    timed = schedule(bars)
    path = critical_path(timed)
    on_path = set(path)
    lines = ["gantt", "    title %s" % label(title), "    dateFormat x", "    axisFormat %H:%M:%S", "    todayMarker off"]
    if not timed:
        lines.append("    %% nothing ran")
        return "\n".join(lines) + "\n"
    origin = min(b["start"] for b in timed)
    ends = dict((b["name"], b["start"] + b["seconds"]) for b in timed)
    lines.append("    %%%% critical path: %s (%.1fs)" % (" -> ".join(label(n) for n in path), max(ends.values()) - origin))
    for index, row in enumerate(timed):
        crit = "crit, " if row["name"] in on_path else ""
        start, end = row["start"], row["start"] + row["seconds"]
        check = min(row["check"] or 0.0, row["seconds"])
        lines.append("    section %s" % label(row["name"]))
        if start - origin >= 0.001:
            waited = [d for d in row["after"] if d in ends]
            lines.append("    %s :done, c%d_wait, %d, %d" % (label("wait for " + ", ".join(waited)) if waited else "wait", index, _ms(origin), _ms(start)))
        failed = " (failed)" if row["phase"] == "Failed" else ""
        lines.append("    %s :%sc%d_run, %d, %d" % (label("install" + (failed if not check else "")), crit, index, _ms(start), _ms(end - check)))
        if check:
            lines.append("    %s :%sactive, c%d_check, %d, %d" % (label("health check" + failed), crit, index, _ms(end - check), _ms(end)))
    blocked = [b for b in bars if b["name"] not in ends and b["blocked_by"]]
    for index, row in enumerate(blocked):
        at = max([ends[d] for d in row["blocked_by"] if d in ends] or [origin])
        lines.append("    section %s" % label(row["name"]))
        lines.append("    %s :milestone, b%d_blocked, %d, %d" % (label("blocked by " + ", ".join(row["blocked_by"])), index, _ms(at), _ms(at)))
    return "\n".join(lines) + "\n"
