"""values_schema coverage, measured per chart (issue #16): typed leaves, described keys, self-validity.

Read by ``bench_schema.py`` (``make bench`` prints the per-chart figures) and by the unit test
``tests/unit/plugins/module_utils/_schema/test_corpus_coverage.py`` (which asserts the targets). Definitions:

- **value leaf**: a scalar, ``null``, ``{}`` or ``[]`` of the chart's own values (defaults ⊕ values files), counted once
  per path (list indices collapsed to ``[]``). It is **typed** when the generated JSON Schema at its path (``$ref``
  followed, ``anyOf``/``oneOf``/``allOf`` branches read) has a concrete ``type`` (one that is not only ``null``), or an
  ``enum``/``const`` that fixes one. A leaf the chart's own shipped ``values.schema.json`` addresses and leaves
  free-form (an untyped schema at its path, or under an object of theirs that has neither properties nor an
  ``additionalProperties`` schema) is excepted (not counted at all), as the issue says.
- **documented key**: a key of the values file with a prose comment directly above it (the comment lines right above
  the key, no blank line between, none indented deeper than the key; a line is prose unless it is empty, a directive
  — ``@param``, ``@section``, ``@schema``, ``@skip``, any ``@word``, ``+docs:`` —, a separator, or commented-out YAML
  such as ``# limits:`` / ``#   cpu: 100m`` / ``# - name: x``), or a key whose path a readme-generator
  ``## @param <path> [modifiers] text`` or helm-docs ``# <path> -- text`` names with a text (a bare
  ``## @param containerPorts.amqp`` has no words to describe the key with). It is **described** when the generated JSON Schema at
  its path carries a non-empty ``description``.
- **self-validity**: the chart's own values pass the generated JSON Schema, the CRD's structural schema, and the
  apiserver's pruning simulation (``structural.prune``) removes nothing.

This file deliberately re-implements "is this comment prose?" instead of calling the engine's comment scanner, so a
comment the engine misses shows up as an undescribed documented key.
"""

import json
import re
import time
from pathlib import Path

import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import comments, crd, engine, infer, jsonschema, structural

TYPED_TARGET = 0.95
DESCRIBED_TARGET = 0.90
PEER_INVALID = ("invalid-schema.yaml", "fail-type.yaml", "malformed.yaml", "values-bad.yaml")

_DIRECTIVE = re.compile(r"^\s*(?:@\w|\+docs:)")
_SEPARATOR = re.compile(r"^\s*[-=#*_~]{3,}\s*$")
_VALUE = r"""(?:"[^"]*"|'[^']*'|\[.*\]|\{.*\}|[|>][-+]?|\S+)"""
_YAML_LINE = re.compile(r"""^\s*(?:-\s+)?(?:"[^"]*"|'[^']*'|[\w.\-/$@]+)\s*:(?:\s+%s)?\s*(?:#.*)?$""" % _VALUE)
_YAML_ITEM = re.compile(r"""^\s*-(?:\s+%s)?\s*$""" % _VALUE)
_YAML_FLOW = re.compile(r"^\s*[\[\]{}]")
_PARAM = re.compile(r"^\s*##?\s*@param\s+(\S+)\s*(?:\[[^\]]*\])?\s*(.*)$")
_HELMDOCS_PATH = re.compile(r'^\s*#\s*((?:[A-Za-z0-9_\-$]+|"[^"]*")(?:\.(?:[A-Za-z0-9_\-$]+|"[^"]*"))*)\s+--\s*(.*)$')


def inputs(shared):
    """[(name, engine params, shipped values.schema.json path or None)]: the corpus charts, then the peers' testdata."""
    shared = Path(shared)
    found = []
    for chart in sorted(p for p in (shared / "values-corpus").iterdir() if (p / "values.yaml").is_file()):
        shipped = chart / "values.schema.json"
        found.append((chart.name, {"chart": str(chart)}, shipped if shipped.is_file() else None))
    ref = shared / "values-schema-reference"
    peers = sorted((ref / "losisin-helm-values-schema-json" / "testdata").rglob("*.yaml"))
    peers += sorted((ref / "dadav-helm-schema" / "tests").rglob("values.yaml"))
    peers += sorted((ref / "dadav-helm-schema" / "tests" / "charts").glob("test_*.yaml"))
    for path in peers:
        if path.name in PEER_INVALID or path.name == "Chart.yaml" or "expected" in path.name:
            continue
        found.append(("peer:" + str(path.relative_to(ref)), {"values_files": [str(path)]}, None))
    return found


# -- schema navigation ---------------------------------------------------------------------------------------------

def _deref(schema, root, depth=0):
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and depth < 64:
        target = root
        for part in [p for p in schema["$ref"][1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        merged = dict(target or {})
        merged.update(dict((k, v) for k, v in schema.items() if k != "$ref"))
        schema = merged
        depth += 1
    return schema if isinstance(schema, dict) else {}


def _branches(schema, root):
    """The schema and the schemas of its anyOf/oneOf/allOf branches, references followed."""
    schema = _deref(schema, root)
    out = [schema]
    for junctor in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(junctor) or ():
            out.extend(_branches(branch, root))
    return out


def child(schema, root, part):
    """The schema of ``part`` (a key, or ``[]`` for list items) under ``schema``; None when nothing describes it."""
    if schema is None:
        return None
    for branch in _branches(schema, root):
        if part == "[]":
            if isinstance(branch.get("items"), dict):
                return branch["items"]
            continue
        props = branch.get("properties") or {}
        if part in props:
            return props[part]
        for pattern, sub in (branch.get("patternProperties") or {}).items():
            if re.search(pattern, part):
                return sub
        if isinstance(branch.get("additionalProperties"), dict):
            return branch["additionalProperties"]
    return None


def typed(schema, root):
    for branch in _branches(schema, root):
        types = branch.get("type")
        types = [types] if isinstance(types, str) else list(types or ())
        if [t for t in types if t != "null"]:
            return True
        if [v for v in branch.get("enum") or () if v is not None] or branch.get("const") is not None:
            return True
    return False


def free_form_in(shipped, parts):
    """True when the shipped schema addresses ``parts`` and leaves it free-form (see the module docstring)."""
    node = shipped
    for part in parts:
        nxt = child(node, shipped, part)
        if nxt is None:
            branches = _branches(node, shipped)
            described = any(b.get("properties") or b.get("patternProperties") or isinstance(b.get("additionalProperties"), dict)
                            or isinstance(b.get("items"), dict) for b in branches)
            closed = any(b.get("additionalProperties") is False for b in branches)
            return not described and not closed and node is not shipped
        node = nxt
    return not typed(node, shipped)


def description_at(schema, parts):
    node = schema
    for part in parts:
        node = child(node, schema, part)
        if node is None:
            return None
    for branch in _branches(node, schema):
        if isinstance(branch.get("description"), str) and branch["description"].strip():
            return branch["description"]
    return None


def schema_at(schema, parts):
    node = schema
    for part in parts:
        node = child(node, schema, part)
        if node is None:
            return None
    return node


# -- the values' leaves ------------------------------------------------------------------------------------------

def leaves(value, parts=(), out=None, stack=()):
    """{path tuple: value} of the leaves of ``value`` (list indices collapsed; recursive structures cut)."""
    if out is None:
        out = {}
    if id(value) in stack:
        return out
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            leaves(sub, parts + (str(key),), out, stack + (id(value),))
    elif isinstance(value, list) and value:
        for sub in value:
            leaves(sub, parts + ("[]",), out, stack + (id(value),))
    else:
        out.setdefault(parts, value)
    return out


# -- documented keys ---------------------------------------------------------------------------------------------

def is_prose(line):
    """A comment line (``#`` included) that is prose, not a directive, a separator or commented-out YAML."""
    body = line.strip().lstrip("#").strip()
    if not body or _DIRECTIVE.match(body) or _SEPARATOR.match(body) or _HELMDOCS_PATH.match(line):
        return False  # (a helm-docs ``# path -- text`` documents the path it names, not the key below)
    if body.startswith("--"):
        text = re.sub(r"^\([\w/\-]+\)\s*", "", body[2:].strip())
        return bool(text) and not text.startswith("@")
    return not (_YAML_LINE.match(body) or _YAML_ITEM.match(body) or _YAML_FLOW.match(body))


def _block_above(lines, comment, line, column):
    block = []
    index = line - 1
    while index >= 0 and comment[index]:
        raw = lines[index]
        if len(raw) - len(raw.lstrip()) > column:
            break
        block.append(raw)
        index -= 1
    return block


def documented_keys(text):
    """{path tuple: how it is documented} for the keys of one values file."""
    lines = text.splitlines()
    root = yaml.compose(text, Loader=yaml.BaseLoader)
    scalar_lines = set()
    if root is not None:
        infer._multiline_scalars(root, scalar_lines, set())  # pylint: disable=protected-access
    comment = [line.lstrip().startswith("#") and index not in scalar_lines for index, line in enumerate(lines)]
    named = {}
    for index, line in enumerate(lines):
        if not comment[index]:
            continue
        match = _PARAM.match(line) or (_HELMDOCS_PATH.match(line) if " --" in line else None)
        if match and match.group(2).strip():
            named[tuple(comments.split_path(match.group(1)))] = "@param" if "@param" in line else "helm-docs path"
    found = {}
    seen = set()

    def walk(node, parts):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item, parts + ("[]",))
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
                if key.startswith("#") and isinstance(value_node, yaml.MappingNode):
                    continue  # helmetica meta entry, not a value
                path = parts + (key,)
                block = _block_above(lines, comment, key_node.start_mark.line, key_node.start_mark.column)
                if any(is_prose(b) for b in block):
                    found.setdefault(path, "comment")
                walk(value_node, path)
        return

    if root is not None:
        walk(root, ())
    for path, how in named.items():
        found.setdefault(path, how)
    return found


# -- one input ---------------------------------------------------------------------------------------------------

def measure(name, params, shipped=None):
    """Figures of one input; the lists name the untyped leaves and undescribed keys (for diagnosis)."""
    began = time.perf_counter()
    full = engine._params(dict(params, output="json_schema"))  # pylint: disable=protected-access
    chart, files = engine.load_sources(full)
    warnings = []
    node = engine.build_node(chart, files, warnings, k8s_schema_version=full.get("k8s_schema_version"))
    schema = jsonschema.to_json_schema(node)
    doc, _dropped = engine.generate_crd(dict(full, output="crd", name=full.get("name") or "coverage"), chart, files, node=node)
    elapsed = time.perf_counter() - began
    values = engine.own_values(chart, files)
    shipped_schema = json.loads(Path(shipped).read_text()) if shipped else None
    typed_count = total = excepted = 0
    untyped = []
    for parts in sorted(leaves(values)):
        if shipped_schema is not None and free_form_in(shipped_schema, parts):
            excepted += 1
            continue
        total += 1
        target = schema_at(schema, parts)
        if target is not None and typed(target, schema):
            typed_count += 1
        else:
            untyped.append(".".join(parts))
    texts = [Path(chart.origin) / "values.yaml"] if chart is not None and Path(str(chart.origin)).is_dir() else []
    documented = {}
    for path in texts + [Path(p) for p, _text in files]:
        for parts, how in documented_keys(path.read_text()).items():
            documented.setdefault(parts, how)
    described = 0
    undescribed = []
    for parts in sorted(documented):
        if schema_at(schema, parts) is None:
            continue  # a @param naming a key the values do not have (documentation of a key they lack)
        if description_at(schema, parts):
            described += 1
        else:
            undescribed.append(".".join(parts))
    documented_count = described + len(undescribed)
    values_schema = crd.values_schema_of(doc)
    crd_json = dict(structural.to_json_schema(values_schema), **{"$schema": jsonschema.DRAFTS["2020-12"]})
    json_errors = validation.validate(schema, values, trusted=True)
    crd_errors = validation.validate(crd_json, values, trusted=True)
    pruned = structural.prune(values, values_schema)[1]
    return {
        "name": name,
        "leaves": total, "typed": typed_count, "excepted_free_form_in_shipped": excepted,
        "typed_share": round(typed_count / total, 4) if total else 1.0, "untyped": untyped,
        "documented": documented_count, "described": described,
        "described_share": round(described / documented_count, 4) if documented_count else 1.0, "undescribed": undescribed,
        "json_schema_valid": not json_errors, "crd_valid": not crd_errors and not pruned,
        "errors": [e["path"] + ": " + e["message"] for e in (json_errors + crd_errors)[:5]] + ["pruned " + str(p) for p in pruned[:5]],
        "seconds": round(elapsed, 4), "warnings": len(warnings),
    }


def measure_all(shared):
    return [measure(name, params, shipped) for name, params, shipped in inputs(shared)]


def summary(rows, detail=False):
    """Totals and the per-chart figures (``detail``: with the untyped/undescribed lists)."""
    charts = {}
    for row in rows:
        entry = dict((k, v) for k, v in row.items() if detail or k not in ("untyped", "undescribed", "errors"))
        entry.pop("name")
        charts[row["name"]] = entry
    leaves_total = sum(r["leaves"] for r in rows)
    typed_total = sum(r["typed"] for r in rows)
    documented_total = sum(r["documented"] for r in rows)
    described_total = sum(r["described"] for r in rows)
    return {
        "inputs": len(rows),
        "typed": typed_total, "leaves": leaves_total, "typed_share": round(typed_total / leaves_total, 4) if leaves_total else 1.0,
        "described": described_total, "documented": documented_total,
        "described_share": round(described_total / documented_total, 4) if documented_total else 1.0,
        "charts_typed_at_target": sum(1 for r in rows if r["typed_share"] >= TYPED_TARGET),
        "charts_described_at_target": sum(1 for r in rows if r["described_share"] >= DESCRIBED_TARGET),
        "charts_own_values_valid": sum(1 for r in rows if r["json_schema_valid"] and r["crd_valid"]),
        "corpus_seconds": round(sum(r["seconds"] for r in rows if not r["name"].startswith("peer:")), 3),
        "charts": charts,
    }
