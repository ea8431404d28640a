# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one error type every engine raises.

Engines never call AnsibleModule; they raise ``AicrError`` with a one-line ``msg``
that names the field, the value and what is allowed, plus structured ``details``.
Modules turn it into ``fail_json(msg=..., **details)``; lookups into AnsibleLookupError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class AicrError(Exception):
    """A user-facing failure: ``msg`` is one line, ``details`` is JSON-serialisable."""

    def __init__(self, msg, **details):
        super(AicrError, self).__init__(msg)
        self.msg = msg
        self.details = details

    def to_result(self):
        """Keyword arguments for ``AnsibleModule.fail_json``."""
        result = dict(self.details)
        result["msg"] = self.msg
        return result


def first_line(text):
    """The first line of ``text`` (an exception's text, a message), "" when empty: messages stay one line."""
    text = str(text or "")
    return text.splitlines()[0] if text else ""
