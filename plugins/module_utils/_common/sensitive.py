# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which values are secret, and how they are shown: the one rule for diffs, plans, results and no_log values.

A *sensitive path* is given either as a key name or as a dotted path:

- a key name (``password``, ``apiKey``) matches a mapping key whose words end with that name's words, in any case.
  A key's words are its parts split at ``_``, ``-``, ``.`` and other non-alphanumerics and at camelCase humps
  (``DBPassword``: ``db password``; ``openaiApiKey``: ``openai api key``); a key that is the name with its separators
  left out matches too (``APIKEY``, ``apikey``, ``connection_string`` for ``connectionString``). So ``adminPassword``,
  ``db_password``, ``API_KEY``, ``openaiApiKey``, ``basicAuth``, ``awsCredentials``, ``sentryDsn`` match; ``monkey``,
  ``tokenFile``, ``secretName``, ``author``, ``oauth`` and ``credentialsFile`` do not;
- a dotted path (``auth.users.*.credential``) matches that exact chain of mapping keys from the top of the values
  (``*``: any one key; list items are transparent).

The defaults are ``password``, ``passwd``, ``token``, ``secret``, ``apiKey``, ``key``, ``credentials``, ``auth``,
``dsn`` and ``connectionString``. ``auth`` hides a string or a number (``auth: user:pass``, Docker's
``auths.<host>.auth``), not a mapping: Helm charts keep whole settings blocks under ``auth`` (``auth.enabled``,
``auth.existingSecret``), whose own keys are judged by the other names (``auth.password`` is hidden).

Values are masked by their shape too: a URL with userinfo anywhere in a string (``postgres://app:pw@db:5432/x``, a
``*_url``, ``*Url`` or ``uri`` value) shows its password as ``<hidden>`` (``postgres://app:<hidden>@db:5432/x``), and a
userinfo without a password (``https://ghp_token@github.com``, a token) is ``<hidden>`` whole.

The key name ``key`` (a default) is not meant for the Kubernetes fields that *name* a key rather than hold one: a bare
``key`` whose value is a string is not secret when it is one of those fields, recognised by its parent or its siblings:

- its parent key is ``tolerations``, ``matchExpressions``, ``matchFields`` or ends with ``KeyRef`` (``secretKeyRef``,
  ``configMapKeyRef``);
- or its mapping is a toleration (``operator``/``effect``/``tolerationSeconds``, ``value``), a selector requirement
  (``operator``, ``values``) or a ``KeyToPath`` item (``path``, ``mode``) and has no other keys.

``topologyKey`` (a label name) is not secret either. ``{key: sk-...}``, ``auth.key``, ``privateKey``, ``apiKey``,
``API_KEY`` stay secret; to hide one of the fields above anyway, give its dotted path (``tolerations.key``).

Everything under a sensitive key is secret, except a boolean or a null as the key's own value
(``automountServiceAccountToken: true``, ``token: null``): no credential, and hiding it would only blur a diff.
In a diff, a secret that did not change is ``<hidden>`` on both sides; one that changed is ``<hidden>`` before and
``<changed>`` after. Values are never hashed: a hash of a short password can be reversed by trying candidates.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import re

DEFAULT_SENSITIVE_VALUES = ("password", "passwd", "token", "secret", "apiKey", "key", "credentials", "auth", "dsn", "connectionString")
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
# Names that hide a string or a number only, not a mapping of settings (see the module doc).
_SCALAR_ONLY = frozenset(["auth"])
# ``scheme://userinfo@``: the userinfo is everything up to the first ``@`` before any ``/`` (RFC 3986 escapes both in it).
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s]*)@")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _names_a_field(path, mapping):
    """True when ``path[-1]`` (a bare ``key``) is a Kubernetes field naming a key, not holding one (see the module doc)."""
    if not isinstance(mapping, dict) or not isinstance(mapping.get(path[-1]), str):
        return False
    parent = str(path[-2]).lower() if len(path) > 1 else ""
    if parent in _REFERENCE_PARENTS or parent.endswith("keyref"):
        return True
    others = frozenset(str(k) for k in mapping if k != path[-1])
    return any(others and others <= allowed and others & required for allowed, required in _REFERENCE_SHAPES)


@functools.lru_cache(maxsize=4096)  # the same few hundred keys are matched against every name, run after run
def _words(text):
    """The lower-case words of a key: split at non-alphanumerics and camelCase humps (``DBPassword``: db, password)."""
    return tuple(w.lower() for part in re.split(r"[^A-Za-z0-9]+", text) for w in _WORD.findall(part))


def _name_matches(key, word):
    """``key`` ends with the words of ``word``, or is ``word`` with its separators left out (``APIKEY``, ``apikey``)."""
    key_words, name_words = _words(key), _words(word)
    if not key_words or not name_words:
        return False
    return key_words[-len(name_words):] == name_words or "".join(key_words) == "".join(name_words)


def mask_userinfo(text, marker=HIDDEN):
    """``text`` with the password of each ``scheme://user:password@`` in it replaced by ``marker`` (a userinfo without
    a password, a token, is replaced whole)."""
    def masked(match):
        info = match.group(2)
        return match.group(1) + (info.split(":", 1)[0] + ":" + marker if ":" in info else marker) + "@"
    return _URL_USERINFO.sub(masked, text)


def userinfo_secrets(text):
    """The secret parts of the URLs in ``text`` (each password; a userinfo without one, whole), for no_log values."""
    found = set()
    for match in _URL_USERINFO.finditer(text):
        info = match.group(2)
        secret = info.split(":", 1)[1] if ":" in info else info
        if len(secret) >= MIN_NO_LOG_LENGTH:
            found.add(secret)
    return found


def _mask_leaf(value, marker=HIDDEN):
    return mask_userinfo(value, marker) if isinstance(value, str) and "@" in value else value


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
        if isinstance(mapping, dict) and (mapping.get(path[-1]) is None or isinstance(mapping.get(path[-1]), bool)):
            return False  # a flag (automountServiceAccountToken: true) or nothing: no secret, and a diff then shows it
        for name in self.names:
            if not _name_matches(key, name):
                continue
            if "".join(_words(name)) in _SCALAR_ONLY and isinstance(mapping, dict) and not _is_scalar(mapping.get(path[-1])):
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
        return _mask_leaf(values)

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
        shown_before, shown_after = self.redact(before, path), self.redact(after, path)
        if isinstance(before, str) and isinstance(after, str) and before != after and shown_before == shown_after:
            shown_after = _mask_leaf(after, CHANGED)  # only the hidden part of a URL changed: say so
        return shown_before, shown_after

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
        elif isinstance(values, str) and "@" in values:
            found.update(userinfo_secrets(values))
        return found


def override_secrets(sensitive, overrides, found=None):
    """The secret strings of the ``values`` of each entry of a ``component_overrides`` mapping (recipe_resolve's, and
    gated_release's and its ``resolve``'s), for the module's no_log values."""
    found = set() if found is None else found
    for override in overrides.values() if isinstance(overrides, dict) else []:
        if isinstance(override, dict):
            sensitive.secret_strings(override.get("values"), found=found)
    return found


def _is_scalar(value):
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


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
