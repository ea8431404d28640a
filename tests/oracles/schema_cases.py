"""What the schema oracles compare (issue #38), without any peer: the CRD pairs crdify judges, the normalisation of
findings (crdify's and ours), and the per-property type sets of a JSON Schema.

Shared by the golden generator (``schema_peers.py``, which runs the peers), the unit tests that compare our engines
with the committed goldens (``tests/unit/plugins/module_utils/_schema/test_schema_oracles.py``) and the bench
(``tests/bench/bench_schema_peers.py``).

CRD pairs
---------
* ``<chart>/<mutation>``: for every corpus chart, the structural CRD values_schema generates (``engine.run``, output
  ``crd``) against a copy with one systematic change at one property. The property is picked among the candidates
  the mutation applies to (sorted paths under ``^.spec.values``) by a CRC of ``chart/mutation``, so a pair is the same
  on every machine. Every value a mutation writes is synthetic (never text from the chart), so a golden holds no
  chart content beyond property paths.
* ``version/<old>--<new>``: the corpus's versions of one chart (the four juiceshop entries: NeuraLegion's chart,
  helmetica's v3.1.0 and its before/after pair), each ordered pair.
* ``crd-compat/<suite>/<case>``: the old/new CRDs of ``../shared/crd-compat`` (crdify's and crd-schema-checker's cases
  that have both).

A pair's ``digest`` (sha256 of both CRDs, canonical JSON, 16 hex) is stored in the golden: when our CRD generator
changes the CRD of a chart, the pair is no longer the one crdify judged and the tests say so.
"""

import copy
import hashlib
import json
import re
import zlib
from pathlib import Path

import yaml

VALUES = "^.spec.values"
SCALARS = ("string", "integer", "number", "boolean")


# --- nodes of a CRD's values schema ------------------------------------------------------------

def walk(schema, path="^", parent=None, link=None, out=None):
    """path -> (node, parent, link) over properties / items / additionalProperties, paths as compat.flatten writes them.

    ``link`` is ``("properties", name)``, ``("items", None)`` or ``("additionalProperties", None)``."""
    if out is None:
        out = {}
    if not isinstance(schema, dict):
        return out
    out[path] = (schema, parent, link)
    for name, child in (schema.get("properties") or {}).items():
        walk(child, "%s.%s" % (path, name), schema, ("properties", name), out)
    if isinstance(schema.get("items"), dict):
        walk(schema["items"], path + "[*]", schema, ("items", None), out)
    if isinstance(schema.get("additionalProperties"), dict):
        walk(schema["additionalProperties"], path + ".*", schema, ("additionalProperties", None), out)
    return out


def root_of(crd, index=0):
    return crd["spec"]["versions"][index]["schema"]["openAPIV3Schema"]


def _is_leaf(node, kind):
    return node.get("type") == kind and not node.get("properties") and not node.get("enum") and "x-kubernetes-int-or-string" not in node


# --- mutations -----------------------------------------------------------------------------------
# Each: (name, does it apply to this node?, change(old_crd, new_crd, path)). Changes write synthetic values only.

def _node(crd, path):
    return walk(root_of(crd))[path]


def _set(side, key, value):
    def change(old, new, path):
        for crd in ((old,) if side == "old" else (new,) if side == "new" else (old, new)):
            _node(crd, path)[0][key] = copy.deepcopy(value)
    return change


def _chain(*changes):
    def change(old, new, path):
        for step in changes:
            step(old, new, path)
    return change


def _drop(key):
    def change(_old, new, path):
        _node(new, path)[0].pop(key, None)
    return change


def _remove(_old, new, path):
    _node_, parent, link = _node(new, path)
    if link[0] == "properties":
        del parent["properties"][link[1]]
        if link[1] in (parent.get("required") or []):
            parent["required"] = [r for r in parent["required"] if r != link[1]]
            if not parent["required"]:
                del parent["required"]
    else:
        del parent[link[0]]


def _retype(new_type):
    def change(_old, new, path):
        node = _node(new, path)[0]
        node["type"] = new_type
        node.pop("x-kubernetes-int-or-string", None)
        node.pop("format", None)
    return change


def _to_int_or_string(_old, new, path):
    node = _node(new, path)[0]
    node.pop("type", None)
    node.pop("format", None)
    node["x-kubernetes-int-or-string"] = True


def _item_type(new_type):
    def change(_old, new, path):
        _node(new, path)[0]["items"] = {"type": new_type}
    return change


def _map_values(_old, new, path):
    node = _node(new, path)[0]
    node.pop("x-kubernetes-preserve-unknown-fields", None)
    node["additionalProperties"] = {"type": "string"}


def _require_existing(_old, new, path):
    node = _node(new, path)[0]
    optional = sorted(n for n in node["properties"] if n not in (node.get("required") or []))
    node["required"] = sorted((node.get("required") or []) + optional[:1])


def _add_field(required, nested=False):
    def change(_old, new, path):
        node = _node(new, path)[0]
        if nested:  # a new optional object holding a required field
            node["properties"]["oracleAdded"] = {"type": "object", "required": ["inner"], "properties": {"inner": {"type": "string"}}}
            return
        node["properties"]["oracleAdded"] = {"type": "string"}
        if required:
            node["required"] = sorted((node.get("required") or []) + ["oracleAdded"])
    return change


def _scope(old, new, _path):
    old["spec"]["scope"] = "Namespaced"
    new["spec"]["scope"] = "Cluster"


def _rename_version(_old, new, _path):
    new["spec"]["versions"][0]["name"] = "v1beta1"


def _add_version(changed):
    def change(_old, new, path):
        extra = copy.deepcopy(new["spec"]["versions"][0])
        extra.update(name="v1beta1", storage=False, served=True)
        new["spec"]["versions"].append(extra)
        if changed:  # the new served version lacks the property: served-version validation compares v1alpha1 -> v1beta1
            fake = {"spec": {"versions": [extra]}}
            _remove(None, fake, path)
    return change


def _unserve_version(old, new, _path):
    for crd in (old, new):
        extra = copy.deepcopy(crd["spec"]["versions"][0])
        extra.update(name="v1beta1", storage=False, served=True)
        crd["spec"]["versions"].append(extra)
    new["spec"]["versions"][1]["served"] = False


def _is(kind):
    return lambda n: _is_leaf(n, kind)


def _object(node):
    return node.get("type") == "object" and bool(node.get("properties"))


def _free_object(node):
    return node.get("type") == "object" and node.get("x-kubernetes-preserve-unknown-fields") and not node.get("properties") \
        and "additionalProperties" not in node


def _string_array(node):
    return node.get("type") == "array" and isinstance(node.get("items"), dict) and node["items"].get("type") == "string"


def _array(node):
    return node.get("type") == "array"


def _any_leaf(node):
    return not node.get("properties") and (node.get("type") in SCALARS or "x-kubernetes-int-or-string" in node)


def _described(node):
    return _any_leaf(node) and bool(node.get("description"))


def _nullable(node):
    return bool(node.get("nullable"))


def _not_nullable_leaf(node):
    return _any_leaf(node) and not node.get("nullable")


def _int_or_string(node):
    return bool(node.get("x-kubernetes-int-or-string"))


def _formatted(node):
    return bool(node.get("format")) and not node.get("properties")


def _whole_crd(_node_):
    return True


ENUM = ["oracle-a", "oracle-b", "oracle-c"]
MUTATIONS = [
    ("identity", _whole_crd, lambda old, new, path: None),
    ("field_removed_leaf", _any_leaf, _remove),
    ("field_removed_object", _object, _remove),
    ("field_removed_list", _array, _remove),
    ("type_string_to_integer", _is("string"), _retype("integer")),
    ("type_integer_to_string", _is("integer"), _retype("string")),
    ("type_integer_to_number", _is("integer"), _retype("number")),
    ("type_boolean_to_string", _is("boolean"), _retype("string")),
    ("type_object_to_string", _object, _chain(_retype("string"), lambda o, n, p: _node(n, p)[0].pop("properties"))),
    ("type_to_int_or_string", _is("integer"), _to_int_or_string),
    ("int_or_string_to_string", _int_or_string, _retype("string")),
    ("items_type_changed", _string_array, _item_type("integer")),
    ("free_map_to_string_map", _free_object, _map_values),
    ("preserve_unknown_removed", _free_object, _drop("x-kubernetes-preserve-unknown-fields")),
    ("preserve_unknown_added", _object, _set("new", "x-kubernetes-preserve-unknown-fields", True)),
    ("enum_added", _is("string"), _set("new", "enum", ENUM)),
    ("enum_value_removed", _is("string"), _chain(_set("old", "enum", ENUM), _set("new", "enum", ENUM[:2]))),
    ("enum_value_added", _is("string"), _chain(_set("old", "enum", ENUM[:2]), _set("new", "enum", ENUM))),
    ("enum_value_swapped", _is("string"), _chain(_set("old", "enum", ENUM[:2]), _set("new", "enum", ENUM[1:]))),
    ("enum_removed", _is("string"), _set("old", "enum", ENUM)),
    ("required_existing_field", _object, _require_existing),
    ("required_new_field", _object, _add_field(True)),
    ("optional_field_added", _object, _add_field(False)),
    ("new_object_with_required_field", _object, _add_field(False, nested=True)),
    ("minimum_added", _is("integer"), _set("new", "minimum", 1)),
    ("minimum_increased", _is("integer"), _chain(_set("old", "minimum", 0), _set("new", "minimum", 2))),
    ("minimum_decreased", _is("integer"), _chain(_set("old", "minimum", 2), _set("new", "minimum", 0))),
    ("maximum_added", _is("integer"), _set("new", "maximum", 100)),
    ("maximum_decreased", _is("integer"), _chain(_set("old", "maximum", 100), _set("new", "maximum", 10))),
    ("maximum_increased", _is("integer"), _chain(_set("old", "maximum", 10), _set("new", "maximum", 100))),
    ("exclusive_maximum_added", _is("integer"), _chain(_set("both", "maximum", 100), _set("new", "exclusiveMaximum", True))),
    ("multiple_of_added", _is("integer"), _set("new", "multipleOf", 2)),
    ("min_length_added", _is("string"), _set("new", "minLength", 1)),
    ("max_length_decreased", _is("string"), _chain(_set("old", "maxLength", 64), _set("new", "maxLength", 8))),
    ("min_items_added", _array, _set("new", "minItems", 1)),
    ("max_items_added", _array, _set("new", "maxItems", 3)),
    ("min_properties_added", _object, _set("new", "minProperties", 1)),
    ("max_properties_decreased", _object, _chain(_set("old", "maxProperties", 50), _set("new", "maxProperties", 5))),
    ("default_added", _is("string"), _set("new", "default", "oracle-default")),
    ("default_changed", _is("string"), _chain(_set("old", "default", "oracle-old"), _set("new", "default", "oracle-new"))),
    ("default_removed", _is("string"), _set("old", "default", "oracle-old")),
    ("description_changed", _any_leaf, _chain(_set("old", "description", "oracle: before"), _set("new", "description", "oracle: after"))),
    ("description_removed", _described, _drop("description")),
    ("nullable_removed", _nullable, _drop("nullable")),
    ("nullable_added", _not_nullable_leaf, _set("new", "nullable", True)),
    ("pattern_added", _is("string"), _set("new", "pattern", "^[a-z]+$")),
    ("pattern_changed", _is("string"), _chain(_set("old", "pattern", "^[a-z]+$"), _set("new", "pattern", "^[a-z0-9]+$"))),
    ("pattern_removed", _is("string"), _set("old", "pattern", "^[a-z]+$")),
    ("format_added", _is("string"), _set("new", "format", "date-time")),
    ("format_removed", _formatted, _drop("format")),
    ("list_type_added", _string_array, _set("new", "x-kubernetes-list-type", "set")),
    ("scope_changed", _whole_crd, _scope),
    ("version_renamed", _whole_crd, _rename_version),
    ("served_version_added", _whole_crd, _add_version(False)),
    ("served_version_added_without_field", _any_leaf, _add_version(True)),
    ("version_unserved", _whole_crd, _unserve_version),
]
MUTATION_NAMES = [m[0] for m in MUTATIONS]
_BY_NAME = dict((m[0], m) for m in MUTATIONS)


def pick(chart, mutation, candidates):
    """The candidate a mutation applies to in a chart: fixed by a CRC of the pair's name, so every machine picks it."""
    if not candidates:
        return None
    return sorted(candidates)[zlib.crc32(("%s/%s" % (chart, mutation)).encode("utf-8")) % len(candidates)]


def _descendants(node):
    return len(walk(node)) - 1


SUBTREES = ("field_removed_object", "field_removed_list", "type_object_to_string")
SMALL_SUBTREE = 6  # a removed subtree of at most this many descendants: every descendant is a finding, goldens stay small


def candidates(base, mutation):
    """The paths a mutation may apply to in a CRD (sorted), or ["^"] for a change of the whole CRD."""
    _name, applies, _change = _BY_NAME[mutation]
    if applies is _whole_crd:
        return ["^"]
    nodes = walk(root_of(base))
    found = [p for p, (node, _parent, _link) in nodes.items()
             if p.startswith(VALUES + ".") and ".*" not in p[len(VALUES):] and applies(node)]
    if mutation.startswith("field_removed") or mutation == "served_version_added_without_field":
        found = [p for p in found if nodes[p][2][0] == "properties"]
    if mutation in SUBTREES:
        found = [p for p in found if _descendants(nodes[p][0]) <= SMALL_SUBTREE]
    return sorted(found)


def mutate(base, chart, mutation, path=None):
    """(old, new, path) for one mutation of a chart's CRD, or None when the CRD has no property it applies to.

    ``path`` (a golden's) rebuilds that pair; by default the path is picked among the candidates."""
    if path is None:
        path = pick(chart, mutation, candidates(base, mutation))
        if path is None:
            return None
    elif path != "^" and path not in walk(root_of(base)):
        return None
    old, new = copy.deepcopy(base), copy.deepcopy(base)
    _BY_NAME[mutation][2](old, new, path)
    return old, new, path


def _shallow(node):
    return dict((k, v) for k, v in node.items() if k not in ("properties", "items"))


def diff_digest(old, new):
    """sha256 (16 hex) of what crdify's verdict on a pair depends on: the CRD-level fields it reads and, per version, every
    node (children dropped, as crdify compares them) that differs between the two CRDs or between served versions of
    the new one. A change of the generator elsewhere in the chart's CRD leaves the digest as it is."""
    def crd_level(crd):
        spec = crd.get("spec") or {}
        return [spec.get("scope"), [(v.get("name"), v.get("served"), v.get("storage")) for v in spec.get("versions") or []],
                (crd.get("status") or {}).get("storedVersions")]

    def flat(version):
        return dict((p, _shallow(n)) for p, (n, _parent, _link) in walk((version.get("schema") or {}).get("openAPIV3Schema") or {}).items())

    def differing(a, b):
        return sorted((p, a.get(p), b.get(p)) for p in set(a) | set(b) if a.get(p) != b.get(p))

    old_versions = dict((v.get("name"), flat(v)) for v in old["spec"]["versions"])
    new_versions = dict((v.get("name"), flat(v)) for v in new["spec"]["versions"])
    parts = [crd_level(old), crd_level(new)]
    for name in sorted(set(old_versions) & set(new_versions)):
        parts.append([name, differing(old_versions[name], new_versions[name])])
    for crd_versions in (old_versions, new_versions):
        names = sorted(crd_versions)
        parts.append([[a, b, differing(crd_versions[a], crd_versions[b])] for a in names for b in names if a < b])
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# --- the pairs ------------------------------------------------------------------------------------

# The corpus's versions of one chart: helmetica's before/after pair, and NeuraLegion's juice-shop against helmetica's v3.1.0
# of it, each way round.
VERSION_PAIRS = (("juiceshop-helmetica-pair-original", "juiceshop-helmetica-pair-updated"), ("juice-shop", "juiceshop-helmetica-v3.1.0"))


def corpus_charts(shared):
    return sorted(p for p in (Path(shared) / "values-corpus").iterdir() if (p / "values.yaml").is_file())


def chart_crd(chart_dir):
    """values_schema's structural CRD of a chart directory (the whole engine: references, the safety net)."""
    from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine  # pylint: disable=import-outside-toplevel
    return engine.run({"chart": str(chart_dir), "output": "crd"})["crd"]


def _first_crd(path):
    for doc in yaml.safe_load_all(Path(path).read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            return doc
    return None


def compat_cases(shared):
    """(id, old, new) for ../shared/crd-compat's cases that have both CRDs."""
    root = Path(shared) / "crd-compat"
    found = []
    for case in sorted((root / "crdify").iterdir()):
        if (case / "a.yaml").is_file() and (case / "b.yaml").is_file():
            found.append(("crd-compat/crdify/" + case.name, case / "a.yaml", case / "b.yaml"))
    checker = root / "crd-schema-checker" / "pkg" / "manifestcomparators" / "testdata"
    for existing in sorted(checker.rglob("existing.yaml")):
        new = existing.parent / "new.yaml"
        if new.is_file():
            found.append(("crd-compat/crd-schema-checker/" + str(existing.parent.relative_to(checker)), existing, new))
    cases = []
    for ident, old_path, new_path in found:
        old, new = _first_crd(old_path), _first_crd(new_path)
        if old is not None and new is not None:
            cases.append((ident, old, new))
    return cases


def pairs(shared, crds=None):
    """Every CRD pair: [{id, kind, chart, mutation, path, old, new}] (``crds``: chart name -> CRD, computed if None)."""
    charts = dict((p.name, p) for p in corpus_charts(shared))
    if crds is None:
        crds = dict((name, chart_crd(path)) for name, path in charts.items())
    result = []
    for name in sorted(crds):
        for mutation in MUTATION_NAMES:
            made = mutate(crds[name], name, mutation)
            if made is not None:
                old, new, path = made
                result.append({"id": "%s/%s" % (name, mutation), "kind": "mutation", "chart": name, "mutation": mutation,
                               "path": path, "old": old, "new": new})
    for first, second in VERSION_PAIRS:
        for old_name, new_name in ((first, second), (second, first)):
            if old_name in crds and new_name in crds:
                result.append({"id": "version/%s--%s" % (old_name, new_name), "kind": "version", "chart": new_name,
                               "old": crds[old_name], "new": crds[new_name]})
    for ident, old, new in compat_cases(shared):
        result.append({"id": ident, "kind": "crd-compat", "old": old, "new": new})
    return result


# --- findings, normalised ---------------------------------------------------------------------------
# A finding is (section, version, path, rule, message): section crd | same | served. Messages that could carry a
# chart's text (description, default) are kept as a digest; crdify's `new required fields: [...]` lists its fields in
# map order, so they are sorted; crdify's `unhandled` message is a go-cmp diff whose spacing go-cmp randomises on
# purpose, so it is reduced to the JSON fields it names.

_GO_FIELD = re.compile(r"^\t([A-Z][A-Za-z]*):")
GO_FIELD_NAMES = {
    "ID": "id", "Schema": "$schema", "Ref": "$ref", "XPreserveUnknownFields": "x-kubernetes-preserve-unknown-fields",
    "XEmbeddedResource": "x-kubernetes-embedded-resource", "XIntOrString": "x-kubernetes-int-or-string",
    "XListMapKeys": "x-kubernetes-list-map-keys", "XListType": "x-kubernetes-list-type", "XMapType": "x-kubernetes-map-type",
    "XValidations": "x-kubernetes-validations",
}


def _json_name(go_name):
    return GO_FIELD_NAMES.get(go_name, go_name[:1].lower() + go_name[1:])


def unhandled_fields(diff_text):
    """The top-level JSONSchemaProps fields a go-cmp diff of two schemas changes: a field line is one tab deep after the
    two-column marker; it changes when it, or a line nested under it, is marked - or +."""
    fields, current = set(), None
    for line in diff_text.replace("\u00a0", " ").splitlines()[2:]:
        marker, body = line[:2].strip(), line[2:]
        if body.startswith("\t") and not body.startswith("\t\t"):
            match = _GO_FIELD.match(body)
            current = match.group(1) if match else None
        if marker in ("-", "+") and current:
            fields.add(_json_name(current))
    return sorted(fields)


def normalise_message(rule, message):
    if rule == "unhandled" and not message.startswith("unhandled changes found: ["):  # crdify's diff (ours names the fields)
        return "unhandled changes found: [%s]" % " ".join(unhandled_fields(message))
    if rule == "existingFieldRemoval":
        return "removed field"  # crdify's message repeats the version and path the finding already holds
    if rule in ("description", "default"):
        head = message.split(" : ", 1)[0]
        return "%s : sha256:%s" % (head, hashlib.sha256(message.encode("utf-8")).hexdigest()[:8])
    if message.startswith("new required fields: ["):
        names = message[len("new required fields: ["):].rstrip("]").split()
        return "new required fields: [%s]" % " ".join(sorted(names))
    return message


def crdify_findings(report):
    """crdify's JSON report (v0.5.0: maps by version and property; newer: lists) -> sorted normalised findings."""
    found = set()
    for result in report.get("crdValidation") or []:
        for severity in ("errors", "warnings"):
            for message in result.get(severity) or []:
                path = message.split(" : ", 1)[1].split(".", 1)[1] if result["name"] == "existingFieldRemoval" else "^"
                version = message.split(" : ", 1)[1].split(".", 1)[0] if result["name"] == "existingFieldRemoval" else ""
                found.add(("crd", version, path, result["name"], severity[:-1], normalise_message(result["name"], message)))
    for section, key in (("same", "sameVersionValidation"), ("served", "servedVersionValidation")):
        versions = report.get(key) or {}
        if isinstance(versions, list):  # newer crdify: [{version, propertyComparisons: [{property, comparisonResults}]}]
            versions = dict((v["version"], dict((c["property"], c.get("comparisonResults") or []) for c in v.get("propertyComparisons") or []))
                            for v in versions)
        for version, properties in versions.items():
            for path, results in properties.items():
                for result in results:
                    for severity in ("errors", "warnings"):
                        for message in result.get(severity) or []:
                            found.add((section, version, path, result["name"], severity[:-1], normalise_message(result["name"], message)))
    return sorted(found)


def our_findings(old, new, profile="crdify"):
    """Our compat engine's findings on a pair, in the same normalised shape as crdify_findings."""
    from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat  # pylint: disable=import-outside-toplevel
    found = set()
    for finding in compat.compare(old, new, profile=profile):
        rule = finding["rule"]
        version = finding["version"] or ""
        section = "crd" if rule in ("existingFieldRemoval", "scope", "storedVersionRemoval", "servedVersionRemoval") else \
            "served" if " -> " in version else "same"
        path = finding["path"]
        found.add((section, version, path, rule, finding["severity"], normalise_message(rule, finding["message"])))
    return sorted(found)


def verdict(findings):
    """breaking (a finding with severity error), warn, or compatible."""
    severities = set(f[4] for f in findings)
    return "breaking" if "error" in severities else "warn" if "warn" in severities else "compatible"


# --- JSON Schema type sets ------------------------------------------------------------------------

def _resolve(schema, root, depth=0):
    while isinstance(schema, dict) and "$ref" in schema and str(schema["$ref"]).startswith("#/") and depth < 50:
        target = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        merged = dict(target)
        merged.update(dict((k, v) for k, v in schema.items() if k != "$ref"))
        schema = merged
        depth += 1
    return schema


def type_set(schema, root):
    """The JSON types a schema node allows (``null`` included), reading local refs and anyOf/oneOf; [] when untyped."""
    schema = _resolve(schema, root)
    from ansible_collections.aicr.runtime.plugins.module_utils._schema.nodes import json_type  # pylint: disable=import-outside-toplevel
    if not isinstance(schema, dict):
        return set()
    types = schema.get("type")
    if types is None:
        collected = set()
        for junctor in ("anyOf", "oneOf"):
            for sub in schema.get(junctor) or []:
                collected |= type_set(sub, root)
        if not collected and "const" in schema:
            collected = {json_type(schema["const"])}
        if not collected and schema.get("enum"):
            collected = set(json_type(v) for v in schema["enum"])
        return collected
    return set([types] if isinstance(types, str) else types)


def property_types(schema):
    """dotted path (``a.b[].c``; a key holding a dot is kept as it is) -> sorted type list, for every property node."""
    return tree_types(type_tree(schema))


def type_tree(schema, root=None, depth=0):
    """A schema's type sets as a tree, the compact form a golden holds: a node is its types joined by ``|`` (``""``
    when untyped), or ``[types, {child: node}]`` when it has properties (``"[]"``: the items)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 60:
        return ""
    types = "|".join(sorted(type_set(schema, root)))
    children = {}
    for key, child in (schema.get("properties") or {}).items():
        children[key] = type_tree(child, root, depth + 1)
    if isinstance(schema.get("items"), dict):
        children["[]"] = type_tree(schema["items"], root, depth + 1)
    for junctor in ("allOf", "anyOf", "oneOf"):  # the properties of every branch, their types united (dadav's list items)
        for sub in schema.get(junctor) or []:
            sub_tree = type_tree(dict(_resolve(sub, root), type="object"), root, depth + 1)
            for key, child in (sub_tree[1] if isinstance(sub_tree, list) else {}).items():
                children[key] = _merge_trees(children[key], child) if key in children else child
    return [types, children] if children else types


def _merge_trees(first, second):
    types_a, children_a = first if isinstance(first, list) else (first, {})
    types_b, children_b = second if isinstance(second, list) else (second, {})
    types = "|".join(sorted(set(t for t in (types_a.split("|") + types_b.split("|")) if t)))
    children = dict(children_a)
    for key, child in children_b.items():
        children[key] = _merge_trees(children[key], child) if key in children else child
    return [types, children] if children else types


def tree_types(tree, path="", out=None):
    """A type tree as ``property_types`` writes it: dotted path -> sorted type list."""
    if out is None:
        out = {}
    types, children = (tree if isinstance(tree, list) else (tree, {}))
    if path:
        out[path] = [t for t in types.split("|") if t]
    for key, child in children.items():
        tree_types(child, path + "[]" if key == "[]" else ("%s.%s" % (path, key) if path else key), out)
    return out


# --- a property's types: ours against a generator's ------------------------------------------------
# Every class a disagreement can fall in, with its verdict; docs/modules/values_schema.md explains each with examples.
TYPE_CLASSES = {
    "agree": "agree",
    "theirs_null_only_ours_any": "ours right",      # `key: null` / `key:`: they admit only null, so any value set fails
    "theirs_null_only_ours_typed": "ours right",    # the same, where we typed the null from the chart (example, k8s key)
    "ours_int_or_string": "ours right",             # a Kubernetes IntOrString / Quantity: the apiserver takes both forms
    "ours_nullable": "ours right",                  # bitnami `## @param x [object,nullable]`: the chart documents null
    "theirs_untyped": "ours right",                 # a convention they do not read types it (helmetica `'#key'` items)
    "ours_any_theirs_one_type": "ours right",       # list items of mixed types: theirs rejects the chart's own items
    "ours_any_theirs_union": "both defensible",     # the same items: theirs a union of their types, ours any value
    "other": "unexplained",
}


def type_class(ours, theirs):
    """The class of our type list against theirs (both sorted, ``null`` included, ``[]`` = untyped)."""
    ours_set, theirs_set = set(ours), set(theirs)
    if ours_set == theirs_set:
        return "agree"
    if theirs_set == {"null"}:
        return "theirs_null_only_ours_any" if not ours_set else "theirs_null_only_ours_typed"
    if ours_set - {"null"} == {"integer", "string"} and len(theirs_set - {"null"}) == 1 and theirs_set - {"null"} <= {"integer", "string", "number"}:
        return "ours_int_or_string"
    if theirs_set and ours_set == theirs_set | {"null"}:
        return "ours_nullable"
    if not theirs_set:
        return "theirs_untyped"
    if not ours_set:
        return "ours_any_theirs_one_type" if len(theirs_set - {"null"}) == 1 else "ours_any_theirs_union"
    return "other"


def type_agreement(ours_by_chart, golden):
    """Per property present in both (a golden's type trees against ours): counts per class, an example of each, and
    the properties only one side has."""
    classes, examples = {}, {}
    only = {"theirs_typed": 0, "theirs_untyped": 0, "ours": 0}
    for chart, entry in sorted(golden["charts"].items()):
        theirs = tree_types(entry.get("types") or "")
        ours = ours_by_chart.get(chart) or {}
        for path, their_types in sorted(theirs.items()):
            if path not in ours:
                only["theirs_typed" if their_types else "theirs_untyped"] += 1
                continue
            label = type_class(ours[path], their_types)
            classes[label] = classes.get(label, 0) + 1
            if label != "agree" and label not in examples:
                examples[label] = {"chart": chart, "path": path, "ours": ours[path], "theirs": their_types}
        only["ours"] += len([p for p in ours if p not in theirs])
    compared = sum(classes.values())
    return {"compared": compared, "agree": classes.get("agree", 0), "classes": classes, "examples": examples, "only": only,
            "rate": round(classes.get("agree", 0) / compared, 4) if compared else None}
