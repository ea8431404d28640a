# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which overlays apply to a query, the "specify an OS" guard and the coverage post-condition.

* An overlay matches when each of its dimensions is a wildcard or equals the
  query's; an unstated query dimension matches wildcard overlays only.
* Matches that are ancestors (``spec.base``) of other matches are dropped; the
  rest are ordered by specificity (least specific first), then name.
* Guard (before merging): a query stating ``service`` but no ``os`` fails when no
  matched overlay carries that service with the query's accelerator, and some
  OS-gated overlay would match if an OS were given.
* Coverage (after merging): every stated dimension must be carried, with that
  exact value, by at least one applied overlay; otherwise the error lists, per
  uncovered dimension, the minimal extra criteria that would cover it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit


def _criteria(doc):
    return doc["spec"].get("criteria")


def find_matching(catalog, query):
    """Matched maximal-leaf overlays, least specific first, ties by name."""
    matched = []
    for name in catalog.overlays:
        doc = catalog.overlays[name]
        oc = _criteria(doc)
        if oc is None:
            continue
        if crit.matches(oc, query):
            matched.append(doc)
    ancestors = set()
    for doc in matched:
        seen = set()
        parent = doc["spec"].get("base") or ""
        while parent not in ("", "base") and parent not in seen:
            seen.add(parent)
            ancestors.add(parent)
            if parent not in catalog.overlays:
                break
            parent = catalog.overlays[parent]["spec"].get("base") or ""
    leaves = [doc for doc in matched if doc["metadata"]["name"] not in ancestors]
    leaves.sort(key=lambda doc: (crit.specificity(_criteria(doc)), doc["metadata"]["name"]))
    return leaves


def _norm_accel(value):
    return "" if value in ("", crit.ANY) else value


def available_os(catalog, query):
    """OS values of OS-gated overlays that would match if the query stated that OS."""
    found = set()
    for doc in catalog.overlays.values():
        oc = _criteria(doc)
        if oc is None:
            continue
        os_value = crit.overlay_value(oc, "os")
        if not crit.is_stated(os_value):
            continue
        probe = dict(query)
        probe["os"] = os_value
        if crit.matches(oc, probe):
            found.add(os_value)
    return sorted(found)


def require_os_if_needed(catalog, query, matched):
    """AICR v0.19.0's pre-merge guard ("specify an OS")."""
    service = query.get("service", crit.ANY)
    if not crit.is_stated(service) or crit.is_stated(query.get("os", crit.ANY)):
        return
    accel = _norm_accel(query.get("accelerator", crit.ANY))
    for doc in matched:
        oc = _criteria(doc)
        if oc is None:
            continue
        if crit.overlay_value(oc, "service") != service:
            continue
        if _norm_accel(crit.overlay_value(oc, "accelerator")) != accel:
            continue
        return
    valid = available_os(catalog, query)
    if not valid:
        return
    # AICR's wording, an unstated accelerator included (``accelerator ''``)
    msg = "service '%s' has no OS-agnostic recipe for accelerator '%s'; specify an OS (valid: %s)" % (service, accel, ", ".join(valid))
    raise AicrError(msg, field="criteria.os", requires_os=True, allowed=valid, criteria=crit.criteria_string(query))


def uncovered_dimensions(catalog, query, applied):
    out = []
    for dim in crit.DIMENSIONS:
        want = query.get(dim, crit.ANY)
        if not crit.is_stated(want):
            continue
        covered = False
        for name in applied:
            doc = catalog.base if name == "base" else catalog.overlays.get(name)
            oc = _criteria(doc) if doc is not None else None
            if oc is None:
                continue
            if crit.overlay_value(oc, dim) == want:
                covered = True
                break
        if not covered:
            out.append(dim)
    return out


def _tuple_key(tup):
    return ", ".join("%s=%s" % (dim, tup[dim]) for dim in crit.DIMENSIONS if dim in tup)


def completion_tuples(catalog, query, dim_name, want):
    """Minimal sets of extra (unstated) dimension values under which some overlay carries dim=want."""
    candidates = {}
    for doc in catalog.overlays.values():
        oc = _criteria(doc)
        if oc is None:
            continue
        tup = {}
        ok = True
        carries = False
        for dim in crit.DIMENSIONS:
            overlay_val = crit.overlay_value(oc, dim)
            if dim == dim_name:
                if overlay_val != want:
                    ok = False
                    break
                carries = True
                continue
            if not crit.is_stated(overlay_val):
                continue
            query_val = query.get(dim, crit.ANY)
            if crit.is_stated(query_val):
                if query_val != overlay_val:
                    ok = False
                    break
                continue
            tup[dim] = overlay_val
        if ok and carries and tup:
            candidates[_tuple_key(tup)] = tup
    uniq = list(candidates.values())
    minimal = []
    for tup in uniq:
        dominated = False
        for other in uniq:
            if len(other) < len(tup) and all(tup.get(k) == v for k, v in other.items()):
                dominated = True
                break
        if not dominated:
            minimal.append(tup)
    minimal.sort(key=lambda t: (len(t), _tuple_key(t)))
    return minimal


def excluded_provides(catalog, excluded, dim, want):
    """Does an overlay excluded by failing constraints carry ``dim=want``?"""
    for entry in excluded or []:
        doc = catalog.overlays.get(entry["name"])
        oc = _criteria(doc) if doc is not None else None
        if oc is not None and crit.overlay_value(oc, dim) == want:
            return True
    return False


def verify_coverage(catalog, query, applied, excluded=None, warnings=None):
    """Raise AICR's coverage error when a stated dimension is not honoured by the applied overlays.

    On the snapshot path ``excluded`` (``excludedOverlays``) and ``warnings`` (``constraintWarnings``) are attached,
    and a dimension whose only providers were excluded says so instead of "no recipe provides".
    """
    uncovered = uncovered_dimensions(catalog, query, applied)
    if not uncovered:
        return
    stated = crit.criteria_string(query)
    clauses = []
    entries = []
    for dim in uncovered:
        want = query[dim]
        tuples = completion_tuples(catalog, query, dim, want)
        by_excluded = excluded_provides(catalog, excluded, dim, want)
        if not tuples and by_excluded:
            clause = "%s '%s' for %s is provided only by overlays excluded by failing constraints (see excludedOverlays)" % (dim, want, stated)
        elif not tuples:
            clause = "no recipe provides %s '%s' for %s" % (dim, want, stated)
        else:
            keys = set(k for t in tuples for k in t)
            if all(len(t) == 1 for t in tuples) and len(keys) == 1:
                key = keys.pop()
                clause = "%s '%s' for %s requires %s (valid: %s)" % (dim, want, stated, key, ", ".join(sorted(t[key] for t in tuples)))
            else:
                clause = "%s '%s' requires additional criteria; supported combinations: %s" % (
                    dim, want, ", ".join("(%s)" % _tuple_key(t) for t in tuples))
        clauses.append(clause)
        entry = {"dimension": dim, "requestedValue": want, "validCompletions": [_tuple_key(t) for t in tuples]}
        if excluded is not None:
            entry["constraintExcluded"] = by_excluded
        entries.append(entry)
    details = {"uncovered": entries, "field": "criteria"}
    if excluded:
        details["excludedOverlays"] = excluded
    if warnings:
        details["constraintWarnings"] = warnings
    raise AicrError("; ".join(clauses), **details)
