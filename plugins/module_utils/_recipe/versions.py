# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""AICR v0.19.0's versions (``pkg/version``) and constraint expressions (``pkg/constraints``' ``ParsedConstraint``).

An expression is:

* ``>= x``, ``<= x``, ``> x``, ``< x`` - version comparison (both sides must parse as versions, else an error);
* ``== x``, ``!= x`` - version equality when ``x`` looks like a version and both sides parse, else string equality;
* anything else - exact, case-sensitive string match (``ubuntu``; ``24.04`` is compared as a string too).

Versions: an optional ``v``, at most three numeric components; ``-``/``+`` after a digit starts the extras, which
never take part in a comparison. Comparison stops at the shorter precision (``1.34`` equals ``1.34.7``).
Errors carry AICR's texts (``aicrerrors``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import aicrerrors as errs

OPERATORS = (">=", "<=", "!=", "==", ">", "<")  # longest first, as AICR scans them
ORDERING = (">=", "<=", ">", "<")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_NOT_NUMERIC = "version component is not numeric"


class VersionError(ValueError):
    """A version that does not parse; ``str()`` is AICR's error text."""


def _version_error(text, cause):
    return VersionError(errs.chain(errs.INVALID_REQUEST, text, cause))


class Version(object):
    """AICR's ``pkg/version.Version``: major, minor, patch, precision (number of components given), extras."""

    __slots__ = ("major", "minor", "patch", "precision", "extras")

    def __init__(self, major=0, minor=0, patch=0, precision=3, extras=""):
        self.major, self.minor, self.patch, self.precision, self.extras = major, minor, patch, precision, extras

    @classmethod
    def parse(cls, text):
        if text == "":
            raise _version_error("empty version string", "version string is empty")
        s = text[1:] if text.startswith("v") else text
        main, extras = s, ""
        for i, ch in enumerate(s):
            if ch in "-+" and i > 0 and s[i - 1].isdigit():
                main, extras = s[:i], s[i:]
                break
        parts = main.split(".")
        if len(parts) > 3:
            raise _version_error("too many version components", "version has more than 3 components")
        nums = []
        for part in parts:
            if part == "":
                raise _version_error("empty component", _NOT_NUMERIC)
            if not _INTEGER.match(part):
                raise _version_error("non-numeric component: %s" % errs.quote(part), _NOT_NUMERIC)
            num = int(part)
            if num < 0:
                raise _version_error("negative component: %d" % num, "version component cannot be negative")
            nums.append(num)
        nums += [0] * (3 - len(nums))
        return cls(nums[0], nums[1], nums[2], len(parts), extras)

    def equals(self, other):
        return (self.major, self.minor, self.patch) == (other.major, other.minor, other.patch)

    def compare(self, other):
        precision = min(self.precision, other.precision)
        pairs = [(self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)][:max(precision, 1)]
        for mine, theirs in pairs:
            if mine != theirs:
                return -1 if mine < theirs else 1
        return 0


def looks_like_version(value):
    s = value[1:] if value.startswith("v") else value
    return bool(s) and any(c.isdigit() for c in s) and "." in s


class Expression(object):
    """A parsed constraint value (AICR's ``ParsedConstraint``); errors are ValueErrors with AICR's texts."""

    def __init__(self, operator, value, version_comparison):
        self.operator, self.value, self.version_comparison = operator, value, version_comparison

    @classmethod
    def parse(cls, text):
        expr = (text or "").strip()
        if expr == "":
            raise ValueError(errs.chain(errs.INVALID_REQUEST, "constraint expression cannot be empty"))
        if expr.startswith("!") and not expr.startswith("!=") and len(expr) > 1 and not expr[1].isspace():
            raise ValueError(errs.chain(errs.INVALID_REQUEST, "bare '!' prefix is invalid; use '!=' or the separate node-set form"))
        operator, value = "", expr
        for op in OPERATORS:
            if expr.startswith(op):
                operator, value = op, expr[len(op):].strip()
                break
        if value == "":
            raise ValueError(errs.chain(errs.INVALID_REQUEST, "constraint value cannot be empty after operator"))
        version_comparison = operator in ORDERING or looks_like_version(value)
        return cls(operator, value, version_comparison)

    def evaluate(self, actual):
        """True/False; raises ValueError when an ordering operator meets a value that is not a version."""
        actual = actual.strip()
        if self.operator == "":
            return actual == self.value
        if self.operator in ("==", "!="):
            same = actual == self.value
            if self.version_comparison:
                try:
                    same = Version.parse(self.value).equals(Version.parse(actual))
                except VersionError:
                    same = actual == self.value
            return same if self.operator == "==" else not same
        try:
            expected = Version.parse(self.value)
        except VersionError as exc:
            raise ValueError(errs.chain(errs.INVALID_REQUEST, "cannot parse expected version", str(exc)))
        try:
            got = Version.parse(actual)
        except VersionError as exc:
            raise ValueError(errs.chain(errs.INVALID_REQUEST, "cannot parse actual version", str(exc)))
        cmp = got.compare(expected)
        return {">=": cmp >= 0, ">": cmp > 0, "<=": cmp <= 0, "<": cmp < 0}[self.operator]
