# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Merging recipe specs: inheritance chains, mixins and configuration profiles.

Over 400 lines: AICR's merge rules for specs, component refs, mixins and profiles are one rule set, each rule a
few lines, kept side by side so they can be read against AICR's ``Merge`` in one place.

A merged spec is a dict ``{constraints, componentRefs, validation, mixins}``.
Rules (AICR v0.19.0 ``RecipeMetadataSpec.Merge`` / ``mergeComponentRef``):

* constraints: keyed by name, the later one wins; the list is kept sorted by name;
* componentRefs: keyed by name; a new name is added as is; for a known name the
  later ref's non-empty scalar fields win, ``overrides`` are deep-merged,
  ``dependencyRefs`` / ``manifestFiles`` / ``preManifestFiles`` are appended
  without duplicates, ``patches`` and ``expectedResources`` are replaced when
  given, ``cleanup`` / ``healthCheckSkip`` can only be switched on; the list is
  kept sorted by name;
* validation: merged phase by phase (checks and constraints unioned; an explicit
  empty list clears the inherited one);
* mixins: names accumulated without duplicates, merged once after the chains.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import aicrerrors
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import order as order_mod
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, merge_null_kept

REF_FIELDS = (
    "name", "namespace", "chart", "type", "source", "version", "tag", "valuesFile", "overrides", "patches",
    "dependencyRefs", "manifestFiles", "preManifestFiles", "path", "cleanup", "expectedResources",
    "healthCheckAsserts", "healthCheckSkip",
)
_SCALAR_FIELDS = ("namespace", "chart", "type", "source", "version", "tag", "valuesFile", "path", "healthCheckAsserts")
_APPEND_FIELDS = ("dependencyRefs", "manifestFiles", "preManifestFiles")
_CONSTRAINT_FIELDS = ("name", "value", "severity", "remediation", "unit")
_MIXIN_SAFE_FIELDS = ("name", "namespace", "manifestFiles", "preManifestFiles")
_PROFILE_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def clean_ref(ref):
    """A copy of a catalog componentRef restricted to the fields AICR knows."""
    out = {}
    for key in REF_FIELDS:
        value = ref.get(key)
        if value is None or value == "" or value is False:
            continue
        if isinstance(value, list) and not value:
            continue
        if isinstance(value, dict) and not value:
            continue
        out[key] = deep_copy(value)
    if isinstance(out.get("version"), (int, float)):
        out["version"] = str(out["version"])
    return out


def clean_constraint(constraint):
    out = {}
    for key in _CONSTRAINT_FIELDS:
        value = constraint.get(key)
        if value is not None and value != "":
            out[key] = value if isinstance(value, str) else str(value)
    out.setdefault("name", "")
    out.setdefault("value", "")
    return out


def merge_ref(base, overlay):
    """``mergeComponentRef``: ``overlay`` (cleaned) onto a copy of ``base`` (cleaned)."""
    result = dict(base)
    for key in _SCALAR_FIELDS:
        if overlay.get(key):
            result[key] = overlay[key]
    if overlay.get("overrides"):
        result["overrides"] = merge_null_kept(result.get("overrides"), overlay["overrides"])
    if overlay.get("patches"):
        result["patches"] = list(overlay["patches"])
    for key in _APPEND_FIELDS:
        extra = overlay.get(key)
        if extra:
            current = list(result.get(key) or [])
            for item in extra:
                if item not in current:
                    current.append(item)
            result[key] = current
    if overlay.get("cleanup"):
        result["cleanup"] = True
    if overlay.get("expectedResources"):
        result["expectedResources"] = deep_copy(overlay["expectedResources"])
    if overlay.get("healthCheckSkip"):
        result["healthCheckSkip"] = True
    return result


def merge_validation_phase(base, overlay):
    if overlay is None:
        return base
    if base is None:
        return deep_copy(overlay)
    out = dict((k, deep_copy(v)) for k, v in base.items() if k not in ("checks", "constraints", "nodeSelection"))
    for key, value in overlay.items():
        if key in ("checks", "constraints", "nodeSelection"):
            continue
        if value not in (None, ""):
            out[key] = deep_copy(value)
    b_checks, o_checks = base.get("checks"), overlay.get("checks")
    if o_checks is not None and len(o_checks) == 0:
        out["checks"] = []
    elif len(b_checks or []) + len(o_checks or []) > 0:
        merged = []
        for check in list(b_checks or []) + list(o_checks or []):
            if check not in merged:
                merged.append(check)
        out["checks"] = merged
    b_cons, o_cons = base.get("constraints"), overlay.get("constraints")
    if o_cons is not None and len(o_cons) == 0:
        out["constraints"] = []
    elif len(b_cons or []) + len(o_cons or []) > 0:
        by_name = dict((c.get("name"), c) for c in (o_cons or []))
        seen = set()
        merged = []
        for c in list(b_cons or []):
            if c.get("name") in seen:
                continue
            seen.add(c.get("name"))
            merged.append(deep_copy(by_name.get(c.get("name"), c)))
        for c in list(o_cons or []):
            if c.get("name") in seen:
                continue
            seen.add(c.get("name"))
            merged.append(deep_copy(by_name[c.get("name")]))
        out["constraints"] = merged
    if overlay.get("nodeSelection") is not None:
        out["nodeSelection"] = deep_copy(overlay["nodeSelection"])
    elif base.get("nodeSelection") is not None:
        out["nodeSelection"] = deep_copy(base["nodeSelection"])
    return out


PHASES = ("readiness", "deployment", "performance", "conformance")


def merge_validation(base, overlay):
    if overlay is None:
        return base
    if base is None:
        return deep_copy(overlay)
    out = dict(base)
    for phase in PHASES:
        if phase in overlay or phase in base:
            merged = merge_validation_phase(base.get(phase), overlay.get(phase))
            if merged is not None:
                out[phase] = merged
    return out


def initial_spec(base_spec):
    """The merge starting point: a copy of base (componentRefs keep base.yaml order)."""
    return {
        "constraints": [clean_constraint(c) for c in base_spec.get("constraints") or []],
        "componentRefs": [clean_ref(r) for r in base_spec.get("componentRefs") or []],
        "validation": deep_copy(base_spec.get("validation")),
        "mixins": [],
    }


def merge_spec(spec, other):
    """``RecipeMetadataSpec.Merge`` of a catalog spec ``other`` into the merged ``spec``."""
    constraints = dict((c["name"], c) for c in spec["constraints"])
    for c in other.get("constraints") or []:
        cleaned = clean_constraint(c)
        constraints[cleaned["name"]] = cleaned
    spec["constraints"] = [constraints[name] for name in sorted(constraints)]

    refs = {}
    for ref in spec["componentRefs"]:
        refs[ref["name"]] = ref
    for raw in other.get("componentRefs") or []:
        overlay = clean_ref(raw)
        if overlay["name"] in refs:
            refs[overlay["name"]] = merge_ref(refs[overlay["name"]], overlay)
        else:
            refs[overlay["name"]] = overlay
    spec["componentRefs"] = [refs[name] for name in sorted(refs)]

    if other.get("validation") is not None:
        spec["validation"] = merge_validation(spec["validation"], other["validation"])

    for mixin in other.get("mixins") or []:
        if mixin not in spec["mixins"]:
            spec["mixins"].append(mixin)
    return spec


def _mixin_unsafe_field(ref):
    """First identity/sourcing field a mixin ref sets (mixins may only add namespace and manifests)."""
    for key in REF_FIELDS:
        if key in _MIXIN_SAFE_FIELDS:
            continue
        value = ref.get(key)
        if value not in (None, "", False, [], {}):
            return key
    return None


def merge_mixins(catalog, spec):
    """Merge every accumulated mixin once, in order; conflicts are errors naming the mixin.

    Returns the names of the constraints the mixins contributed (evaluated after composition on the snapshot path).
    """
    contributed = set()
    if not spec["mixins"]:
        return contributed
    constraints = set(c["name"] for c in spec["constraints"])
    components = set(r["name"] for r in spec["componentRefs"])
    for name in spec["mixins"]:
        mixin = catalog.mixins.get(name)
        if mixin is None:
            raise AicrError("mixin %r not found in recipes/mixins/ (known: %s)" % (name, ", ".join(sorted(catalog.mixins)) or "none"), mixin=name)
        where = catalog.mixin_paths[name]
        for c in mixin.get("constraints") or []:
            if c.get("name") in constraints:
                raise AicrError("mixin %r (%s) constraint %r conflicts with inheritance chain or another mixin" % (name, where, c.get("name")),
                                mixin=name, constraint=c.get("name"))
        for ref in mixin.get("componentRefs") or []:
            if ref["name"] not in components:
                continue
            offending = _mixin_unsafe_field(ref)
            if offending:
                raise AicrError(
                    "mixin %r (%s) component %r sets identity/sourcing field %r which conflicts with the inheritance chain; "
                    "mixins may only contribute namespace, manifestFiles or preManifestFiles to an existing component" % (name, where, ref["name"], offending),
                    mixin=name, component=ref["name"], field=offending,
                )
        merge_spec(spec, {"constraints": mixin.get("constraints") or [], "componentRefs": mixin.get("componentRefs") or []})
        constraints.update(c.get("name") for c in mixin.get("constraints") or [])
        contributed.update(c.get("name") for c in mixin.get("constraints") or [])
        components.update(r["name"] for r in mixin.get("componentRefs") or [])
    spec["mixins"] = []
    return contributed


# -- configuration profiles ------------------------------------------------------------

def find_profile(catalog, overlays):
    """The single ``spec.profile`` declaration reachable from base and the matched chains."""
    found = {}
    if catalog.base["spec"].get("profile") is not None:
        found["base"] = catalog.base["spec"]["profile"]
    for overlay in overlays:
        for doc in catalog.chain(overlay["metadata"]["name"]):
            if doc["spec"].get("profile") is not None:
                found[doc["metadata"]["name"]] = doc["spec"]["profile"]
    if not found:
        return None
    if len(found) > 1:
        raise AicrError("resolved composition has multiple profile declarations from [%s]" % " ".join(sorted(found)), sources=sorted(found))
    source = list(found)[0]
    return source, found[source]


def _flatten(overrides, prefix, out):
    for key, value in overrides.items():
        if not isinstance(key, str) or not key or "." in key:
            raise AicrError("profile override key %r must be nonempty and may not contain a literal dot" % (key,))
        path = prefix + [key]
        if isinstance(value, dict):
            if not value:
                raise AicrError("profile override %r assigns an empty map" % ".".join(path))
            _flatten(value, path, out)
        else:
            out.append(".".join(path))


def validate_profile(decl, source):
    """Check a declaration (AICR's closed v1 contract) and return its owned paths per component."""
    where = "profile declared by overlay %r" % source
    if not isinstance(decl, dict):
        raise AicrError("%s: spec.profile must be a mapping" % where)
    name, default, values = decl.get("name"), decl.get("default"), decl.get("values")
    if not isinstance(name, str) or not _PROFILE_ID.match(name):
        raise AicrError("%s: profile name must match [A-Za-z0-9._-]+ (got %r)" % (where, name))
    if not isinstance(default, str) or not _PROFILE_ID.match(default):
        raise AicrError("%s: profile default must match [A-Za-z0-9._-]+ (got %r)" % (where, default))
    if not isinstance(values, dict) or not values:
        raise AicrError("%s: profile %r must declare at least one value" % (where, name))
    if default not in values:
        raise AicrError("%s: profile %r default %r is not a declared value" % (where, name, default))
    owned = {}
    expected = None
    for value_name in sorted(values):
        if not _PROFILE_ID.match(str(value_name)):
            raise AicrError("%s: profile value %r must match [A-Za-z0-9._-]+" % (where, value_name))
        value = values[value_name] or {}
        paths = []
        seen = set()
        for ref in value.get("componentRefs") or []:
            comp = ref.get("name")
            if not comp:
                raise AicrError("%s: profile %r value %r has a componentRef with an empty name" % (where, name, value_name))
            if comp in seen:
                raise AicrError("%s: profile %r value %r repeats componentRef %r" % (where, name, value_name, comp))
            seen.add(comp)
            overrides = ref.get("overrides") or {}
            if "enabled" in overrides:
                raise AicrError("%s: profile %r value %r component %r may not assign overrides.enabled" % (where, name, value_name, comp))
            flat = []
            _flatten(overrides, [], flat)
            owned.setdefault(comp, set()).update(flat)
            owned[comp].add("enabled")
            paths.extend("%s:%s" % (comp, p) for p in flat)
        paths.sort()
        if expected is None:
            expected = paths
        elif paths != expected:
            raise AicrError("%s: profile %r violates union totality: value %r assigns %s, expected %s" % (where, name, value_name, paths, expected))
    return dict((comp, sorted(p)) for comp, p in owned.items())


def profile_problem(raw):
    """What is wrong with a profile selection (the text after ``profile: ``), or None; ``None``/``""`` select none."""
    if raw in (None, ""):
        return None
    if not isinstance(raw, str) or raw.strip() != raw or raw.count("=") != 1:
        return "must use the exact name=value form"
    name, value = raw.split("=", 1)
    if not _PROFILE_ID.match(name) or not _PROFILE_ID.match(value):
        return "name and value must match [A-Za-z0-9._-]+"
    return None


def parse_selection(raw):
    if raw in (None, ""):
        return None
    problem = profile_problem(raw)
    if problem:
        raise AicrError("profile " + problem, field="profile", value=raw)  # AICR's text
    name, value = raw.split("=", 1)
    return name, value


def _check_profile_constraint(decl_name, value_name, constraint, evaluator):
    """Fail closed, as AICR does, when a snapshot is given and a profile value's constraint is not met."""
    result = evaluator(constraint)
    details = dict(constraint=constraint["name"], expected=constraint["value"], actual=result.actual, field="profile")
    if result.error and result.error_code == "not_found":
        raise AicrError("profile %s=%s cannot be validated because reading %s is unavailable" % (decl_name, value_name, aicrerrors.quote(constraint["name"])),
                        cause=result.error, **details)
    if result.error:
        raise AicrError(aicrerrors.message(result.error), **details)
    if not result.passed:
        raise AicrError("profile %s=%s constraint %s failed" % (decl_name, value_name, aicrerrors.quote(constraint["name"])), **details)


def apply_profile(spec, effective, raw_selection, evaluator=None):
    """Apply the default or selected profile value; returns AICR's ``selectedProfile`` or None.

    With a snapshot ``evaluator`` each of the value's constraints must pass (an unavailable reading fails too).
    """
    selection = parse_selection(raw_selection)
    if effective is None:
        if selection is not None:
            raise AicrError("profile %s was selected, but the resolved composition declares no profile" % aicrerrors.quote(selection[0]),
                            field="profile", value=raw_selection)
        return None
    source, decl = effective
    owned = validate_profile(decl, source)
    value_name = decl["default"]
    if selection is not None:
        if selection[0] != decl["name"]:
            raise AicrError("resolved composition declares profile %s, not %s" % (aicrerrors.quote(decl["name"]), aicrerrors.quote(selection[0])),
                            field="profile", value=raw_selection, allowed=[decl["name"]])
        value_name = selection[1]
    if value_name not in decl["values"]:
        names = sorted(decl["values"])
        msg = "profile %s has no value %s; valid values: %s" % (aicrerrors.quote(decl["name"]), aicrerrors.quote(value_name), aicrerrors.go_list(names))
        raise AicrError(msg, field="profile", value=raw_selection, allowed=names)
    value = decl["values"][value_name] or {}
    index = dict((ref["name"], i) for i, ref in enumerate(spec["componentRefs"]))
    for comp in sorted(owned):
        if comp not in index or not order_mod.is_enabled(spec["componentRefs"][index[comp]]):
            raise AicrError("profile %s references component %s, which is not enabled in the surviving composition" % (
                aicrerrors.quote(decl["name"]), aicrerrors.quote(comp)), field="profile", component=comp)
    names = set(c["name"] for c in spec["constraints"])
    for c in value.get("constraints") or []:
        cleaned = clean_constraint(c)
        if cleaned["name"] in names:
            raise AicrError("profile %s value %s constraint %s collides with the composed recipe" % (
                aicrerrors.quote(decl["name"]), aicrerrors.quote(value_name), aicrerrors.quote(cleaned["name"])), field="profile", constraint=cleaned["name"])
        names.add(cleaned["name"])
        if evaluator is not None:
            _check_profile_constraint(decl["name"], value_name, cleaned, evaluator)
        spec["constraints"].append(cleaned)
    spec["constraints"].sort(key=lambda c: c["name"])
    readiness = value.get("readinessConstraints") or []
    if readiness:
        validation = spec["validation"] = deep_copy(spec["validation"]) or {}
        phase = validation.setdefault("readiness", {}) or {}
        validation["readiness"] = phase
        existing = phase.setdefault("constraints", [])
        taken = set(c.get("name") for c in existing)
        for c in readiness:
            cleaned = clean_constraint(c)
            if cleaned["name"] in taken:
                raise AicrError("profile %r value %r readiness constraint %r collides with the composed recipe's readiness constraints"
                                % (decl["name"], value_name, cleaned["name"]))
            taken.add(cleaned["name"])
            existing.append(cleaned)
    for ref in value.get("componentRefs") or []:
        target = spec["componentRefs"][index[ref["name"]]]
        target["overrides"] = merge_null_kept(target.get("overrides"), ref.get("overrides"))
    selected = {"name": decl["name"], "value": value_name, "ownedPaths": owned}
    if value.get("advertiser"):
        selected["advertiser"] = value["advertiser"]
    return selected
