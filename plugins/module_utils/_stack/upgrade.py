# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Upgrade plans: what moving a cluster from the catalog it runs to a new catalog changes, with a verdict.

A cluster's current state is a plain ``current`` mapping (``name``, ``catalog``, ``criteria``, ``profile``,
``skip_components``, ``component_overrides``, ``components`` as deployed ``[{name, version, revision}]``,
``catalog_digest``) or a ClusterStack object (``{metadata, spec, status}``: read with :func:`current_of`). The same
criteria are resolved on both catalogs (``_recipe.resolve``, without the cluster's own values, so what changed is what the
catalog changed) and every component is compared: version (semver class), added/removed, dependencies and order,
the values paths the cluster overrides that the catalog removed or changed, and the health check.

Each finding has a code and a verdict by :data:`RULES` (the one place the verdicts live); a component's verdict is its
worst finding's (``safe`` when there is none), the cluster's the worst of its components'. The plan names no value,
only paths (a value the cluster overrides may be a secret). With a :class:`~.upgradecrds.ChartCrdJudge` (``judge_crds``)
the CRDs of both chart versions of a component whose chart changes are compared (``crds``; a breaking change blocks, a
removed CRD needs a review, an added field or CRD is noted); a chart that cannot be read is named in ``not_judged``.
Without one, every plan says in ``not_judged`` that the charts' CRDs were not compared.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._stack import releases
from ansible_collections.aicr.runtime.plugins.module_utils._stack.upgradecrds import ChartCrdJudge

SAFE, REVIEW, BLOCKED = "safe", "review", "blocked"
VERDICTS = (SAFE, REVIEW, BLOCKED)  # mildest first
RULES = {
    "version_patch": SAFE,
    "version_minor": SAFE,
    "version_major": REVIEW,
    "version_downgrade": REVIEW,
    "version_changed": REVIEW,  # not MAJOR.MINOR.PATCH on both sides
    "chart_changed": REVIEW,
    "added": REVIEW,
    "removed": REVIEW,
    "dependencies_changed": REVIEW,
    "override_removed": BLOCKED,
    "override_default_changed": REVIEW,
    "health_check_changed": REVIEW,
    "catalog_digest_mismatch": REVIEW,
    "crd_breaking": BLOCKED,  # the charts' CRDs (judge_crds): compat's breaking-change rules
    "crd_warning": REVIEW,
    "crd_removed": REVIEW,
    "crd_added": SAFE,  # noted
    "crd_fields_added": SAFE,  # noted
    "crd_changed": SAFE,  # noted
}
CURRENT_KEYS = ("name", "catalog", "criteria", "profile", "skip_components", "component_overrides", "components", "catalog_digest")
NOT_JUDGED = "chart CRDs: not compared (judge_crds: false); judge CRD changes with judge_crds: true or crd_publish"
_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def version_class(old, new):
    """``none``, ``patch``, ``minor``, ``major``, ``downgrade`` or ``changed`` (either side not MAJOR.MINOR.PATCH)."""
    if str(old) == str(new):
        return "none"
    a, b = _SEMVER.match(str(old)), _SEMVER.match(str(new))
    if not a or not b:
        return "changed"
    ka = tuple(int(x) for x in a.groups()[:3]) + ((1, "") if a.group(4) is None else (0, a.group(4)))
    kb = tuple(int(x) for x in b.groups()[:3]) + ((1, "") if b.group(4) is None else (0, b.group(4)))
    if kb < ka:
        return "downgrade"
    if kb[0] != ka[0]:
        return "major"
    return "minor" if kb[1] != ka[1] else "patch"


def worst(verdicts):
    return max(verdicts, key=VERDICTS.index) if verdicts else SAFE


def leaf_paths(values, prefix=()):
    """Every leaf path (tuple of keys) of a values mapping; a list or scalar is a leaf."""
    for key, value in (values or {}).items():
        path = prefix + (str(key),)
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, path)
        else:
            yield path


def _at(values, path):
    """(found, value) at ``path``."""
    node = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def current_of(entry, index=0, catalog=None, field=None):
    """The ``current`` mapping of one cluster: ``entry`` itself, or read from a ClusterStack object (``spec``/``status``; a
    stack_info ``stacks[]`` entry too, named by its ``name``).

    A ClusterStack's catalog is the release it resolved (``status.recipe.catalogVersion`` of ``spec.catalog.source``);
    ``catalog`` (the module's ``current_catalog``) wins over either; ``field`` names it in errors (``clusters[index]``)."""
    field = field or "clusters[%d]" % index
    if not isinstance(entry, dict):
        raise AicrError("%s: a %s is not allowed; use a mapping (a current state or a ClusterStack)" % (field, type(entry).__name__), field=field)
    if "spec" in entry or "status" in entry or entry.get("kind") == "ClusterStack":
        spec, status = entry.get("spec") or {}, entry.get("status") or {}
        recipe = status.get("recipe") or {}
        current = {"name": (entry.get("metadata") or {}).get("name") or entry.get("name") or "cluster-%d" % (index + 1), "criteria": spec.get("criteria") or {},
                   "profile": spec.get("profile"), "skip_components": spec.get("skipComponents") or [],
                   "component_overrides": spec.get("componentOverrides") or {}, "catalog_digest": recipe.get("catalogDigest") or "",
                   "components": [dict((k, c.get(k)) for k in ("name", "version", "revision")) for c in status.get("components") or []
                                  if isinstance(c, dict) and c.get("name")]}
        if catalog:
            current["catalog"] = catalog
        else:
            current["catalog"] = releases.select(spec.get("catalog"), recipe.get("catalogVersion"), False)["path"]
        return current
    current = dict(entry)
    current.setdefault("name", "cluster-%d" % (index + 1))
    if catalog:
        current["catalog"] = catalog
    return current


def check_current(current, field):
    """One cluster's ``current`` (named ``field`` in errors) checked before any catalog is read; one AicrError names every problem."""
    problems = Problems("upgrade_plan")
    problems.known_keys(field, current, CURRENT_KEYS)
    problems.text("%s.name" % field, current.get("name"))
    if not current.get("catalog"):
        problems.add("%s.catalog" % field, "missing; allowed: the catalog directory or archive the cluster runs (or current_catalog)")
    else:
        problems.text("%s.catalog" % field, current.get("catalog"))
    problems.mapping("%s.criteria" % field, current.get("criteria"))
    problems.mapping("%s.component_overrides" % field, current.get("component_overrides"))
    for name, override in (current.get("component_overrides") or {}).items() if isinstance(current.get("component_overrides"), dict) else ():
        if problems.mapping("%s.component_overrides.%s" % (field, name), override):
            problems.mapping("%s.component_overrides.%s.values" % (field, name), override.get("values"))
    components = current.get("components")
    if components is not None and not isinstance(components, list):
        problems.add("%s.components" % field, "a %s is not allowed; use a list of {name, version, revision}" % type(components).__name__)
    for pos, comp in enumerate(components if isinstance(components, list) else []):
        if not isinstance(comp, dict) or not isinstance(comp.get("name"), str) or not comp.get("name"):
            problems.add("%s.components[%d]" % (field, pos), "%r is not allowed; use {name, version, revision}" % (comp,), value=comp)
    skip = current.get("skip_components")
    if skip is not None and (not isinstance(skip, list) or not all(isinstance(s, str) for s in skip)):
        problems.add("%s.skip_components" % field, "%r is not allowed; use a list of component names" % (skip,), value=skip)
    problems.raise_if_any()


class Resolutions(object):
    """Resolutions by (catalog, criteria, profile, skipped): clusters sharing criteria resolve once per catalog."""

    def __init__(self, cache_dir=None, persist_cache=True):
        self.cache_dir = cache_dir
        self.persist_cache = persist_cache
        self.done = {}

    def get(self, catalog, current):
        overrides = current.get("component_overrides") or {}
        skip = sorted(set(current.get("skip_components") or []) | set(n for n, o in overrides.items() if o.get("enabled") is False))
        key = (catalog, json.dumps(current.get("criteria") or {}, sort_keys=True), current.get("profile") or "", tuple(skip))
        if key not in self.done:
            self.done[key] = resolve_mod.resolve(catalog, current.get("criteria") or {}, current.get("profile"), skip_components=skip or None,
                                                 cache_dir=self.cache_dir, persist_cache=self.persist_cache)
        return self.done[key]


def _view(result):
    """``{name: {version, chart, repository, dependencies, order, values, health}}`` of a resolution."""
    checks = dict((ref.get("name"), ref.get("healthCheckAsserts") or "") for ref in result["recipe"].get("componentRefs") or [] if isinstance(ref, dict))
    return dict((c["name"], {"version": c.get("version") or "", "chart": c.get("chart") or "", "repository": c.get("repository") or "",
                             "dependencies": sorted(c.get("dependencies") or []), "order": c.get("order"), "values": c.get("values") or {},
                             "health": checks.get(c["name"], "")}) for c in result["components"])


def _finding(code, message):
    return {"code": code, "verdict": RULES[code], "message": message}


def _compare(name, old, new, override, deployed, judge=None, not_judged=None):
    """One component's findings and its version change; ``old``/``new`` None when it is absent on that side. With
    ``judge`` (a ChartCrdJudge) its charts' CRDs too; why they were not compared is appended to ``not_judged``."""
    findings = []
    pinned = override.get("version")
    before = (deployed or {}).get("version") or (old or {}).get("version") or ""
    after = pinned or (new or {}).get("version") or ""
    entry = {"name": name, "version": {"from": before, "to": after, "class": "none"}}
    if old is None:
        entry["change"] = "added"
        findings.append(_finding("added", "%s is new in the catalog: it would be installed" % name))
    elif new is None:
        entry["change"] = "removed"
        findings.append(_finding("removed", "%s is no longer in the recipe: it would be uninstalled" % name))
    else:
        cls = version_class(before, after) if before and after else "none"
        entry["version"]["class"] = cls
        if pinned:
            entry["version"]["pinned"] = True
        if cls != "none":
            findings.append(_finding("version_" + cls, "%s %s -> %s (%s)" % (name, before, after, cls)))
        for key in ("chart", "repository"):
            if old[key] != new[key]:
                findings.append(_finding("chart_changed", "%s %s %s -> %s" % (name, key, old[key] or "(none)", new[key] or "(none)")))
        if old["dependencies"] != new["dependencies"]:
            findings.append(_finding("dependencies_changed", "%s depends on %s, was %s" % (name, new["dependencies"], old["dependencies"])))
        entry["order"] = {"from": old["order"], "to": new["order"]}
        overridden = sorted(leaf_paths(override.get("values") or {}))
        values = []
        for path in overridden:
            had, was = _at(old["values"], path)
            has, now = _at(new["values"], path)
            if had and not has:
                values.append({"path": ".".join(path), "change": "removed"})
                findings.append(_finding("override_removed", "%s values %s: the cluster overrides it and the catalog removed it"
                                         % (name, ".".join(path))))
            elif had and was != now:
                values.append({"path": ".".join(path), "change": "changed"})
                findings.append(_finding("override_default_changed", "%s values %s: the cluster overrides it and the catalog changed its default"
                                         % (name, ".".join(path))))
        entry["values"] = values
        if old["health"] != new["health"]:
            how = "added" if not old["health"] else ("removed" if not new["health"] else "changed")
            entry["health_check"] = how
            findings.append(_finding("health_check_changed", "%s health check %s" % (name, how)))
        else:
            entry["health_check"] = "unchanged" if old["health"] else "none"
        entry["crds"] = {"judged": False}
        if judge is not None:
            entry["crds"], crd_findings, why = judge.judge(name, old, new, before, after)
            findings.extend(_finding(code, message) for code, message in crd_findings)
            if why:
                not_judged.append(why)
        entry["change"] = "changed" if findings or values else "unchanged"
    entry["findings"] = findings
    entry["verdict"] = worst([f["verdict"] for f in findings])
    entry.setdefault("crds", {"judged": False})
    return entry


def plan(current, catalog, resolutions=None, field="current", judge=None):
    """The upgrade plan of one cluster (``current`` as :func:`current_of` returns it) onto ``catalog``; ``judge``: a
    ChartCrdJudge to compare the charts' CRDs (None: not compared, said in ``not_judged``)."""
    check_current(current, field)
    resolutions = resolutions or Resolutions()
    old_result = resolutions.get(current["catalog"], current)
    new_result = resolutions.get(catalog, current)
    old, new = _view(old_result), _view(new_result)
    deployed = dict((c["name"], c) for c in current.get("components") or [])
    overrides = current.get("component_overrides") or {}
    old_order, new_order = old_result["recipe"]["deploymentOrder"], new_result["recipe"]["deploymentOrder"]
    names = list(new_order) + [n for n in old_order if n not in new]
    not_judged = [] if judge is not None else [NOT_JUDGED]
    components = [_compare(n, old.get(n), new.get(n), overrides.get(n) or {}, deployed.get(n), judge, not_judged) for n in names]
    findings = []
    recorded = current.get("catalog_digest")
    if recorded and recorded != old_result["catalog_digest"]:
        findings.append(_finding("catalog_digest_mismatch", "the cluster records catalog %s, but %s is %s: compared with the catalog given"
                                 % (recorded, current["catalog"], old_result["catalog_digest"])))
    verdict = worst([c["verdict"] for c in components] + [f["verdict"] for f in findings])
    reasons = [f["message"] for f in findings] + [f["message"] for c in components for f in c["findings"] if f["verdict"] != SAFE]
    return {"cluster": current["name"], "verdict": verdict, "reasons": reasons, "findings": findings,
            "from": {"catalog": current["catalog"], "digest": old_result["catalog_digest"]},
            "to": {"catalog": catalog, "digest": new_result["catalog_digest"]},
            "added": [c["name"] for c in components if c["change"] == "added"],
            "removed": [c["name"] for c in components if c["change"] == "removed"],
            "order": {"from": old_order, "to": new_order, "changed": old_order != new_order},
            "components": components, "not_judged": not_judged}


def _row_key(comp):
    return (comp["name"], comp["change"], comp["version"]["from"], comp["version"]["to"], tuple(f["message"] for f in comp["findings"]))


def fleet(plans):
    """One table per verdict: the clusters whose plan has it, and each component change of that verdict with its clusters."""
    out = dict((v, {"clusters": [], "rows": []}) for v in VERDICTS)
    rows = {}
    for one in plans:
        out[one["verdict"]]["clusters"].append(one["cluster"])
        for comp in one["components"]:
            if comp["change"] == "unchanged":
                continue
            key = (comp["verdict"],) + _row_key(comp)
            if key not in rows:
                rows[key] = {"component": comp["name"], "change": comp["change"], "from": comp["version"]["from"], "to": comp["version"]["to"],
                             "class": comp["version"]["class"], "reasons": [f["message"] for f in comp["findings"]], "clusters": []}
                out[comp["verdict"]]["rows"].append(rows[key])
            rows[key]["clusters"].append(one["cluster"])
    for verdict, table in out.items():
        lines = ["| component | change | from | to | reasons | clusters |", "|---|---|---|---|---|---|"]
        for r in table["rows"]:
            cells = (r["component"], r["change"], r["from"] or "-", r["to"] or "-", "; ".join(r["reasons"]) or "-", ", ".join(r["clusters"]))
            lines.append("| %s |" % " | ".join(cells))
        table["table"] = "\n".join(lines)
        table["verdict"] = verdict
    return out


def plan_many(clusters, catalog, current_catalog=None, cache_dir=None, persist_cache=True, field="clusters", judge_crds=False,
              helm_binary="helm", repository_mirrors=None, repository_credentials=None):
    """``{verdict, plans, fleet}`` for every cluster (a current mapping or a ClusterStack) onto ``catalog``; ``field`` names
    the option the clusters came from (``clusters``: each ``clusters[i]``; else the one cluster is ``field``). With
    ``judge_crds`` the charts' CRDs are compared (charts pulled with ``helm_binary``, ``repository_mirrors`` and
    ``repository_credentials``; each chart version once for every cluster)."""
    problems = Problems("upgrade_plan")
    problems.text("catalog", catalog)
    problems.text("current_catalog", current_catalog)
    if not isinstance(clusters, list) or not clusters:
        problems.add("clusters", "%r is not allowed; use one or more current states (current, cluster_stack or clusters)" % (clusters,))
    problems.raise_if_any()
    fields = ["clusters[%d]" % i if field == "clusters" else field for i in range(len(clusters))]
    currents = [current_of(entry, i, current_catalog, fields[i]) for i, entry in enumerate(clusters)]
    seen = set()
    for i, current in enumerate(currents):
        if current.get("name") in seen:
            raise AicrError("%s.name: %r is not allowed; allowed: a name no other cluster has" % (fields[i], current.get("name")),
                            field="%s.name" % fields[i], value=current.get("name"))
        seen.add(current.get("name"))
    resolutions = Resolutions(cache_dir, persist_cache)
    judge = ChartCrdJudge(helm_binary, repository_mirrors, repository_credentials) if judge_crds else None
    try:
        plans = [plan(current, catalog, resolutions, fields[i], judge) for i, current in enumerate(currents)]
    finally:
        if judge is not None:
            judge.close()
    return {"changed": False, "verdict": worst([p["verdict"] for p in plans]), "plans": plans, "fleet": fleet(plans)}


def hold_back(stack, selected, cache_dir=None):
    """autoUpdate applies only a ``safe`` plan: ``selected`` (``releases.select`` with autoUpdate on) when it moves the stack
    nowhere or its plan is safe (with ``plan``), else the release the stack resolved, with ``held_back`` ({version,
    verdict, reasons}) and a ``message`` saying why. A plan that cannot be made holds back too (its error the reason)."""
    if not selected or not selected.get("upgrade"):
        return selected
    kept = releases.select((stack.get("spec") or {}).get("catalog"), selected.get("resolved_version"), False)
    try:
        result = plan_many([stack], selected["path"], current_catalog=kept["path"], cache_dir=cache_dir, field="cluster_stack")
        verdict, reasons = result["verdict"], result["plans"][0]["reasons"]
    except AicrError as exc:
        verdict, reasons = BLOCKED, ["no plan: %s" % exc.msg]
    if verdict == SAFE:
        return dict(selected, plan={"verdict": SAFE, "reasons": []})
    shown = "; ".join(reasons[:3]) + ("; and %d more" % (len(reasons) - 3) if len(reasons) > 3 else "")
    kept["held_back"] = {"version": selected["version"], "verdict": verdict, "reasons": reasons}
    kept["message"] = "autoUpdate held back catalog %s (upgrade plan: %s: %s); using %s" % (selected["version"], verdict, shown, kept["version"])
    return kept
