# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Infer a schema tree from a values.yaml (composed with libyaml) and its comments.

The result is an *intermediate* tree of plain dicts ("nodes") that both renderers
(``jsonschema.to_json_schema`` and ``crd.to_structural``) read. Node keys:

``type``           JSON type name, or None (any value)
``nullable``       null is allowed
``intOrString``    an int or a string (Kubernetes quantities, IntOrString fields)
``freeForm``       an object whose keys are not known (never closed)
``properties``     dict name -> node (YAML order kept)
``additionalProperties`` node for map values (annotated maps)
``items``          node for array items (None: free-form items)
``required``       list of required property names
``types``          an annotated list of several non-null types (JSON Schema only)
``export``         False hides the node (``hidden``/``export: false``), True re-exports it
``extra``          other JSON Schema keywords from annotations (rendered by each target as allowed)
plus annotation keywords: description, title, enum, pattern, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, minItems, maxItems,
minProperties, maxProperties, default, examples, format, deprecated.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re
import traceback

try:
    import yaml
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError:  # the module reports it with missing_required_lib("PyYAML")
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.schema import comments as comments_mod

if HAS_YAML:
    _BaseLoader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # SafeLoader when PyYAML lacks libyaml

    class ValuesLoader(_BaseLoader):  # pylint: disable=too-many-ancestors
        """Safe loader that keeps timestamps as strings (as Helm's YAML→JSON does)."""

    ValuesLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
else:
    _BaseLoader = ValuesLoader = None


def require_yaml():
    if not HAS_YAML:
        raise AicrError("the Python package PyYAML is required to read values files", missing_library="PyYAML", exception=YAML_IMPORT_ERROR)


TAG = "tag:yaml.org,2002:"
MAX_NODES = 200000  # values nodes after alias expansion (kube-prometheus-stack has about 10 000)
SCALAR_TYPES = {
    TAG + "str": "string", TAG + "int": "integer", TAG + "float": "number", TAG + "bool": "boolean",
    TAG + "null": None, TAG + "timestamp": "string", TAG + "binary": "string",
}
MERGE_TAG = TAG + "merge"

# Kubernetes quantities with a unit ("100m", "1Gi", "1e3") are int-or-string values.
QUANTITY = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[mkMGTPE])$")
RESOURCE_PARENTS = frozenset(("limits", "requests"))
RESOURCE_NAMES = frozenset(("cpu", "memory", "storage", "ephemeral-storage", "pods"))
INT_OR_STRING_KEYS = frozenset(("targetPort", "maxUnavailable", "maxSurge", "minAvailable"))

ANNOTATION_KEYWORDS = (
    "description", "title", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
    "default", "examples", "format", "deprecated",
)
# JSON Schema keywords accepted from annotations and passed through to JSON Schema output.
EXTRA_KEYWORDS = (
    "const", "uniqueItems", "patternProperties", "$ref", "$id", "$comment", "readOnly", "writeOnly",
    "unevaluatedProperties", "propertyNames", "contains", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
)
IGNORED_ANNOTATIONS = ("x-default-doc", "x-skip-doc", "x-helm-docs-type", "item", "itemProperties", "itemEnum", "itemRef",
                       "skipProperties", "mergeProperties", "hidden", "export", "required", "nullable", "type", "items",
                       "additionalProperties", "properties", "id")


def new_node(type_name=None, nullable=False):
    return {"type": type_name, "nullable": nullable}


def _is_null_leaf(node):
    return node.get("type") is None and node.get("nullable") and not node.get("intOrString") and not node.get("types") and not node.get("mixed")


def merge(a, b):
    """Union of two nodes: a value valid for either is valid for the result. ``a`` wins on annotations."""
    if a is None:
        return b
    if b is None:
        return a
    result = dict(a)
    ta, tb = a.get("type"), b.get("type")
    if a.get("mixed") or b.get("mixed") or a.get("types") or b.get("types"):
        result = _any(a, b)
    elif a.get("intOrString") or b.get("intOrString"):
        other = tb if a.get("intOrString") else ta
        if (a.get("intOrString") and b.get("intOrString")) or other in ("integer", "string") or _is_null_leaf(b if a.get("intOrString") else a):
            result["type"] = None
            result["intOrString"] = True
        else:
            result = _any(a, b)
    elif _is_null_leaf(a) and not _is_null_leaf(b):
        result = dict(b)
        for key, value in a.items():
            if key not in ("type", "nullable") and key not in result:
                result[key] = value
    elif _is_null_leaf(b):
        pass
    elif ta == tb:
        if ta == "object":
            props = dict(a.get("properties") or {})
            for key, value in (b.get("properties") or {}).items():
                props[key] = merge(props.get(key), value) if key in props else value
            if props:
                result["properties"] = props
            if a.get("freeForm") or b.get("freeForm"):
                result["freeForm"] = True
            if b.get("additionalProperties") is not None:
                result["additionalProperties"] = merge(a.get("additionalProperties"), b["additionalProperties"])
        elif ta == "array":
            ia, ib = a.get("items"), b.get("items")
            result["items"] = ib if ia is None else (ia if ib is None else merge(ia, ib))
            if not (a.get("emptyList") and b.get("emptyList")):
                result.pop("emptyList", None)
    elif set((ta, tb)) == set(("integer", "number")):
        result["type"] = "number"
    elif set((ta, tb)) == set(("integer", "string")):
        result["type"] = None
        result["intOrString"] = True
    else:
        result = _any(a, b)
    for key, value in b.items():
        if key in ANNOTATION_KEYWORDS and key not in result:
            result[key] = value
    if a.get("nullable") or b.get("nullable"):
        result["nullable"] = True
    return result


def _any(a, b):
    result = {"type": None, "nullable": bool(a.get("nullable") or b.get("nullable")), "mixed": True}
    for key in ANNOTATION_KEYWORDS:
        if key in a:
            result[key] = a[key]
    return result


class Inferrer:
    """Walks a composed YAML document and builds the node tree."""

    def __init__(self, text, source="values.yaml"):
        require_yaml()
        self.count = 0
        self.text = text
        self.source = source
        try:
            self.root = yaml.compose(text, Loader=_BaseLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = " line %d" % (mark.line + 1) if mark else ""
            raise AicrError("values file %s:%s is not valid YAML (%s)" % (source, where, getattr(exc, "problem", exc)),
                            field="values", source=source)
        scalar_lines = set()
        if self.root is not None:
            _multiline_scalars(self.root, scalar_lines, set())
        self.comments = comments_mod.CommentIndex(text, scalar_lines)

    def infer(self):
        if self.root is None:
            return {"type": "object", "nullable": False, "properties": {}, "freeForm": True}
        if not isinstance(self.root, yaml.MappingNode):
            raise AicrError("values file %s: top level is a %s; allowed: a mapping" % (self.source, self.root.id), field="values", source=self.source)
        node = self._mapping(self.root, ())
        self._apply_paths(node)
        return prune_hidden(node)

    # -- nodes ---------------------------------------------------------
    def _node(self, yaml_node, path, key=None, parent_key=None, depth=0):
        self.count += 1
        if self.count > MAX_NODES:
            raise AicrError("values file %s: more than %d nodes once aliases are expanded; allowed: at most %d (alias bomb?)"
                            % (self.source, MAX_NODES, MAX_NODES), field="values", source=self.source)
        if depth > 200:
            raise AicrError("values file %s: nesting at %s deeper than 200 levels (recursive alias?)" % (self.source, _dotted(path)), field="values")
        if isinstance(yaml_node, yaml.ScalarNode):
            return self._scalar(yaml_node, key, parent_key)
        if isinstance(yaml_node, yaml.SequenceNode):
            items = None
            for child in yaml_node.value:
                items = merge(items, self._node(child, path + ("[]",), key, parent_key, depth + 1))
            node = {"type": "array", "nullable": False, "items": items}
            if not yaml_node.value:
                node["emptyList"] = True
            return node
        return self._mapping(yaml_node, path, depth)

    def _scalar(self, yaml_node, key, parent_key):
        tag = yaml_node.tag
        type_name = SCALAR_TYPES.get(tag, "string")
        if type_name is None:
            return {"type": None, "nullable": True}
        node = {"type": type_name, "nullable": False}
        if type_name in ("integer", "string", "number"):
            if key in INT_OR_STRING_KEYS and type_name != "number":
                node = {"type": None, "nullable": False, "intOrString": True}
            elif parent_key in RESOURCE_PARENTS and (key in RESOURCE_NAMES or "/" in str(key) or str(key).startswith("hugepages-")):
                node = {"type": None, "nullable": False, "intOrString": True}
            elif type_name == "string" and QUANTITY.match(yaml_node.value) and (not yaml_node.value.endswith("m") or "cpu" in str(key).lower()):
                # "1m"/"5m" are usually durations: milli-units only count where a CPU quantity is meant
                node = {"type": None, "nullable": False, "intOrString": True}
        return node

    def _mapping(self, yaml_node, path, depth=0):
        properties = {}
        metas = {}
        required = []
        for key_node, value_node in _flatten_pairs(yaml_node):
            key = _key_text(key_node)
            if key.startswith("#") and isinstance(value_node, yaml.MappingNode):
                metas[key[1:]] = (value_node, self.comments.for_key(key_node.start_mark.line, key_node.start_mark.column))
                continue
            child = self._node(value_node, path + (key,), key, path[-1] if path else None, depth + 1)
            info = self.comments.for_key(key_node.start_mark.line, key_node.start_mark.column)
            if info is not None:
                if info.description and "description" not in child:
                    child["description"] = info.description
                    if not info.explicit:
                        child["x-plain"] = True
                if info.annotations:
                    apply_annotations(child, info.annotations, _dotted(path + (key,)))
            if key in properties:
                child = merge(properties[key], child)
            properties[key] = child
        if self.comments.docs_properties and yaml_node.value:
            self._docs_properties(properties, yaml_node, path)
        if self.comments.footers and yaml_node.value:
            self._footers(properties, yaml_node, path)
        for name, (meta_node, info) in metas.items():
            self._apply_meta(properties, name, meta_node, path, depth)
            target = properties.get(name)
            if target is not None and info is not None and info.description and "description" not in target:
                target["description"] = info.description
        for name, child in properties.items():
            if child.pop("x-required", False):
                required.append(name)
        node = {"type": "object", "nullable": False, "properties": properties}
        if not properties and not metas:
            node["freeForm"] = True
        if required:
            node["required"] = required
        return node

    def _footers(self, properties, yaml_node, path):
        """losisin's annotations written directly below a key's block apply to that key."""
        column = yaml_node.value[0][0].start_mark.column
        keys = [(k.start_mark.line, _key_text(k)) for k, _v in yaml_node.value if k.tag != MERGE_TAG]
        for entry in self.comments.footers:
            if entry.get("used") or entry["column"] != column or not keys[0][0] < entry["line"] <= yaml_node.end_mark.line:
                continue
            owner = [name for line, name in keys if line < entry["line"]][-1]
            if owner in properties:
                entry["used"] = True
                apply_annotations(properties[owner], entry["annotations"], _dotted(path + (owner,)))

    def _docs_properties(self, properties, yaml_node, path):
        """Commented-out documented keys (``# +docs:property``) at this mapping's indentation."""
        column = yaml_node.value[0][0].start_mark.column
        first, last = yaml_node.start_mark.line, yaml_node.end_mark.line
        for entry in self.comments.docs_properties:
            if entry.get("used") or entry["path"] is not None or entry["column"] != column or not first <= entry["line"] <= last:
                continue
            entry["used"] = True
            self._add_documented(properties, entry, path)

    def _add_documented(self, properties, entry, path):
        try:
            snippet = Inferrer(entry["text"], "%s (+docs:property at line %d)" % (self.source, entry["line"] + 1)).infer()
        except AicrError:
            return  # commented-out text that is not YAML is just a comment
        added = [(k, v) for k, v in (snippet.get("properties") or {}).items() if k not in properties]
        for key, node in added:
            if entry["description"] and "description" not in node and len(added) == 1:
                node["description"] = entry["description"]
            if entry["annotations"]:
                apply_annotations(node, entry["annotations"], _dotted(path + (key,)))
            properties[key] = node

    def _apply_meta(self, properties, name, meta_node, path, depth):
        """helmetica ``'#key'`` meta entries (type, description, enum, export, items, properties, ...)."""
        where = _dotted(path + (name,))
        if name == "":
            return
        meta = {}
        sub = {}
        for key_node, value_node in _flatten_pairs(meta_node):
            key = _key_text(key_node)
            if key in ("items", "properties"):
                sub[key] = value_node
            else:
                meta[key] = _to_python(value_node)
        target = properties.get(name)
        if target is None:
            target = {"type": None, "nullable": True}
            if name not in properties:
                properties[name] = target
        if "properties" in sub:
            example = self._node(sub["properties"], path + (name,), name, path[-1] if path else None, depth + 1)
            target = merge(example, target) if target.get("type") in (None, "object") else target
            target.pop("freeForm", None)
        if "items" in sub:
            item_schema = self._items_meta(sub["items"], path + (name, "[]"), depth)
            if target.get("type") == "object" or meta.get("type") in ("object", "map"):
                target["type"] = "object"
                target["additionalProperties"] = merge(item_schema, target.get("additionalProperties"))
                for value in (target.pop("properties", None) or {}).values():
                    target["additionalProperties"] = merge(target["additionalProperties"], value)
                target.pop("freeForm", None)
            else:
                target["nullable"] = bool(_is_null_leaf(target))  # a null default stays valid
                target["type"] = "array"
                target["items"] = merge(item_schema, target.get("items"))
                target.pop("emptyList", None)
        if meta:
            apply_annotations(target, meta, where)
            # the design's meta type is exact: in the CRD a null default does not make the field nullable
            # (the JSON Schema keeps null allowed so the chart's own defaults validate)
            if "type" in meta and "nullable" not in meta and "null" not in comments_mod.normalise_type(meta["type"], where):
                target["crdNotNullable"] = True
        properties[name] = target

    def _items_meta(self, yaml_node, path, depth):
        if not isinstance(yaml_node, yaml.MappingNode):
            return self._node(yaml_node, path, None, None, depth + 1)
        self_meta = None
        for key_node, value_node in _flatten_pairs(yaml_node):
            if _key_text(key_node) == "#":
                self_meta = _to_python(value_node)
        if self_meta is not None:
            node = {"type": None, "nullable": False}
            apply_annotations(node, self_meta, _dotted(path))
            return node
        node = self._mapping(yaml_node, path, depth + 1)
        node.pop("freeForm", None)
        return node

    def _apply_paths(self, root):
        """Position-independent comments (helm-docs ``# path --``, bitnami ``@param``, ``+docs:property=path``)."""
        for entry in self.comments.docs_properties:
            if entry["path"] is None or entry.get("used") or len(entry["path"]) < 2:
                continue
            parent = _find_path(root, entry["path"][:-1])
            if parent is not None and parent.get("type") == "object" and entry["path"][-1] not in (parent.get("properties") or {}):
                entry["used"] = True
                self._add_documented(parent.setdefault("properties", {}), entry, entry["path"][:-1])
        for parts, info in self.comments.by_path.items():
            node = _find_path(root, parts)
            if node is None:
                continue
            if info.description and ("description" not in node or node.get("x-plain")):
                node["description"] = info.description
            node.pop("x-plain", None)
            if info.annotations:
                apply_annotations(node, info.annotations, ".".join(parts))


def _find_path(root, parts):
    node = root
    index = 0
    while index < len(parts):
        props = node.get("properties") or {}
        found = False
        # keys with dots: try the longest literal key first
        for end in range(len(parts), index, -1):
            name = ".".join(parts[index:end])
            if name in props:
                node = props[name]
                index = end
                found = True
                break
        if not found:
            if node.get("type") == "array" and node.get("items") is not None and parts[index].strip("[]").isdigit():
                node = node["items"]
                index += 1
                continue
            return None
    return node


def _dotted(path):
    return ".".join(p for p in path) or "(root)"


def _key_text(key_node):
    if isinstance(key_node, yaml.ScalarNode):
        return key_node.value if key_node.tag != TAG + "null" else "null"
    return yaml.dump(_to_python(key_node), default_flow_style=True).strip()


def _flatten_pairs(mapping_node):
    """Key/value pairs of a mapping with ``<<`` merge keys resolved (explicit keys win)."""
    pairs = []
    merged = []
    for key_node, value_node in mapping_node.value:
        if key_node.tag == MERGE_TAG:
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if isinstance(source, yaml.MappingNode):
                    merged.extend(_flatten_pairs(source))
        else:
            pairs.append((key_node, value_node))
    if merged:
        explicit = set(_key_text(k) for k, _v in pairs)
        seen = set()
        extra = []
        for key_node, value_node in merged:
            text = _key_text(key_node)
            if text not in explicit and text not in seen:
                seen.add(text)
                extra.append((key_node, value_node))
        pairs = extra + pairs
    return pairs


def _multiline_scalars(node, lines, seen):
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if node.end_mark.line > node.start_mark.line:
            # a block scalar ends at column 0 of the line after its last content line
            last = node.end_mark.line if node.end_mark.column > 0 else node.end_mark.line - 1
            lines.update(range(node.start_mark.line + 1, last + 1))
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _multiline_scalars(child, lines, seen)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _multiline_scalars(key, lines, seen)
            _multiline_scalars(value, lines, seen)


def _to_python(yaml_node):
    loader = ValuesLoader("")
    try:
        return loader.construct_document(yaml_node)
    finally:
        loader.dispose()


def apply_annotations(node, annotations, where):
    """Apply annotation keywords (already parsed) to a node in place."""
    ann = dict(annotations)
    inferred_type = node.get("type")
    null_leaf = _is_null_leaf(node) or node.get("emptyList") or (inferred_type == "object" and node.get("freeForm") and not node.get("properties"))
    hint = ann.pop("x-helm-docs-type", None)
    if hint is not None and "type" not in ann and _is_null_leaf(node):
        ann["type"] = hint
    if "type" in ann:
        _set_type(node, comments_mod.normalise_type(ann.pop("type"), where))
    if "nullable" in ann:
        node["nullable"] = bool(ann.pop("nullable"))
    if ann.pop("required", False) is True:
        node["x-required"] = True
    for flag in ("hidden",):
        if ann.pop(flag, False):
            node["export"] = False
    if "export" in ann:
        node["export"] = bool(ann.pop("export"))
    items = ann.pop("items", None)
    item = ann.pop("item", None)
    if items is not None or item is not None:
        spec = items if items is not None else item
        item_node = _annotation_schema(spec, where + "[]")
        item_props = ann.pop("itemProperties", None)
        if isinstance(item_props, dict):
            item_node["type"] = "object"
            item_node["properties"] = dict((k, _annotation_schema(v, where + "[]." + k)) for k, v in item_props.items())
        if ann.get("itemEnum") is not None:
            item_node["enum"] = ann.pop("itemEnum")
        if node.get("type") in ("array", None) or null_leaf:
            node["type"] = "array"
            node["items"] = item_node if node.get("items") is None else merge(item_node, node["items"])
            node.pop("emptyList", None)
    if ann.pop("skipProperties", False):
        node.pop("properties", None)
        node["freeForm"] = True
    if ann.pop("mergeProperties", False) and node.get("properties"):
        merged = None
        for value in node.pop("properties").values():
            merged = merge(merged, value)
        node["additionalProperties"] = merged
    additional = ann.pop("additionalProperties", None)
    if additional is not None:
        if isinstance(additional, dict):
            node["additionalProperties"] = _annotation_schema(additional, where + ".*")
        else:
            node.setdefault("extra", {})["additionalProperties"] = bool(additional)
    props = ann.pop("properties", None)
    if isinstance(props, dict):
        node["type"] = "object"
        current = node.setdefault("properties", {})
        for key, value in props.items():
            current[key] = merge(_annotation_schema(value, where + "." + key), current.get(key))
    if ann.pop("id", None) is not None:
        pass
    for key in ANNOTATION_KEYWORDS:
        if key in ann:
            value = ann.pop(key)
            if key == "deprecated":
                value = bool(value)
            if key == "description" and value is not None:
                value = str(value).strip()
            node[key] = value
    for key in EXTRA_KEYWORDS:
        if key in ann:
            node.setdefault("extra", {})[key] = ann.pop(key)
    if node.get("type") is None and not node.get("intOrString") and not node.get("types") and "enum" in node and node["enum"]:
        kinds = set(_json_type(v) for v in node["enum"] if v is not None)
        if len(kinds) == 1:
            node["type"] = kinds.pop()
            node["nullable"] = True


def _json_type(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def _set_type(node, types):
    nullable = "null" in types
    rest = [t for t in types if t != "null"]
    node.pop("types", None)
    node.pop("mixed", None)
    if not rest:
        node["type"] = None
        node["nullable"] = True
        return
    if nullable:
        node["nullable"] = True
    if len(rest) == 1:
        name = rest[0]
        if name == "int-or-string":
            node["type"] = None
            node["intOrString"] = True
        elif name == "any":
            node["type"] = None
            node["mixed"] = True
            node.pop("intOrString", None)
        else:
            node.pop("intOrString", None)
            if node.get("type") != name:
                for key in ("properties", "items", "additionalProperties", "freeForm", "emptyList"):
                    if not (name == "object" and key in ("properties", "freeForm")) and not (name == "array" and key in ("items", "emptyList")):
                        node.pop(key, None)
                if name == "object" and not node.get("properties"):
                    node["freeForm"] = True
            node["type"] = name
    elif set(rest) == set(("integer", "string")):
        node["type"] = None
        node["intOrString"] = True
    elif set(rest) == set(("integer", "number")):
        node["type"] = "number"
    else:
        node["type"] = None
        node["types"] = rest
        node.pop("intOrString", None)


def _annotation_schema(spec, where):
    """A node from an annotation value: a type name, or a JSON-Schema-like dict."""
    if isinstance(spec, str) or isinstance(spec, list):
        node = {"type": None, "nullable": False}
        _set_type(node, comments_mod.normalise_type(spec, where))
        return node
    if isinstance(spec, dict):
        node = {"type": None, "nullable": False}
        apply_annotations(node, spec, where)
        if node.get("type") is None and not node.get("types") and not node.get("intOrString") and "type" not in spec:
            node["mixed"] = True
        return node
    raise AicrError("annotation items at %s: %r is not a type name or a schema mapping" % (where, spec), field="items", path=where)


def prune_hidden(node, inherited=True):
    """Drop nodes with export false unless a descendant is re-exported (export true)."""
    own = node.get("export")
    visible = inherited if own is None else own
    kept_child = False
    props = node.get("properties")
    if props:
        new_props = {}
        for key, child in props.items():
            pruned = prune_hidden(child, visible)
            if pruned is not None:
                new_props[key] = pruned
                kept_child = True
        node["properties"] = new_props
        if "required" in node:
            node["required"] = [r for r in node["required"] if r in new_props]
            if not node["required"]:
                node.pop("required")
    for key in ("items", "additionalProperties"):
        child = node.get(key)
        if child is None:
            continue
        pruned = prune_hidden(child, visible)
        if pruned is not None:
            node[key] = pruned
            kept_child = True
        elif key == "items":
            node["items"] = None
        else:
            node.pop(key)
    node.pop("export", None)
    node.pop("emptyList", None)
    if visible or kept_child:
        return node
    return None


def infer_text(text, source="values.yaml"):
    """Node tree for one values file text."""
    return Inferrer(text, source).infer()


def load_values(text, source="values.yaml"):
    """The values (plain Python) of a values file, helmetica ``'#key'`` meta entries removed."""
    require_yaml()
    try:
        data = yaml.load(text, Loader=ValuesLoader)  # nosec - safe loader
    except yaml.YAMLError as exc:
        raise AicrError("values file %s is not valid YAML (%s)" % (source, getattr(exc, "problem", exc)), field="values", source=source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AicrError("values file %s: top level is a %s; allowed: a mapping" % (source, type(data).__name__), field="values", source=source)
    return strip_meta(data)


def strip_meta(value):
    if isinstance(value, dict):
        return dict((str(k) if not isinstance(k, str) else k, strip_meta(v)) for k, v in value.items()
                    if not (isinstance(k, str) and k.startswith("#") and isinstance(v, dict)))
    if isinstance(value, list):
        return [strip_meta(v) for v in value]
    return value


def deep_merge(base, override):
    """Helm-style coalesce: maps merge recursively, everything else is replaced; null deletes a key."""
    result = dict(base)
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def nest_under(root, key, sub):
    """Merge a subchart's node tree under ``key`` (and its ``global`` into the root's ``global``)."""
    props = root.setdefault("properties", {})
    sub = dict(sub)
    sub_props = dict(sub.get("properties") or {})
    global_node = sub_props.pop("global", None)
    sub["properties"] = sub_props
    if key in props:
        props[key] = merge(props[key], sub)
    else:
        props[key] = sub
    if global_node is not None:
        props["global"] = merge(props["global"], global_node) if "global" in props else global_node
    return root
