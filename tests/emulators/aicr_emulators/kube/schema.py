"""Structural schemas: validation, pruning and defaulting, and list semantics for patch/apply.

Built-in kinds use the Kubernetes OpenAPI definitions shipped by the ``kubernetes-validate``
package; custom resources use their CRD's ``openAPIV3Schema``. Both are walked by the same code.
"""

import copy
import importlib.util
import json
import os
import re
import threading

K8S_SCHEMA_VERSION = "v1.35.0"

_DEFS = None
_GVK_INDEX = None
_DEFS_LOCK = threading.Lock()


def _definitions_path():
    # locate the package without importing it (its import pulls jsonschema and costs ~0.1 s of start-up)
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        raise ImportError("kubernetes_validate is not installed")
    base = os.path.join(os.path.dirname(spec.origin), "kubernetes-json-schema")
    wanted = os.path.join(base, K8S_SCHEMA_VERSION + "-local", "_definitions.json")
    if os.path.exists(wanted):
        return wanted
    versions = sorted(d for d in os.listdir(base) if d.endswith("-local"))
    return os.path.join(base, versions[-1], "_definitions.json")


def builtin_definitions():
    """{definition name: schema} of the built-in API (loaded once, lazily)."""
    global _DEFS, _GVK_INDEX  # pylint: disable=global-statement
    with _DEFS_LOCK:
        if _DEFS is None:
            try:
                with open(_definitions_path(), "rb") as handle:
                    defs = json.load(handle)["$defs"]
            except (ImportError, OSError, ValueError, KeyError):
                defs = {}
            index = {}
            for name, schema in defs.items():
                for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                    index[(gvk.get("group", ""), gvk.get("version"), gvk.get("kind"))] = name
            _DEFS, _GVK_INDEX = defs, index
    return _DEFS


def builtin_root(group, version, kind):
    """The Schema of a built-in kind, or None when the definitions do not know it."""
    defs = builtin_definitions()
    name = _GVK_INDEX.get((group, version, kind))
    if not name:
        return None
    return Schema(defs[name], defs, name)


def _ref_name(ref):
    return ref.rsplit("/", 1)[-1]


class Schema:
    """A cursor on a schema node that follows ``$ref`` into a definitions table."""

    __slots__ = ("node", "defs", "name")

    def __init__(self, node, defs=None, name=None):
        self.defs = defs or {}
        self.name = name
        node = node or {}
        for _attempt in range(20):
            if "$ref" in node:
                self.name = _ref_name(node["$ref"])
                node = self.defs.get(self.name, {})
            elif "allOf" in node and len(node["allOf"]) == 1 and "$ref" in node["allOf"][0]:
                self.name = _ref_name(node["allOf"][0]["$ref"])
                node = self.defs.get(self.name, {})
            else:
                break
        self.node = node

    def _wrap(self, node):
        return Schema(node, self.defs, None) if node is not None else None

    @property
    def types(self):
        typ = self.node.get("type")
        if typ is None:
            one_of = self.node.get("oneOf") or self.node.get("anyOf")
            if one_of:
                out = []
                for alt in one_of:
                    alt_t = alt.get("type")
                    out.extend(alt_t if isinstance(alt_t, list) else [alt_t] if alt_t else [])
                return out
            return []
        return typ if isinstance(typ, list) else [typ]

    @property
    def int_or_string(self):
        if self.node.get("x-kubernetes-int-or-string"):
            return True
        types = set(self.types) - {"null"}
        return types == {"integer", "string"} or types == {"number", "string"}

    @property
    def nullable(self):
        return bool(self.node.get("nullable")) or "null" in self.types

    @property
    def preserve_unknown(self):
        return bool(self.node.get("x-kubernetes-preserve-unknown-fields"))

    @property
    def embedded_resource(self):
        return bool(self.node.get("x-kubernetes-embedded-resource"))

    def prop(self, key):
        props = self.node.get("properties") or {}
        if key in props:
            return self._wrap(props[key])
        addl = self.node.get("additionalProperties")
        if isinstance(addl, dict):
            return self._wrap(addl)
        return None

    def items(self):
        items = self.node.get("items")
        return self._wrap(items) if isinstance(items, dict) else None

    def list_type(self):
        """('map', [keys]) | ('set', []) | ('atomic', []) for a list field."""
        ltype = self.node.get("x-kubernetes-list-type")
        keys = self.node.get("x-kubernetes-list-map-keys") or []
        merge_key = self.node.get("x-kubernetes-patch-merge-key")
        if ltype == "map" and keys:
            return "map", list(keys)
        if ltype == "set":
            return "set", []
        if ltype == "atomic":
            return "atomic", []
        if merge_key:
            return "map", [merge_key]
        if self.node.get("x-kubernetes-patch-strategy", "").startswith("merge"):
            return "set", []
        return "atomic", []

    def patch_merge_key(self):
        """The strategic-merge-patch key of a list, or None (list is replaced)."""
        strategy = self.node.get("x-kubernetes-patch-strategy", "")
        if "merge" not in strategy:
            return None
        return self.node.get("x-kubernetes-patch-merge-key") or ""

    def map_type(self):
        return self.node.get("x-kubernetes-map-type", "granular")


def json_repr(value):
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches_type(value, typ):
    if typ == "object":
        return isinstance(value, dict)
    if typ == "array":
        return isinstance(value, list)
    if typ == "string":
        return isinstance(value, str)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "null":
        return value is None
    return True


class Issues:
    """Collects validation problems of one object."""

    def __init__(self):
        self.causes = []  # (reason, field, message) -> 422 Invalid
        self.type_errors = []  # (field, message) -> 400 BadRequest for built-ins
        self.unknown = []  # field paths dropped because no schema declares them
        self.duplicates = []


def join_path(path, key):
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    return key if not path else path + "." + key


class Walker:
    """Validate, prune and default a value against a Schema."""

    def __init__(self, custom, issues, value_only=False):
        self.custom = custom  # CRD semantics (defaults, nullable pruning, formats) vs built-in
        self.issues = issues
        self.value_only = value_only  # evaluating allOf/anyOf/oneOf/not: constrain, never prune or default

    def walk(self, value, schema, path, root=False):
        if schema is None:
            return value
        node = schema.node
        if value is None:
            if schema.nullable and self.custom:
                return None
            return _PRUNE  # built-in: null decodes to the zero value / nil pointer and is omitted
        if schema.int_or_string:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                self._type_error(value, "integer or string" if "integer" in schema.types else "number or string",
                                 path, schema)
            return value
        types = [t for t in schema.types if t != "null"]
        if not self.custom and not any(k in node for k in ("properties", "additionalProperties", "items")) and \
                (not types or types == ["object"]):
            return value  # free-form built-in fields (RawExtension, JSON, JSONSchemaProps items...)
        if types and not any(_matches_type(value, t) for t in types):
            self._type_error(value, types[0], path, schema)
            return value
        if "enum" in node and node["enum"] and value not in node["enum"]:
            allowed = ", ".join(json_repr(v) for v in node["enum"] if v is not None)
            self.issues.causes.append(("FieldValueNotSupported", path,
                                       "Unsupported value: %s: supported values: %s" % (json_repr(value), allowed)))
        if self.custom:
            self._constraints(value, node, path)
            self._combinators(value, node, schema, path)
        if isinstance(value, dict):
            return self._object(value, schema, path, root)
        if isinstance(value, list):
            items = schema.items()
            out = []
            for idx, item in enumerate(value):
                new = self.walk(item, items, join_path(path, idx))
                out.append(None if new is _PRUNE else new)
            if self.custom and node.get("x-kubernetes-list-type") in ("set", "map"):
                self._uniqueness(out, schema, path)
            return out
        if isinstance(value, float) and "integer" in types and value.is_integer():
            return int(value)
        return value

    def _object(self, value, schema, path, root):
        node = schema.node
        props = node.get("properties") or {}
        addl = node.get("additionalProperties")
        preserve = schema.preserve_unknown
        out = {}
        for key, item in value.items():
            if root and (key in ("apiVersion", "kind", "metadata") or (key == "status" and not self.custom)):
                out[key] = item
                continue
            if schema.embedded_resource and key in ("apiVersion", "kind", "metadata"):
                out[key] = item
                continue
            child = None
            if key in props:
                child = schema.prop(key)
            elif isinstance(addl, dict):
                child = Schema(addl, schema.defs)
            elif addl is True or preserve:
                out[key] = item
                continue
            elif self.value_only:
                out[key] = item
                continue
            else:
                self.issues.unknown.append(join_path(path, key))
                continue
            new = self.walk(item, child, join_path(path, key))
            if new is _PRUNE:
                if self.custom and child is not None and "default" in child.node:
                    out[key] = copy.deepcopy(child.node["default"])
                continue
            out[key] = new
        if self.custom and not self.value_only:
            for key, sub in props.items():
                if key not in out:
                    sub_schema = Schema(sub, schema.defs)
                    if "default" in sub_schema.node:
                        out[key] = self.walk(copy.deepcopy(sub_schema.node["default"]), sub_schema, join_path(path, key))
        for key in node.get("required") or []:
            if key not in out:
                self.issues.causes.append(("FieldValueRequired", join_path(path, key), "Required value"))
        return out

    def _sub_causes(self, value, node, schema, path):
        issues = Issues()
        Walker(True, issues, value_only=True).walk(copy.deepcopy(value), Schema(node, schema.defs), path)
        return issues.causes

    def _combinators(self, value, node, schema, path):
        """Value validations of structural schemas: allOf, anyOf, oneOf, not."""
        shown = json_repr(value if not isinstance(value, (dict, list)) else _type_name(value))
        for sub in node.get("allOf") or []:
            self.issues.causes.extend(self._sub_causes(value, sub, schema, path))
        if node.get("anyOf") and not node.get("x-kubernetes-int-or-string"):
            if all(self._sub_causes(value, sub, schema, path) for sub in node["anyOf"]):
                self.issues.causes.append(("FieldValueInvalid", path, "Invalid value: %s: must validate at least one schema "
                                           "(anyOf)" % shown))
        if node.get("oneOf"):
            valid = sum(1 for sub in node["oneOf"] if not self._sub_causes(value, sub, schema, path))
            if valid != 1:
                self.issues.causes.append(("FieldValueInvalid", path, "Invalid value: %s: must validate one and only one "
                                           "schema (oneOf). Found %d valid alternatives" % (shown, valid)))
        if isinstance(node.get("not"), dict) and not self._sub_causes(value, node["not"], schema, path):
            self.issues.causes.append(("FieldValueInvalid", path, "Invalid value: %s: must not validate the schema (not)"
                                       % shown))

    def _type_error(self, value, expected, path, schema):
        actual = _type_name(value)
        if self.custom:
            self.issues.causes.append(("FieldValueTypeInvalid", path, "Invalid value: %s: %s in body must be of type %s: %s"
                                       % (json_repr(value if not isinstance(value, (dict, list)) else actual), path or "body",
                                          expected, json_repr(actual))))
        else:
            go_type = {"integer": "int32" if (schema.node.get("format") == "int32") else "int64", "string": "string",
                       "boolean": "bool", "number": "float64", "array": "[]", "object": "struct"}.get(expected, expected)
            self.issues.type_errors.append((path, "json: cannot unmarshal %s into Go struct field %s of type %s"
                                            % ({"integer": "number", "boolean": "bool", "array": "array",
                                                "object": "object"}.get(actual, actual), path, go_type)))

    def _constraints(self, value, node, path):
        causes = self.issues.causes
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in node and (value < node["minimum"] or (node.get("exclusiveMinimum") and value == node["minimum"])):
                causes.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be greater than or equal to %s"
                               % (json_repr(value), path, node["minimum"])))
            if "maximum" in node and (value > node["maximum"] or (node.get("exclusiveMaximum") and value == node["maximum"])):
                causes.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be less than or equal to %s"
                               % (json_repr(value), path, node["maximum"])))
        if isinstance(value, str):
            if "maxLength" in node and len(value) > node["maxLength"]:
                causes.append(("FieldValueTooLong", path, "Too long: may not be more than %d bytes" % node["maxLength"]))
            if "minLength" in node and len(value) < node["minLength"]:
                causes.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be at least %d chars long"
                               % (json_repr(value), path, node["minLength"])))
            if "pattern" in node:
                try:
                    if not re.search(node["pattern"], value):
                        causes.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should match '%s'"
                                       % (json_repr(value), path, node["pattern"])))
                except re.error:
                    pass
        if isinstance(value, list):
            if "maxItems" in node and len(value) > node["maxItems"]:
                causes.append(("FieldValueTooMany", path, "Too many: %d: must have at most %d items" % (len(value), node["maxItems"])))
            if "minItems" in node and len(value) < node["minItems"]:
                causes.append(("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at least %d items"
                               % (len(value), path, node["minItems"])))
        if isinstance(value, dict):
            if "maxProperties" in node and len(value) > node["maxProperties"]:
                causes.append(("FieldValueTooMany", path, "Too many: %d: must have at most %d items" % (len(value), node["maxProperties"])))
            if "minProperties" in node and len(value) < node["minProperties"]:
                causes.append(("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at least %d properties"
                               % (len(value), path, node["minProperties"])))

    def _uniqueness(self, items, schema, path):
        ltype, keys = schema.list_type()
        seen = set()
        for idx, item in enumerate(items):
            if ltype == "map" and isinstance(item, dict):
                ident = json.dumps([item.get(k) for k in keys], sort_keys=True)
            else:
                ident = json.dumps(item, sort_keys=True)
            if ident in seen:
                self.issues.causes.append(("FieldValueDuplicate", join_path(path, idx), "Duplicate value: %s" % (
                    json_repr(item if ltype != "map" else {k: item.get(k) for k in keys}))))
            seen.add(ident)


_PRUNE = object()


def check(obj, schema, custom):
    """Walk ``obj``; returns (cleaned object, Issues)."""
    issues = Issues()
    walker = Walker(custom, issues)
    out = walker.walk(obj, schema, "", root=True)
    if out is _PRUNE:
        out = {}
    return out, issues


def crd_schema(rtype, version):
    node = rtype.schema_for(version)
    if node is None:
        return None
    return Schema(node)


def validate_crd_schema(schema_node):
    """Structural checks of a CRD's own openAPIV3Schema (subset of the apiserver's)."""
    problems = []

    def visit(node, path):
        if not isinstance(node, dict):
            return
        typ = node.get("type")
        if not typ and not node.get("x-kubernetes-int-or-string") and not node.get("x-kubernetes-preserve-unknown-fields") \
                and path and not any(k in node for k in ("allOf", "anyOf", "oneOf", "not")):
            problems.append((path + ".type", "Required value: must not be empty for specified object fields"))
        if typ and typ not in ("object", "array", "string", "integer", "number", "boolean"):
            problems.append((path + ".type", 'Unsupported value: "%s"' % typ))
        for key, sub in (node.get("properties") or {}).items():
            visit(sub, path + ".properties[%s]" % key)
        if isinstance(node.get("items"), dict):
            visit(node["items"], path + ".items")
        if isinstance(node.get("additionalProperties"), dict):
            visit(node["additionalProperties"], path + ".additionalProperties")
        if typ == "array" and "items" not in node:
            problems.append((path + ".items", "Required value: must be specified"))
    visit(schema_node or {}, "")
    return problems
