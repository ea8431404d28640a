# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One validation pass over a module's or a role's input, before any connection or change.

A pass collects every problem it finds (:class:`Problems`) rather than stopping at the first, and raises one
:class:`AicrError` at the end: its ``msg`` is the first problem's one line (naming the field, the value unless it is
secret, and what is allowed) plus how many more there are; ``errors`` lists them all, each
``{field, message, value?, allowed?}``. A pass that found one problem only, an ``AicrError`` another check raised
(:meth:`Problems.extend`), raises that error as it was (its details kept), with ``errors`` listing it. The same rules apply everywhere:

- numbers: an integer or float (a bool is not a number), within ``minimum``..``maximum``; ``None`` means "not given"
  and takes the default - a zero is a value, never the default (no ``x or default``);
- choices: one of a fixed list;
- names: Kubernetes names by their rule (:data:`NAME_RULES`: a DNS-1123 label, a DNS-1035 label, a DNS-1123 subdomain),
  never folded into one (no lower-casing, no slug); unknown keys (a lookup's keyword, a role's variable) are refused
  naming the nearest known one (:func:`nearest`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import math
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

MAX_ERRORS = 50  # listed in ``errors``; a pass over a huge input still answers in one screen
_NOT_GIVEN = object()

# rule: (pattern, longest, its name, what is allowed) - Kubernetes' own rules (apimachinery's IsDNS1123Label & co.)
NAME_RULES = {
    "dns-label": (re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), 63, "a DNS-1123 label",
                  "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"),
    "dns-1035-label": (re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$"), 63, "a DNS-1035 label",
                       "a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, "
                       "at most 63 characters"),
    "dns-subdomain": (re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"), 253, "a DNS-1123 subdomain",
                      "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', each part starting and ending with a letter or digit, "
                      "at most 253 characters"),
}


def name_problem(value, rule="dns-label"):
    """What is wrong with ``value`` as a Kubernetes name by ``rule`` (:data:`NAME_RULES`), or None."""
    pattern, longest, label, _allowed = NAME_RULES[rule]
    if not isinstance(value, str):
        return "is a %s, not a string" % type(value).__name__
    if not value:
        return "is empty"
    if len(value) > longest:
        return "is %d characters long" % len(value)
    if not pattern.match(value):
        return "is not %s" % label
    return None


def nearest(name, known):
    """The known name closest to ``name`` (``critera`` -> ``criteria``), or None when none is close."""
    matches = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_name_message(field, name, known):
    """``<field>: unknown <name>; did you mean <nearest>? allowed: a, b, c`` (one line)."""
    guess = nearest(name, known)
    hint = "did you mean %s? " % guess if guess else ""
    return "%s: %s is not known; %sallowed: %s" % (field, name, hint, ", ".join(sorted(known)))


def check_lookup_keywords(what, given, definitions):
    """A lookup's keywords ``given``, against ``definitions`` (the plugin's documented options: name -> its definition,
    ``LookupBase.option_definitions``; ``_terms`` aside): raise ``AicrError`` naming every keyword that is no option, with
    the nearest option, and every ``bool`` option given a value that is no boolean. Ansible itself passes an unknown
    keyword silently and reads any string it does not know as a boolean as false (``use_cache='perhaps'``)."""
    known = sorted(name for name in definitions if name != "_terms")
    problems = Problems(what)
    for key, value in (given or {}).items():
        if key not in known:
            problems.errors.append({"field": key, "message": unknown_name_message(what, key, known), "allowed": known})
        elif (definitions[key] or {}).get("type") in ("bool", "boolean") and not _is_boolean(value):
            problems.errors.append({"field": key, "message": "%s: %s: %s is not allowed; use true or false" % (what, key, _shown(value)),
                                    "value": _shown(value), "allowed": [True, False]})
    problems.raise_if_any()


def _is_boolean(value):
    """Whether Ansible reads ``value`` as a boolean strictly (``yes``, ``off``, ``1``, ``true``...)."""
    from ansible.module_utils.parsing.convert_bool import boolean  # pylint: disable=import-outside-toplevel
    try:
        boolean(value, strict=True)
    except TypeError:
        return False
    return True


def _shown(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Problems(object):
    """The problems one validation pass found; :meth:`raise_if_any` turns them into one :class:`AicrError`."""

    def __init__(self, what=""):
        self.what = what  # e.g. "gated_release": the error's ``msg`` starts with the first problem, not with this
        self.errors = []
        self.raised = []  # the AicrErrors given to :meth:`extend`

    def __bool__(self):
        return bool(self.errors)

    __nonzero__ = __bool__

    def add(self, field, message, value=_NOT_GIVEN, allowed=None, secret=False):
        """One problem; ``message`` is the line after ``field: `` (the value is left out of ``errors`` when secret)."""
        entry = {"field": field, "message": "%s: %s" % (field, message)}
        if value is not _NOT_GIVEN and not secret:
            entry["value"] = value if isinstance(value, (int, float, str, bool)) or value is None else _shown(value)
        if allowed is not None:
            entry["allowed"] = allowed
        self.errors.append(entry)

    def extend(self, error):
        """The problems of an :class:`AicrError` raised by another check (its ``errors``, or its one line)."""
        listed = error.details.get("errors")
        if listed:
            self.errors.extend(listed)
        else:
            entry = {"field": error.details.get("field") or "", "message": error.msg}
            entry.update((key, error.details[key]) for key in ("value", "allowed") if key in error.details)
            self.errors.append(entry)
        self.raised.append(error)

    def number(self, field, value, default=None, minimum=None, maximum=None, integer=False, unit=""):
        """``value`` checked as a number in range (``None``: ``default``); the value itself when it is refused."""
        if value is None:
            return default
        kind = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and isinstance(value, float) and not value.is_integer()):
            if isinstance(value, str):
                try:
                    value = int(value) if integer else float(value)
                except ValueError:
                    self.add(field, "%s is not allowed; use %s%s" % (_shown(value), kind, _range_text(minimum, maximum, unit)), value=value,
                             allowed=_range(minimum, maximum))
                    return value
            else:
                self.add(field, "%s is not allowed; use %s%s" % (_shown(value), kind, _range_text(minimum, maximum, unit)), value=value,
                         allowed=_range(minimum, maximum))
                return value
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            self.add(field, "%s is not allowed; use %s%s" % (value, kind, _range_text(minimum, maximum, unit)), value=str(value),
                     allowed=_range(minimum, maximum))
            return value
        if integer:
            value = int(value)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.add(field, "%s is not allowed; use %s" % (value, _bounds(minimum, maximum, unit) or kind), value=value,
                     allowed=_range(minimum, maximum))
        return value

    def positive(self, field, value, default=None, maximum=None, integer=False, unit="seconds"):
        """A number that must be more than zero (a timeout, an interval, a duration), at most ``maximum``."""
        problems_before = len(self.errors)
        checked = self.number(field, value, default=default, integer=integer, unit=unit)
        if checked is None or len(self.errors) > problems_before:
            return checked
        if checked <= 0 or (maximum is not None and checked > maximum):
            wanted = "more than 0 and at most %s %s" % (maximum, unit) if maximum is not None else "a positive number of %s" % unit
            self.add(field, "%s is not allowed; use %s" % (checked, wanted), value=checked, allowed=_range(">0", maximum))
        return checked

    def name(self, field, value, rule="dns-label"):
        """``value`` a Kubernetes name by ``rule`` (:data:`NAME_RULES`; None: not given), never folded into a valid one."""
        if value is None:
            return value
        problem = name_problem(value, rule)
        if problem is not None:
            self.add(field, "%s %s; allowed: %s" % (_shown(value), problem, NAME_RULES[rule][3]), value=value, allowed=NAME_RULES[rule][3])
        return value

    def text(self, field, value, empty=False):
        """``value`` a string (not empty unless ``empty``; None: not given)."""
        if value is None:
            return value
        if not isinstance(value, str) or (not value.strip() and not empty):
            self.add(field, "%s is not allowed; use a non-empty string" % _shown(value), value=value)
        return value

    def mapping(self, field, value):
        """Whether ``value`` is a mapping (None: not given, and not one); a problem otherwise."""
        if value is None:
            return False
        if not isinstance(value, dict):
            self.add(field, "a %s is not allowed; use a mapping" % type(value).__name__, value=value)
            return False
        return True

    def choice(self, field, value, allowed, default=None):
        """``value`` one of ``allowed`` (``None``: ``default``)."""
        if value is None:
            return default
        if value not in allowed:
            guess = nearest(value, [str(a) for a in allowed]) if isinstance(value, str) else None
            self.add(field, "%s is not allowed; %suse one of %s" % (_shown(value), "did you mean %s? " % guess if guess else "",
                                                                    ", ".join(str(a) for a in allowed)),
                     value=value, allowed=list(allowed))
        return value

    def known_keys(self, field, mapping, known, secret_values=True):
        """Each key of ``mapping`` one of ``known``; an unknown one is refused naming the nearest known key."""
        for key in mapping or {}:
            if key not in known:
                self.errors.append({"field": "%s.%s" % (field, key) if field else str(key),
                                    "message": unknown_name_message(field or "keys", key, known), "allowed": sorted(known)})

    def raise_if_any(self, **details):
        """One :class:`AicrError` for every problem found (nothing when there is none)."""
        if not self.errors:
            return
        if len(self.raised) == 1 and len(self.errors) == len(self.raised[0].details.get("errors") or [None]):
            only = self.raised[0]  # the one problem is another check's error: raised as it was (its details kept), listed in errors
            raise AicrError(only.msg, **dict(only.details, errors=self.errors[:MAX_ERRORS], **details))
        first = self.errors[0]["message"]
        more = len(self.errors) - 1
        msg = first if not more else "%s (and %d more problem%s, listed in errors)" % (first, more, "" if more == 1 else "s")
        raise AicrError(msg, field=self.errors[0]["field"], errors=self.errors[:MAX_ERRORS], **details)


def _range(minimum, maximum):
    out = {}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return out or None


def _bounds(minimum, maximum, unit):
    """``1 to 64 seconds``, ``1 or more``, ``at most 60 seconds``; "" without bounds."""
    unit = " " + unit if unit else ""
    if minimum is not None and maximum is not None:
        return "%s to %s%s" % (minimum, maximum, unit)
    if minimum is not None:
        return "%s or more%s" % (minimum, unit)
    if maximum is not None:
        return "at most %s%s" % (maximum, unit)
    return ""


def _range_text(minimum, maximum, unit):
    bounds = _bounds(minimum, maximum, unit)
    return " (%s)" % bounds if bounds else ""
