# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""AICR's error texts as its CLI prints them, so that a refusal reads word for word as ``aicr recipe``'s.

AICR's errors are ``[CODE] message`` and, wrapping a cause, ``[CODE] message: <cause's text>``; its CLI prints the
outermost one, whose ``[CODE]`` this collection leaves out of ``msg`` (:func:`message`). Go's ``%q`` quotes a string
in double quotes with escapes (:func:`quote`), ``%v`` prints a list of strings as ``[a b]`` (:func:`go_list`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

INVALID_REQUEST = "INVALID_REQUEST"
NOT_FOUND = "NOT_FOUND"
INTERNAL = "INTERNAL"
_CODE = re.compile(r"^\[([A-Z_]+)\] ")


def chain(code, text, cause=None):
    """``[CODE] text`` or ``[CODE] text: cause`` (``cause`` is the wrapped error's own text)."""
    return "[%s] %s%s" % (code, text, ": %s" % cause if cause else "")


def code(error_text):
    m = _CODE.match(error_text or "")
    return m.group(1) if m else ""


def message(error_text):
    """The text without its outermost ``[CODE] ``."""
    return _CODE.sub("", error_text or "", count=1)


def quote(text):
    """Go's ``%q`` of a string."""
    return json.dumps(text, ensure_ascii=False)


def go_list(items):
    """Go's ``%v`` of a ``[]string``."""
    return "[%s]" % " ".join(items)
