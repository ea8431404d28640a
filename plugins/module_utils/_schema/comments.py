# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Comments of a values.yaml, associated with keys by line number.

A light line scan, not a round-trip parse: the YAML is composed by libyaml (which
drops comments), and this module indexes the comment lines so the inference can ask
"what is written above / beside the key at line L, column C?".

Conventions understood (see docs/modules/values_schema.md):

- the plain comment block directly above a key (no blank line in between, not
  indented deeper than the key: deeper comments are commented-out YAML of the
  previous key);
- helm-docs ``# -- text`` (continued by the following comment lines, with an optional
  ``(type)`` prefix) and ``# path -- text`` anywhere in the file;
- bitnami ``## @param path [modifiers] text`` anywhere in the file;
- losisin ``# @schema key:value; key:value`` inline or above, and the dadav block
  form (``# @schema`` / YAML lines / ``# @schema``);
- ``# @type: int`` for null leaves.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._schema.annotations import COMMENT_SOURCE, TYPE_ALIASES
from ansible_collections.aicr.runtime.plugins.module_utils._schema.annotations import parse_bitnami_modifiers, parse_schema_annotation

_HELMDOCS_PATH = re.compile(r'^#\s*((?:[A-Za-z0-9_\-$]+|"[^"]*")(?:\.(?:[A-Za-z0-9_\-$]+|"[^"]*"))*)\s+--\s?(.*)$')
_HELMDOCS_TYPE = re.compile(r'^\(([A-Za-z0-9_/\-]+)\)\s*(.*)$', re.S)
_BITNAMI_PARAM = re.compile(r'^##?\s*@param\s+(\S+)\s*(?:\[([^\]]*)\])?\s*(.*)$')
_TYPE_TAG = re.compile(r'^#+\s*@type\s*:?\s*([A-Za-z\-]+)\s*$')
_CODE_LINE = re.compile(r'^\s*(?:-\s+)?["\']?[A-Za-z0-9_.\-/]+["\']?\s*:(?:\s+(\S+))?\s*$|^\s*-\s+\S+\s*$|^\s*[{}\[\]]')

# Type names accepted in annotations, normalised to JSON Schema type names.


def inline_comment(line):
    """The comment part of a YAML line (after an unquoted `` #``), or None."""
    if "#" not in line:
        return None
    quote = None
    prev = " "
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == quote:
                if quote == "'" and line[index + 1:index + 2] == "'":
                    index += 2
                    continue
                quote = None
            elif char == "\\" and quote == '"':
                index += 2
                continue
        elif char in "\"'" and prev in " \t:[{,-":
            quote = char
        elif char == "#" and prev in " \t":
            return line[index:]
        prev = char
        index += 1
    return None


def split_path(path):
    """``a.b."c.d".e`` → ['a', 'b', 'c.d', 'e']."""
    parts, current, quote = [], [], False
    for char in path:
        if char == '"':
            quote = not quote
        elif char == "." and not quote:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


class KeyComments:
    """What the comments say about one key: a description and annotations."""

    __slots__ = ("description", "annotations", "explicit")

    def __init__(self, description=None, annotations=None, explicit=True):
        self.description = description
        self.annotations = annotations or {}
        self.explicit = explicit  # False: a plain comment block, which a path-addressed comment overrides


def _strip_hashes(line):
    body = line.lstrip()
    while body.startswith("#"):
        body = body[1:]
    if body.startswith(" "):
        body = body[1:]
    return body.rstrip()


class CommentIndex:
    """Index of a values file's comment lines, queried by the key's line and column."""

    def __init__(self, text, scalar_lines=None):
        self.lines = text.splitlines()
        # Lines inside multi-line scalars are not comments even if they start with '#'.
        self.scalar_lines = scalar_lines or set()
        self.comment = [line.lstrip().startswith("#") and index not in self.scalar_lines for index, line in enumerate(self.lines)]
        self.by_path = {}  # position-independent: helm-docs '# path --' and bitnami '@param'
        self.docs_properties = []  # helm-tool '# +docs:property' over commented-out YAML (keys absent from the values)
        self.footers = []  # losisin "comment directly below": '# @schema' right after a block, then a blank line
        self._scan_position_independent()
        if "@schema" in text:
            self._scan_footers()
        if "+docs:property" in text:
            self._scan_docs_properties()

    def _is_comment(self, index):
        return self.comment[index]

    def _scan_position_independent(self):
        for index, line in enumerate(self.lines):
            if not self.comment[index] or ("@param" not in line and " --" not in line):
                continue
            stripped = line.strip()
            match = _BITNAMI_PARAM.match(stripped)
            if match:
                path, mods, text = match.groups()
                ann = parse_bitnami_modifiers(mods)
                self.by_path[tuple(split_path(path))] = KeyComments(text.strip() or None, ann)
                continue
            if stripped.startswith("# --") or stripped.startswith("#--"):
                continue
            match = _HELMDOCS_PATH.match(stripped)
            if match and not stripped.lstrip("# ").startswith("@"):
                path, text = match.groups()
                desc, ann = _helmdocs_text(text, self._continuation(index + 1))
                self.by_path[tuple(split_path(path))] = KeyComments(desc, ann)

    def _scan_footers(self):
        count = len(self.lines)
        index = 1
        while index < count:
            if not self.comment[index] or self.comment[index - 1] or not self.lines[index - 1].strip():
                index += 1
                continue
            end = index
            while end < count and self.comment[end]:
                end += 1
            if (end >= count or not self.lines[end].strip()) and any("@schema" in self.lines[i] for i in range(index, end)):
                _description, annotations, _explicit = parse_block([self.lines[i].strip() for i in range(index, end)])
                if annotations:
                    raw = self.lines[index]
                    self.footers.append({"line": index, "column": len(raw) - len(raw.lstrip()), "annotations": annotations})
            index = end + 1

    def _scan_docs_properties(self):
        """cert-manager's helm-tool convention: a documented property that is only commented out."""
        count = len(self.lines)
        for index in range(count):
            if not self.comment[index] or "+docs:property" not in self.lines[index]:
                continue
            body = _strip_hashes(self.lines[index]).strip()
            if not body.startswith("+docs:property"):
                continue
            explicit = body.split("=", 1)[1].strip() if "=" in body else None
            raw = self.lines[index]
            column = len(raw) - len(raw.lstrip())
            annotations = {}
            end = index + 1
            while end < count and self.comment[end] and _strip_hashes(self.lines[end]).strip().startswith("+docs:"):
                annotations.update(_docs_directive(_strip_hashes(self.lines[end]).strip()))
                end += 1
            snippet = []
            while end < count and self.comment[end] and not _strip_hashes(self.lines[end]).strip().startswith("+docs:"):
                snippet.append(_strip_hashes(self.lines[end]))
                end += 1
            if not snippet:
                continue
            description, block_ann, _explicit = parse_block(self.block_above(index, column))
            block_ann.update(annotations)
            self.docs_properties.append({"line": index, "column": column, "path": tuple(split_path(explicit)) if explicit else None,
                                         "text": "\n".join(snippet) + "\n", "description": description, "annotations": block_ann})

    def _continuation(self, start):
        out = []
        index = start
        while index < len(self.lines) and self._is_comment(index):
            body = _strip_hashes(self.lines[index])
            if body.lstrip().startswith("@") or body.lstrip().startswith("--") or _HELMDOCS_PATH.match(self.lines[index].strip()):
                break
            out.append(body)
            index += 1
        return out

    def block_above(self, line, column):
        """Comment lines directly above ``line`` (0-based), nearest last."""
        block = []
        index = line - 1
        while index >= 0 and self._is_comment(index):
            raw = self.lines[index]
            indent = len(raw) - len(raw.lstrip())
            if indent > column:
                break
            block.append(raw.strip())
            index -= 1
        block.reverse()
        return block

    def example_for(self, line, column, key):
        """The chart's own commented-out example of a key without a value (``key:`` / ``key: null``), or None.

        - inline: ``workers: # 8`` (a number, a boolean or a flow collection; a word is prose);
        - below: the comment lines directly under the key, indented deeper than it (or at its column, as a list
          ``# - name: x`` or with the text indented further, ``#   limits:``), first line commented-out YAML, that read
          as a mapping or a list (``resources:`` / ``#   limits:`` …);
        - the key itself commented with a value directly below it (``foo: null`` / ``# foo: bar``).
        The example only types the leaf (``example`` → its JSON type); its content is not taken as a schema.
        """
        inline = inline_comment(self.lines[line]) if line < len(self.lines) else None
        if inline:
            value = _load_or_none(_strip_hashes(inline.strip()))
            if isinstance(value, (bool, int, float, list, dict)):
                return value
        block = []
        index = line + 1
        hash_column = None
        while index < len(self.lines) and self.comment[index]:
            raw = self.lines[index]
            indent = len(raw) - len(raw.lstrip())
            if hash_column is None:
                hash_column = indent
            elif indent != hash_column:
                break
            body = raw.lstrip()[1:]
            block.append(" " * (indent + 1) + body)
            index += 1
        if not block:
            return None
        first = block[0].strip()
        if not _CODE_LINE.match(first):
            return None
        text_column = len(block[0]) - len(block[0].lstrip())
        if first.split(":", 1)[0].strip().strip("\"'") == key and hash_column == column:
            value = _load_or_none(first)
            return value.get(key) if isinstance(value, dict) and value.get(key) is not None else None
        if not (hash_column > column or first.startswith("- ") or text_column > hash_column + 2):
            return None
        for end in range(len(block), 0, -1):
            lines = block[:end]
            margin = min(len(b) - len(b.lstrip()) for b in lines if b.strip())
            value = _load_or_none("\n".join(b[margin:] for b in lines))
            if isinstance(value, (dict, list)):
                return value
        return None

    def for_key(self, line, column):
        """KeyComments for the key at (line, column), from the block above and the inline comment."""
        block = self.block_above(line, column) if line > 0 and self.comment[line - 1] else []
        inline = inline_comment(self.lines[line]) if line < len(self.lines) else None
        if not block and not inline:
            return None
        description, annotations, explicit = parse_block(block)
        if inline:
            inline = inline.strip()
            body = _strip_hashes(inline)
            if body.startswith("@schema"):
                annotations.update(parse_schema_annotation(body[len("@schema"):]))
            else:
                match = _TYPE_TAG.match(inline)
                if match:
                    annotations["type"] = match.group(1)
                elif body.startswith("-- "):
                    desc, ann = _helmdocs_text(body[3:], [])
                    annotations.update(ann)
                    if desc:
                        description, explicit = desc, True
                elif not body.startswith("@") and body and description is None and not _CODE_LINE.match(body):
                    description = body
        if description is None and not annotations:
            return None
        return KeyComments(description, annotations, explicit)


def _load_or_none(text):
    try:
        return deps.load(text, COMMENT_SOURCE)
    except deps.yaml.YAMLError:
        return None


def _docs_directive(body):
    """helm-tool ``+docs:type=X`` → a type hint (``unknown`` leaves the inferred type); other directives are layout only."""
    if body.startswith("+docs:type="):
        name = body.split("=", 1)[1].strip()
        if name.lower() in TYPE_ALIASES:
            return {"x-helm-docs-type": name}
    return {}


def _helmdocs_text(first, rest):
    text = "\n".join([first] + list(rest)).strip()
    annotations = {}
    match = _HELMDOCS_TYPE.match(text)
    if match:
        type_name, text = match.groups()
        if type_name.lower() in TYPE_ALIASES:
            annotations["x-helm-docs-type"] = type_name
    return (text.strip() or None), annotations


def parse_block(block):
    """Description and annotations from a comment block (list of stripped '#' lines)."""
    annotations = {}
    plain = []
    helmdocs = None
    index = 0
    while index < len(block):
        line = block[index]
        body = _strip_hashes(line)
        lead = body.lstrip()
        if lead.startswith("@schema"):
            rest = lead[len("@schema"):].strip()
            if rest:
                annotations.update(parse_schema_annotation(rest))
                index += 1
                continue
            # dadav block form: YAML between two '# @schema' lines
            end = index + 1
            while end < len(block) and _strip_hashes(block[end]).strip() != "@schema":
                end += 1
            text = "\n".join(_strip_hashes(b) for b in block[index + 1:end])
            try:
                loaded = deps.load(text, COMMENT_SOURCE) if text.strip() else None
            except deps.yaml.YAMLError:
                loaded = None
            if isinstance(loaded, dict):
                annotations.update(loaded)
            index = end + 1
            continue
        if lead.startswith("+docs:"):
            annotations.update(_docs_directive(lead.strip()))
            index += 1
            continue
        match = _TYPE_TAG.match(line) if "@type" in line else None
        if match:
            annotations["type"] = match.group(1)
            index += 1
            continue
        if lead.startswith("-- ") or lead == "--":
            rest = []
            index += 1
            while index < len(block):
                nxt = _strip_hashes(block[index])
                if nxt.lstrip().startswith("@"):
                    break
                rest.append(nxt)
                index += 1
            helmdocs = _helmdocs_text(lead[2:].strip(), rest)
            continue
        if lead.startswith("@") or ("@param" in line and _BITNAMI_PARAM.match(line)) or (" --" in line and _HELMDOCS_PATH.match(line)):
            index += 1
            continue
        if body.strip() and not _CODE_LINE.match(body):
            plain.append(body.strip())
        elif not body.strip() and plain:
            plain.append("")
        index += 1
    if helmdocs is not None:
        annotations.update(helmdocs[1])
        return helmdocs[0], annotations, True
    description = "\n".join(plain).strip() or None
    return description, annotations, False
