# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which values are secret, and how they are shown: the one rule for diffs, plans, results and no_log values.

A *sensitive path* is given either as a key name or as a dotted path:

- a key name (``password``, ``apiKey``) matches a mapping key that is that word, in any case, or ends with it at a
  word boundary: ``adminPassword``, ``db_password``, ``API_KEY``, ``openaiApiKey`` match; ``monkey``, ``tokenFile``
  and ``secretName`` do not;
- a dotted path (``auth.users.*.credential``) matches that exact chain of mapping keys from the top of the values
  (``*``: any one key; list items are transparent).

The key name ``key`` (a default) is not meant for the Kubernetes fields that *name* a key rather than hold one: a bare
``key`` whose value is a string is not secret when it is one of those fields, recognised by its parent or its siblings:

- its parent key is ``tolerations``, ``matchExpressions``, ``matchFields`` or ends with ``KeyRef`` (``secretKeyRef``,
  ``configMapKeyRef``);
- or its mapping is a toleration (``operator``/``effect``/``tolerationSeconds``, ``value``), a selector requirement
  (``operator``, ``values``) or a ``KeyToPath`` item (``path``, ``mode``) and has no other keys.

``topologyKey`` (a label name) is not secret either. ``{key: sk-...}``, ``auth.key``, ``privateKey``, ``apiKey``,
``API_KEY`` stay secret; to hide one of the fields above anyway, give its dotted path (``tolerations.key``).

Everything under a sensitive key is secret. In a diff, a secret that did not change is ``<hidden>`` on both sides;
one that changed is ``<hidden>`` before and ``<changed>`` after. Values are never hashed: a hash of a short password
can be reversed by trying candidates.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DEFAULT_SENSITIVE_VALUES = ("password", "token", "secret", "apiKey", "key")
HIDDEN = "<hidden>"
CHANGED = "<changed>"
# Strings shorter than this are not given to Ansible's no_log masking (which replaces every occurrence of a no_log
# value anywhere in the output: "on" or "1" would mangle every result); the engine's own redaction still hides them.
MIN_NO_LOG_LENGTH = 4


# ``key`` fields of the Kubernetes API that name a label, a taint or a key of a ConfigMap/Secret: never secret values.
_REFERENCE_PARENTS = ("tolerations", "matchexpressions", "matchfields")
_REFERENCE_SHAPES = (
    (frozenset(["operator", "value", "effect", "tolerationSeconds"]), frozenset(["operator", "effect", "tolerationSeconds"])),  # toleration
    (frozenset(["operator", "values"]), frozenset(["operator"])),  # label/node selector requirement
    (frozenset(["path", "mode"]), frozenset(["path"])),  # KeyToPath (volumes' configMap/secret items)
)
_LABEL_NAMES = frozenset(["topologykey"])


def _names_a_field(path, mapping):
    """True when ``path[-1]`` (a bare ``key``) is a Kubernetes field naming a key, not holding one (see the module doc)."""
    if not isinstance(mapping, dict) or not isinstance(mapping.get(path[-1]), str):
        return False
    parent = str(path[-2]).lower() if len(path) > 1 else ""
    if parent in _REFERENCE_PARENTS or parent.endswith("keyref"):
        return True
    others = frozenset(str(k) for k in mapping if k != path[-1])
    return any(others and others <= allowed and others & required for allowed, required in _REFERENCE_SHAPES)


def _name_matches(key, word):
    lower, target = key.lower(), word.lower()
    if lower == target:
        return True
    if not lower.endswith(target) or len(key) <= len(target):
        return False
    start = len(key) - len(target)
    return key[start].isupper() and not key[start - 1].isupper() or key[start - 1] in "_-."


class Sensitive(object):
    """The sensitive paths of one run (``patterns``: key names and dotted paths; None: the defaults)."""

    def __init__(self, patterns=None):
        patterns = DEFAULT_SENSITIVE_VALUES if patterns is None else patterns
        self.names = [str(p) for p in patterns if str(p) and "." not in str(p)]
        self.paths = [str(p).split(".") for p in patterns if "." in str(p)]

    def is_sensitive(self, path, mapping=None):
        """``path``: the mapping keys from the top of the values to a key (list indices left out); ``mapping``: the
        mapping that holds it, when known (a bare ``key`` naming a Kubernetes field is recognised by its siblings)."""
        if not path:
            return False
        key = str(path[-1])
        for name in self.names:
            if not _name_matches(key, name):
                continue
            if name.lower() == "key" and (key.lower() in _LABEL_NAMES or key.lower() == "key" and _names_a_field(path, mapping)):
                continue
            return True
        for pattern in self.paths:
            if len(pattern) == len(path) and all(p == "*" or p == str(k) for p, k in zip(pattern, path)):
                return True
        return False

    def redact(self, values, path=()):
        """A copy of ``values`` with everything under a sensitive key replaced by ``<hidden>``."""
        if isinstance(values, dict):
            return dict((k, HIDDEN if self.is_sensitive(path + (k,), values) else self.redact(v, path + (k,))) for k, v in values.items())
        if isinstance(values, list):
            return [self.redact(v, path) for v in values]
        return values

    def redact_pair(self, before, after, path=()):
        """``(before, after)`` copies for a diff: a sensitive value is ``<hidden>``, or ``<changed>`` after when it changed."""
        if isinstance(before, dict) and isinstance(after, dict):
            out_before, out_after = {}, {}
            for key in list(before) + [k for k in after if k not in before]:
                sub = path + (key,)
                if key in before and self.is_sensitive(sub, before) or key in after and self.is_sensitive(sub, after):
                    if key in before:
                        out_before[key] = HIDDEN
                    if key in after:
                        out_after[key] = HIDDEN if key in before and before[key] == after[key] else CHANGED
                    continue
                if key in before and key in after:
                    out_before[key], out_after[key] = self.redact_pair(before[key], after[key], sub)
                elif key in before:
                    out_before[key] = self.redact(before[key], sub)
                else:
                    out_after[key] = self.redact(after[key], sub)
            return out_before, out_after
        if isinstance(before, list) and isinstance(after, list):
            pairs = [self.redact_pair(b, a, path) for b, a in zip(before, after)]
            return ([b for b, _a in pairs] + [self.redact(v, path) for v in before[len(after):]],
                    [a for _b, a in pairs] + [self.redact(v, path) for v in after[len(before):]])
        return self.redact(before, path), self.redact(after, path)

    def secret_strings(self, values, path=(), found=None):
        """Every string (and number) under a sensitive key of ``values``, at least ``MIN_NO_LOG_LENGTH`` long: for no_log."""
        found = set() if found is None else found
        if isinstance(values, dict):
            for key, value in values.items():
                if self.is_sensitive(path + (key,), values):
                    _leaves(value, found)
                else:
                    self.secret_strings(value, path + (key,), found)
        elif isinstance(values, list):
            for value in values:
                self.secret_strings(value, path, found)
        return found


def _leaves(value, found):
    if isinstance(value, dict):
        for sub in value.values():
            _leaves(sub, found)
    elif isinstance(value, list):
        for sub in value:
            _leaves(sub, found)
    elif value is not None and not isinstance(value, bool):
        text = str(value)
        if len(text) >= MIN_NO_LOG_LENGTH:
            found.add(text)
