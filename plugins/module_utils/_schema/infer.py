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
``extra``          other JSON Schema keywords from annotations (rendered by each target as allowed; ``$ref`` resolved
                   by ``refs.resolve_tree``)
``opaque``         names of hidden keys the chart sets, kept in the CRD as preserve-unknown fields (``safety``)
``defs`` / ``definitions`` (root only) the bundled referenced schemas / dadav's hoisted ``definitions``
``x-annotated``, ``x-unknown``, ``x-hidden``, ``x-hidden-by`` diagnostics for the safety net, stripped by ``safety.finish``
plus annotation keywords: description, title, enum, pattern, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, minItems, maxItems,
minProperties, maxProperties, default, examples, format, deprecated.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.deps import BaseLoader as _BaseLoader
from ansible_collections.aicr.runtime.plugins.module_utils._common.deps import Loader as ValuesLoader
from ansible_collections.aicr.runtime.plugins.module_utils._common.deps import yaml
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import annotations as grammar
from ansible_collections.aicr.runtime.plugins.module_utils._schema import comments as comments_mod
from ansible_collections.aicr.runtime.plugins.module_utils._schema.nodes import _is_null_leaf, apply_annotations, json_type, merge, prune_hidden, set_type


def require_yaml():
    deps.require("PyYAML", "to read values files")


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


class Inferrer:
    """Walks a composed YAML document and builds the node tree."""

    def __init__(self, text, source="values.yaml"):
        require_yaml()
        self.count = 0
        self.expanding = {}  # id of a YAML collection being expanded → its path (an alias of one is recursive)
        self.text = text
        self.source = source
        try:
            self.root = deps.compose(text, "values file %s" % source, loader=_BaseLoader)
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
        self.expanding[id(self.root)] = ()
        try:
            node = self._mapping(self.root, ())
        except AicrError as exc:
            if exc.details.get("field") != comments_mod.COMMENT_SOURCE:
                raise
            # a comment's YAML (an example, an annotation) past a limit: named by the file it is in
            raise AicrError("values file %s: %s" % (self.source, exc.msg), **dict(exc.details, field="values", source=self.source))
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
        if id(yaml_node) in self.expanding:
            return _recursive(self.expanding[id(yaml_node)])
        self.expanding[id(yaml_node)] = path
        try:
            if isinstance(yaml_node, yaml.SequenceNode):
                items = None
                for child in yaml_node.value:
                    items = merge(items, self._node(child, path + ("[]",), key, parent_key, depth + 1))
                node = {"type": "array", "nullable": False, "items": items}
                if not yaml_node.value:
                    node["emptyList"] = True
                return node
            return self._mapping(yaml_node, path, depth)
        finally:
            del self.expanding[id(yaml_node)]

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
            if _is_null_leaf(child) and isinstance(value_node, yaml.ScalarNode) and "x-annotated" not in child:
                self._example(child, key_node, key)
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

    def _example(self, child, key_node, key):
        """A null leaf typed by the chart's commented-out example of it (``comments.example_for``)."""
        example = self.comments.example_for(key_node.start_mark.line, key_node.start_mark.column, key)
        if example is None:
            return
        kind = json_type(example)
        set_type(child, [kind, "null"])
        child["nullable"] = True
        child.setdefault("x-annotated", {})["commented-out example"] = example

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
            if "type" in meta and "nullable" not in meta and "null" not in grammar.normalise_type(meta["type"], where):
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


def _recursive(target):
    """The node of a recursive alias (an anchored collection that contains an alias of itself, losisin's
    ``anchors.yaml``): a local ``$ref`` back to the anchored node — a cycle JSON Schema allows; the CRD, which cannot
    hold one, cuts it here (``crd.to_structural``: ``x-kubernetes-preserve-unknown-fields``, listed in ``dropped``)."""
    pointer = "#" + "".join("/items" if part == "[]" else "/properties/" + part.replace("~", "~0").replace("/", "~1") for part in target)
    return {"type": None, "nullable": False, "extra": {"$ref": pointer}, "recursive": _dotted(target)}


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


def infer_text(text, source="values.yaml"):
    """Node tree for one values file text."""
    return Inferrer(text, source).infer()


def load_values(text, source="values.yaml", composed=None):
    """The values (plain Python) of a values file, helmetica ``'#key'`` meta entries removed.

    ``composed``: the file's node as :class:`Inferrer` composed it (same loader, already held to the limits), so a chart's
    values file is parsed once for its schema and its values."""
    require_yaml()
    try:
        data = _to_python(composed) if composed is not None else deps.load(text, "values file %s" % source)  # ValuesLoader, bounded
    except yaml.YAMLError as exc:
        raise AicrError("values file %s is not valid YAML (%s)" % (source, getattr(exc, "problem", exc)), field="values", source=source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AicrError("values file %s: top level is a %s; allowed: a mapping" % (source, type(data).__name__), field="values", source=source)
    return strip_meta(data)


def strip_meta(value, _stack=()):
    """``value`` without helmetica meta entries. A recursive alias (a collection containing itself, which Helm
    refuses: "anchor value contains itself") is cut: the occurrence of the collection inside itself is left out."""
    if isinstance(value, (dict, list)):
        if id(value) in _stack:
            return _CUT
        _stack = _stack + (id(value),)
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            if isinstance(key, str) and key.startswith("#") and isinstance(child, dict):
                continue
            child = strip_meta(child, _stack)
            if child is not _CUT:
                out[str(key) if not isinstance(key, str) else key] = child
        return out
    if isinstance(value, list):
        return [c for c in (strip_meta(v, _stack) for v in value) if c is not _CUT]
    return value


_CUT = object()
