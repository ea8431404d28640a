# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Resolve a recipe: criteria -> AICR RecipeResult -> the managed components, in order.

Over 500 lines: it is AICR's ``BuildRecipeResultWithProfile`` step by step, and the snapshot path (constraint
exclusion, mixin re-composition, the relaxation retry) re-runs those same steps; split up, one algorithm would be
scattered over files that only make sense together.

Pipeline (AICR v0.19.0 ``BuildRecipeResultWithProfile`` + Builder):
match overlays -> "specify an OS" guard -> find the profile declaration -> merge
base and every matched chain -> merge mixins -> coverage post-condition -> apply
the profile -> validate dependencies -> deployment order -> registry defaults and
health checks -> Slurm accounting default. Then this collection's own inputs:
``skip_components`` and ``component_overrides``, and the ``components`` view.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import Component
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, merge_null_kept
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import aicrerrors
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as constraints_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import gpudriver
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import match
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import merge
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import order
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.options import check_inputs, override_problems_into
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import exposure, scheduling
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snapshot_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import values as values_mod

API_VERSION = "aicr.run/v1alpha2"
# The AICR release whose semantics this engine has: AICR's CLI stamps its own version in RecipeResult metadata.version.
AICR_VERSION = "v0.19.0"
API_VERSION_CONFIGURED = "aicr.run/v1alpha3"
RESULT_KIND = "RecipeResult"

_SLURM_ACCOUNTING_COMPONENTS = ("mariadb-operator-crds", "mariadb-operator", "slurm-accounting-mariadb")


def _canonical_type(value):
    if isinstance(value, str):
        if value.lower() == "helm":
            return "Helm"
        if value.lower() == "kustomize":
            return "Kustomize"
    return value


def apply_registry_defaults(catalog, refs):
    """Fill type/source/version/namespace/chart/manifestFiles from registry.yaml; hydrate health checks."""
    for ref in refs:
        if ref.get("type"):
            ref["type"] = _canonical_type(ref["type"])
        config = catalog.registry.get(ref["name"])
        if config is None:
            continue
        kustomize = config.get("kustomize") or {}
        helm = config.get("helm") or {}
        if not ref.get("type"):
            ref["type"] = "Kustomize" if kustomize.get("defaultSource") else "Helm"
        if ref["type"] == "Helm":
            for field, key in (("source", "defaultRepository"), ("version", "defaultVersion"), ("namespace", "defaultNamespace")):
                if not ref.get(field) and helm.get(key):
                    ref[field] = str(helm[key])
            if not ref.get("chart") and helm.get("defaultChart"):
                ref["chart"] = str(helm["defaultChart"]).rsplit("/", 1)[-1]
        elif ref["type"] == "Kustomize":
            for field, key in (("source", "defaultSource"), ("tag", "defaultTag"), ("path", "defaultPath")):
                if not ref.get(field) and kustomize.get(key):
                    ref[field] = str(kustomize[key])
        if not ref.get("manifestFiles") and config.get("manifestFiles"):
            ref["manifestFiles"] = list(config["manifestFiles"])
        assert_file = (config.get("healthCheck") or {}).get("assertFile")
        if assert_file and not ref.get("healthCheckSkip") and not ref.get("healthCheckAsserts"):
            ref["healthCheckAsserts"] = catalog.read_text(assert_file, field="registry %s healthCheck.assertFile" % ref["name"])


def coherence_problem(ref):
    """Why an enabled, defaulted componentRef cannot be deployed as declared ("" when coherent).

    AICR's ``coherenceProblem``: the deployment-shape fields of a ref must agree with its type.
    """
    name = ref["name"]
    if ref.get("patches"):
        return "component %r declares patches, but no deployer applies patch files; remove `patches`" % name
    rtype = ref.get("type") or ""
    tag, path = ref.get("tag") or "", ref.get("path") or ""
    if rtype == "Helm":
        if tag or path:
            return "component %r is Helm but carries Kustomize field(s) (tag=%r, path=%r); remove the tag/path" % (name, tag, path)
        for field in ("chart", "source", "version"):
            value = ref.get(field) or ""
            if value != value.strip():
                return "Helm component %r has a %s with surrounding whitespace (%r)" % (name, field, value)
        version = ref.get("version") or ""
        if version and not version.strip().lstrip("v"):
            return "Helm component %r has chart version %r; set a full chart version" % (name, version)
        if ref.get("source"):
            if not version:
                return "Helm component %r has no chart version; set version: on the componentRef or helm.defaultVersion in the registry" % name
        elif ref.get("chart"):
            return "Helm component %r has a chart name (%r) but no source repository; set source:, or remove the chart for a manifest-only component" % (
                name, ref["chart"])
        elif not ref.get("manifestFiles"):
            return "Helm component %r has no deployable primary (no source, no chart, and no primary manifestFiles)" % name
        return ""
    if rtype == "Kustomize":
        if not path:
            return "component %r is Kustomize but has no path; a path is required to build from" % name
        if tag and not ref.get("source"):
            return "component %r is Kustomize with tag %r but no source; a tag is only meaningful with a git source" % (name, tag)
        if ref.get("manifestFiles"):
            return "component %r is Kustomize but also declares manifestFiles; declare either Kustomize (tag/path) or manifest files" % name
        return ""
    return "component %r has unsupported type %r; expected 'Helm' or 'Kustomize'" % (name, rtype)


def validate_coherence(refs):
    problems = sorted(p for p in (coherence_problem(ref) for ref in refs if order.is_enabled(ref)) if p)
    if problems:
        raise AicrError("recipe has incoherent component ref(s): " + "; ".join(problems), problems=problems)


def _set_override(refs, name, override):
    for ref in refs:
        if ref["name"] == name:
            ref["overrides"] = merge_null_kept(ref.get("overrides"), override)
            return
    raise AicrError("Slurm recipe is missing required accounting component %r" % name, component=name)


def apply_slurm_accounting_default(result):
    """Builder default for ``platform: slurm``: accounting mode ``disabled``."""
    refs = result["componentRefs"]
    result["configuration"] = {"slurm": {"accounting": {"mode": "disabled"}}}
    result["apiVersion"] = API_VERSION_CONFIGURED
    _set_override(refs, "slinky-slurm", {"accounting": {"enabled": False}})
    for name in _SLURM_ACCOUNTING_COMPONENTS:
        _set_override(refs, name, {"install": False})
    result["deploymentOrder"] = order.deployment_order(refs)


def _omit_empty_phase_fields(validation):
    """Drop empty/unset fields inside validation phases, as AICR's omitempty serialisation does."""
    out = {}
    for phase, body in validation.items():
        if isinstance(body, dict):
            out[phase] = dict((k, v) for k, v in body.items() if v not in (None, "", [], {}))
        elif body is not None:
            out[phase] = body
    return out


def _merge_chains(catalog, overlays):
    """Base, then each overlay's chain from its root down (each overlay once): (spec, appliedOverlays)."""
    spec = merge.initial_spec(catalog.base["spec"])
    applied = ["base"]
    processed = set()
    for overlay in overlays:
        for doc in catalog.chain(overlay["metadata"]["name"]):
            name = doc["metadata"]["name"]
            if name in processed:
                continue
            processed.add(name)
            merge.merge_spec(spec, doc["spec"])
            applied.append(name)
    return spec, applied


def _invalid_evaluation(overlay_name, constraint, result):
    """AICR fails closed on an evaluation error other than "reading not in the snapshot", with the evaluator's words."""
    raise AicrError(aicrerrors.message(result.error), overlay=overlay_name, constraint=constraint["name"], expected=constraint["value"],
                    actual=result.actual, field="snapshot")


def _warning(overlay_name, constraint, result, reason):
    warning = {"overlay": overlay_name, "constraint": constraint["name"], "expected": constraint["value"], "reason": reason}
    if result.actual:
        warning["actual"] = result.actual
    return warning


def _evaluate_overlay(overlay, evaluator):
    """(passed, warnings) of one matched overlay's own constraints (AICR's ``evaluateOverlayConstraints``)."""
    name = overlay["metadata"]["name"]
    warnings = []
    for raw in overlay["spec"].get("constraints") or []:
        constraint = merge.clean_constraint(raw)
        result = evaluator(constraint)
        if result.error and result.error_code != "not_found":
            _invalid_evaluation(name, constraint, result)
        if result.error:
            warnings.append(_warning(name, constraint, result, result.error))
        elif not result.passed:
            warnings.append(_warning(name, constraint, result, "expected %s, got %s" % (constraint["value"], result.actual)))
    return not warnings, warnings


def _mixin_constraint_index(catalog, candidates):
    """Mixin constraint name -> the candidate leaves whose chains bring it in."""
    index = {}
    for candidate in candidates:
        seen = set()
        for doc in [catalog.base] + catalog.chain(candidate):
            for mixin_name in doc["spec"].get("mixins") or []:
                for c in (catalog.mixins.get(mixin_name) or {}).get("constraints") or []:
                    if c.get("name") in seen:
                        continue
                    seen.add(c.get("name"))
                    index.setdefault(c.get("name"), []).append(candidate)
    return index


def _evaluate_mixin_constraints(catalog, spec, contributed, candidates, evaluator):
    """Post-compose evaluation of the mixins' constraints: (failed candidates, warnings)."""
    if not contributed:
        return [], []
    index = _mixin_constraint_index(catalog, candidates)
    failed, warnings = [], []
    for constraint in spec["constraints"]:
        if constraint["name"] not in contributed:
            continue
        result = evaluator(constraint)
        if result.error and result.error_code != "not_found":
            _invalid_evaluation("(mixin)", constraint, result)
        if result.passed:
            continue
        affected = index.get(constraint["name"]) or []
        if not affected:
            raise AicrError("failed to map mixin constraint to candidate chain", constraint=constraint["name"])
        reason = "mixin-constraint-failed: " + (result.error or "expected %s, got %s" % (constraint["value"], result.actual))
        for candidate in affected:
            if candidate not in failed:
                failed.append(candidate)
            warnings.append(_warning(candidate, constraint, result, reason))
    return failed, warnings


def _compose(catalog, matched, evaluator):
    """(spec, applied, excludedOverlays, constraintWarnings); without an evaluator nothing is excluded."""
    if evaluator is None:
        spec, applied = _merge_chains(catalog, matched)
        merge.merge_mixins(catalog, spec)
        return spec, applied, [], []
    candidates, excluded, warnings = [], [], []
    for overlay in matched:
        passed, found = _evaluate_overlay(overlay, evaluator)
        if passed:
            candidates.append(overlay)
        else:
            excluded.append({"name": overlay["metadata"]["name"], "reason": "constraint-failed"})
            warnings.extend(found)
    spec, applied = _merge_chains(catalog, candidates)
    contributed = merge.merge_mixins(catalog, spec)
    names = [doc["metadata"]["name"] for doc in candidates]
    failed, found = _evaluate_mixin_constraints(catalog, spec, contributed, names, evaluator)
    if failed:
        excluded.extend({"name": name, "reason": "mixin-constraint-failed"} for name in names if name in failed)
        warnings.extend(found)
        surviving = [doc for doc in candidates if doc["metadata"]["name"] not in failed]
        spec, applied = _merge_chains(catalog, surviving)
        merge.merge_mixins(catalog, spec)
    return spec, applied, excluded, warnings


def build_recipe(catalog, query, profile=None, evaluator=None):
    """The AICR RecipeResult (a plain dict with AICR's field names) for a parsed query.

    With ``evaluator`` (a snapshot's :func:`~.constraints.evaluate`) this is AICR's snapshot path
    (``BuildRecipeResultWithEvaluatorAndProfile``): matched overlays whose own constraints fail are excluded, the
    mixins' constraints are evaluated after composition (a failure excludes the chains that brought the mixin in),
    the coverage post-condition runs on what survived, and the profile value's constraints must pass.
    """
    matched = match.find_matching(catalog, query)
    match.require_os_if_needed(catalog, query, matched)
    effective_profile = merge.find_profile(catalog, matched)

    spec, applied, excluded, warnings = _compose(catalog, matched, evaluator)
    if evaluator is not None and effective_profile is not None and effective_profile[0] != "base" and effective_profile[0] not in applied:
        raise AicrError("profile declaration from overlay %s was removed by snapshot constraint filtering" % aicrerrors.quote(effective_profile[0]),
                        field="snapshot", excludedOverlays=excluded, constraintWarnings=warnings)
    match.verify_coverage(catalog, query, applied, excluded if evaluator is not None else None, warnings)
    selected = merge.apply_profile(spec, effective_profile, profile, evaluator)

    refs = spec["componentRefs"]
    order.validate_dependencies(refs, where="merged recipe componentRefs")
    deployment = order.deployment_order(refs)
    apply_registry_defaults(catalog, refs)
    seen = set()
    for ref in refs:
        if ref["name"] in seen:
            raise AicrError("recipe has duplicate component ref name %r" % ref["name"], component=ref["name"])
        seen.add(ref["name"])
    validate_coherence(refs)

    criteria_out = dict((dim, query[dim]) for dim in crit.DIMENSIONS)
    if query.get("nodes"):
        criteria_out["nodes"] = query["nodes"]
    result = {
        "kind": RESULT_KIND,
        "apiVersion": API_VERSION,
        "metadata": {"version": AICR_VERSION, "appliedOverlays": applied},
        "criteria": criteria_out,
        "constraints": spec["constraints"],
        "componentRefs": refs,
        "deploymentOrder": deployment,
    }
    for ref in refs:  # AICR always serialises these two (no omitempty)
        ref.setdefault("type", "")
        ref.setdefault("source", "")
    if spec.get("validation") is not None:
        result["validation"] = _omit_empty_phase_fields(spec["validation"])
    if selected is not None:
        result["apiVersion"] = API_VERSION_CONFIGURED
        result["metadata"]["selectedProfile"] = selected
    if query.get("platform") == "slurm":
        apply_slurm_accounting_default(result)
    if excluded:
        result["metadata"]["excludedOverlays"] = excluded
    if warnings:
        result["metadata"]["constraintWarnings"] = warnings
    return result


def _check_user_inputs(result, skip_components, component_overrides):
    """Every ``skip_components`` entry and ``component_overrides`` key names a component of the recipe (all problems at once)."""
    names = [ref["name"] for ref in result["componentRefs"]]
    skip = list(skip_components or [])
    problems = Problems("recipe")
    for name in skip:
        if name not in names:
            problems.add("skip_components", "component %r is not in the resolved recipe (components: %s)" % (name, ", ".join(sorted(names))),
                         value=name, allowed=sorted(names))
    overrides = component_overrides or {}
    override_problems_into(problems, overrides, names)
    problems.raise_if_any()
    return skip, overrides


def apply_user_inputs(result, skip_components=None, component_overrides=None):
    """Pin versions/namespaces and disable components as the user asked; recompute the order."""
    skip, overrides = _check_user_inputs(result, skip_components, component_overrides)
    changed = False
    for ref in result["componentRefs"]:
        spec = overrides.get(ref["name"]) or {}
        if spec.get("version") is not None:
            ref["version"] = str(spec["version"])
        if spec.get("namespace") is not None:
            ref["namespace"] = str(spec["namespace"])
        enabled = spec.get("enabled")
        if ref["name"] in skip:
            enabled = False
        if enabled is not None and enabled != order.is_enabled(ref):
            gates = deep_copy(ref.get("overrides") or {})
            gates["enabled"] = enabled
            if enabled and gates.get("install") is False:
                gates["install"] = True
            ref["overrides"] = gates
            changed = True
    if changed:
        result["deploymentOrder"] = order.deployment_order(result["componentRefs"])
    return overrides


def component_of(catalog, ref, user_values=None, node_scheduling=None):
    """The :class:`Component` of one enabled componentRef: everything a Helm-based deployer needs.

    A Helm ref without chart and source but with manifest files deploys only those (no chart); any other ref's
    chart defaults to its name.
    """
    source = ref.get("source") or ""
    manifest_only = ref.get("type") == "Helm" and not ref.get("chart") and not source and bool(ref.get("manifestFiles"))
    vals, files = values_mod.component_values(catalog, ref, user_values, node_scheduling)
    for key in ("manifestFiles", "preManifestFiles"):
        for rel in ref.get(key) or []:
            if not catalog.has_file(rel):
                raise AicrError("component %s %s: file %s not found in catalog %s" % (ref["name"], key, rel, catalog.source),
                                component=ref["name"], file=rel)
    return Component(
        ref["name"], type=ref.get("type") or "", chart=ref.get("chart") or ("" if manifest_only else ref["name"]), repository=source,
        version=ref.get("version") or "", namespace=ref.get("namespace") or "", values=vals, values_files=files,
        pre_manifest_files=ref.get("preManifestFiles"), pre_manifest_paths=[catalog.abspath(p) for p in ref.get("preManifestFiles") or []],
        manifest_files=ref.get("manifestFiles"), manifest_paths=[catalog.abspath(p) for p in ref.get("manifestFiles") or []],
        cleanup=ref.get("cleanup"), manifest_only=manifest_only)


def shown(result, sensitive_values=None):
    """``result`` as recipe_resolve returns it unless told ``show_values``: everything secret (``_common.sensitive``: the
    ``sensitive_values`` key names and paths, URL userinfo) in the components' effective values and in the recipe's
    ``componentRefs[].overrides`` is ``<hidden>``; ``values_hidden`` says whether anything was (such a result cannot be
    deployed as it is: gated_release refuses it). The result itself is not changed."""
    sensitive = Sensitive(sensitive_values)
    out = dict(result)
    out["components"] = [dict(comp, values=sensitive.redact(comp.get("values") or {})) for comp in result.get("components") or []]
    recipe = dict(result.get("recipe") or {})
    if recipe.get("componentRefs"):
        recipe["componentRefs"] = [dict(ref, overrides=sensitive.redact(ref["overrides"])) if isinstance(ref, dict) and ref.get("overrides") else ref
                                   for ref in recipe["componentRefs"]]
    out["recipe"] = recipe
    out["values_hidden"] = out["components"] != (result.get("components") or []) or recipe != (result.get("recipe") or {})
    return out


def resolve(catalog_path, criteria=None, profile=None, skip_components=None, component_overrides=None, cache_dir=None, persist_cache=True,
            write_cache=True, snapshot=None, node_scheduling=None):
    """Resolve a recipe. Returns the dict the module and lookup return (see docs/modules/recipe_resolve.md).

    Every input is checked first (:func:`~.options.check_inputs`), before the catalog is read or unpacked."""
    check_inputs(catalog_path, criteria, profile, skip_components, component_overrides, snapshot, node_scheduling)
    cat = catalog_mod.load_catalog(catalog_path, cache_dir=cache_dir, persist=persist_cache, write_cache=write_cache)
    return resolve_loaded(cat, criteria, profile, skip_components, component_overrides, snapshot=snapshot, node_scheduling=node_scheduling)


NO_CRITERIA = ("no criteria provided: specify at least one of --service, --accelerator, --intent, --os, --platform, --nodes, --config, "
               "or use --snapshot to load from a snapshot file")
NO_SNAPSHOT_CRITERIA = ("snapshot %s yielded no recognizable criteria (criteria(any)); its measurements identify no service, accelerator, "
                        "intent, os, or platform \u2014 recapture with \"aicr snapshot\", or state criteria explicitly via "
                        "--service/--accelerator/--intent/--os/--platform/--nodes or --config")


def require_criteria(query, snapshot_name=None):
    """AICR's CLI refuses a query that states nothing (no dimension, no node count): it would resolve only ``base``."""
    if crit.specificity(query):
        return
    if snapshot_name is None:
        raise AicrError(NO_CRITERIA, field="criteria", allowed=list(crit.DIMENSIONS) + ["nodes", "snapshot"])
    raise AicrError(NO_SNAPSHOT_CRITERIA % aicrerrors.quote(snapshot_name), field="snapshot", allowed=list(crit.DIMENSIONS) + ["nodes"])


def build_from_snapshot(cat, criteria, snap, profile=None, evaluator=None, snapshot_name="snapshot"):
    """AICR's ``recipe --snapshot``: (result, query, snapshot criteria, relaxed dimensions).

    Criteria not given fall back to the snapshot's fingerprint (node count included); a query that still states
    nothing is refused; constraints are evaluated on the snapshot; a coverage failure whose uncovered dimensions
    all came from the fingerprint (none given) clears them and resolves once more. The snapshot's GPU driver state is
    then recorded (``gpudriver``).
    """
    given = dict((k, v) for k, v in (criteria or {}).items() if v not in (None, "") and not (k == "nodes" and not v))
    derived = snapshot_mod.criteria_from_snapshot(snap, cat.registered)
    merged = dict(derived)
    merged.update(given)
    query = crit.parse_criteria(merged, cat.registered)
    require_criteria(query, snapshot_name)
    stated = set(dim for dim in crit.DIMENSIONS if dim in given)
    if evaluator is None:
        def evaluator(constraint):
            return constraints_mod.evaluate(constraint, snap)
    relaxed = []
    try:
        result = build_recipe(cat, query, profile, evaluator)
    except AicrError as exc:
        relaxed = [entry["dimension"] for entry in exc.details.get("uncovered") or []]
        if not relaxed or any(dim in stated for dim in relaxed):
            raise
        query = dict(query)
        for dim in relaxed:
            query[dim] = crit.ANY
        result = build_recipe(cat, query, profile, evaluator)
    gpudriver.apply(cat, result, snap)
    return result, query, derived, relaxed


def resolve_loaded(cat, criteria=None, profile=None, skip_components=None, component_overrides=None, snapshot=None, node_scheduling=None):
    """:func:`resolve` on an already loaded :class:`~.catalog.Catalog` (no file-system check); ``node_scheduling``
    (None: AICR's defaults, ``tolerations: [{operator: Exists}]``) is written into every component's values
    (``scheduling``)."""
    chosen = scheduling.settings(node_scheduling)
    extra = {}
    if snapshot is None:
        query = crit.parse_criteria(criteria, cat.registered)
        require_criteria(query)
        result = build_recipe(cat, query, profile)
    else:
        crit.parse_criteria(criteria, cat.registered)  # the user's criteria are checked as given
        warnings = []
        snap = snapshot_mod.load(snapshot, warnings)
        name = snapshot if isinstance(snapshot, str) else "snapshot"
        result, query, derived, relaxed = build_from_snapshot(cat, criteria, snap, profile, snapshot_name=name)
        extra = {"snapshot_criteria": derived, "relaxed_dimensions": relaxed}
        if warnings:
            extra["warnings"] = warnings
    overrides = apply_user_inputs(result, skip_components, component_overrides)

    refs = dict((ref["name"], ref) for ref in result["componentRefs"])
    enabled = set(result["deploymentOrder"])
    components = []
    for index, name in enumerate(result["deploymentOrder"]):
        ref = refs[name]
        comp = component_of(cat, ref, (overrides.get(name) or {}).get("values"), chosen)
        comp.order = index
        for dep in ref.get("dependencyRefs") or []:
            (comp.dependencies if dep in enabled else comp.external_dependencies).append(dep)
        components.append(comp)
    scheduling.annotate_dra(dict((comp.name, comp.values) for comp in components),
                            dict((name, refs[name].get("version") or "") for name in result["deploymentOrder"]))
    exposure.settle_source_ranges(dict((comp.name, comp.values) for comp in components))
    components = [comp.to_dict() for comp in components]
    answer = dict({
        "recipe": result,
        "components": components,
        "recipe_name": crit.recipe_name(query),
        "catalog_digest": cat.digest,
        "catalog_root": cat.root,
        "graph": order.mermaid(result["componentRefs"], result["deploymentOrder"]),
    }, **extra)
    # the catalog's documents were bounded one by one; what the result copies from them (values, overlays merged) is
    # bounded as a whole too, so no catalog can make the result a copy of an expanded alias graph
    bounded.check_value(answer, "recipe_resolve result")
    return answer
