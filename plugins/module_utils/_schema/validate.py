# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Values for ``output: validate``: Helm's ``--set`` / ``--set-string`` expressions as a nested dict.

The validation itself is the collection's one rule, ``_common.validation.validate`` (shared with gated_release).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

_INDEXES = re.compile(r"^(.*?)((?:\[\d+\])*)$", re.S)
_INT = re.compile(r"^[-+]?\d+$")


def _split_unescaped(text, sep):
    parts, current, depth, escape = [], [], 0, False
    for char in text:
        if escape:
            current.append("\\" + char)
            escape = False
            continue
        if char == "\\":
            escape = True
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if escape:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _typed(text, as_string):
    if as_string:
        return text
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if _INT.match(text) and (text == "0" or not text.lstrip("+-").startswith("0")):
        return int(text)
    return text


def _value(text, as_string):
    if text.startswith("{") and text.endswith("}"):
        inner = text[1:-1]
        return [_typed(_unescape(v), as_string) for v in _split_unescaped(inner, ",")] if inner else []
    return _typed(_unescape(text), as_string)


def _unescape(text):
    return re.sub(r"\\(.)", r"\1", text)


def _key_parts(key):
    parts = []
    for raw in _split_unescaped(key, "."):
        match = _INDEXES.match(raw)
        name, indexes = match.groups()
        if name:
            parts.append(_unescape(name))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", indexes))
    return parts


def parse_set(expressions, as_string=False, field="set"):
    """``["a.b=1", "c[0].d=x,e={a,b}"]`` → a nested dict (later wins), as ``helm --set`` does; ``field`` names the option
    in a refusal (``set``, ``set_string``)."""
    result = {}
    for expression in expressions or []:
        for assignment in _split_unescaped(str(expression), ","):
            if not assignment.strip():
                continue
            key, sep, value = assignment.partition("=")
            if not sep or not key:
                raise AicrError("%s: %r is not key=value" % (field, assignment), field=field, value=assignment)
            _assign(result, _key_parts(key), _value(value, as_string), assignment, field)
    return result


def _assign(root, parts, value, expression, field="set"):
    node = root
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        nxt = None if last else parts[index + 1]
        if isinstance(part, int):
            if not isinstance(node, list):
                raise AicrError("%s: %r indexes a non-list" % (field, expression), field=field, value=expression)
            if part > 10000:
                raise AicrError("%s: index %d in %r is above the limit 10000" % (field, part, expression), field=field, value=expression)
            while len(node) <= part:
                node.append(None)
            if last:
                node[part] = value
            else:
                if not isinstance(node[part], (dict, list)):
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
        else:
            if not isinstance(node, dict):
                raise AicrError("%s: %r sets a key inside a non-map" % (field, expression), field=field, value=expression)
            if last:
                node[part] = value
            else:
                if not isinstance(node.get(part), (dict, list)):
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
