# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Chainsaw health checks read and matched: kyverno-json assertion trees over Kubernetes objects (no cluster here).

AICR's catalog ships ``checks/<component>/health-check.yaml``, a Chainsaw ``Test`` whose steps ``try`` ``assert`` and
``error`` operations, each with a ``resource`` - an assertion tree (kyverno-json):

* a mapping matches when every key matches: a plain key is a field of the object (a missing field fails,
  ``field not found``); a key ``(expr)`` is a JMESPath expression evaluated on the object, its result matched with
  the value; a key ``~key`` / ``~.(expr)`` iterates: the value must match every element of the (projected) list;
* a list matches a list of the same length, element by element (kyverno-json's exact-length rule);
* a scalar matches an equal scalar (numbers compared as numbers); a string ``(expr)`` is evaluated on the object
  first, its result compared;
* an empty mapping matches anything but null.

:func:`parse_check` reads a check (a Chainsaw ``Test``, or plain resource documents as AICR's raw-assert path takes)
into :class:`Check`; everything it cannot evaluate faithfully - another operation (``apply``, ``script``, ``wait``,
``delete``…), an operation reading a ``file``, a binding (``->name``, ``$name``), a JMESPath function that is not
JMESPath's own (Chainsaw adds ``x_k8s_*``, ``wildcard``, ``json_parse``…), a malformed expression - raises an
:class:`~.errors.AicrError` naming it: a check is never silently passed. :func:`match` returns the failures of one
object against one tree, each ``(path, expected, actual)``. Reading the cluster is the caller's (``_release.health``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import HIDDEN, Sensitive

# jmespath is imported on first use (a recipe with health checks): most runs have none. Whether it is installed is known
# without importing it.
try:
    from importlib.util import find_spec

    HAS_JMESPATH = find_spec("jmespath") is not None
except (ImportError, ValueError):  # pragma: no cover - Python 3 has importlib.util; a broken entry in sys.modules
    HAS_JMESPATH = False
JMESPATH_IMPORT_ERROR = None if HAS_JMESPATH else "ImportError: No module named 'jmespath'"
_JMESPATH = []  # (jmespath, jmespath.exceptions, jmespath.functions), once imported

CHAINSAW_GROUP = "chainsaw.kyverno.io/"
NO_OP_ANNOTATION = "aicr/no-op-check"
DEFAULT_ASSERT_TIMEOUT = 30.0  # Chainsaw's default assert timeout (seconds)
OPERATIONS = ("assert", "error")
# step keys that do not take part in a read-only evaluation: descriptions, and diagnostics Chainsaw runs on failure
IGNORED_STEP_KEYS = ("name", "description", "catch", "finally", "cleanup", "timeouts", "skipDelete", "bindings")
# the keys a failure's path (``spec.auth.password``, ``~.(spec.containers)[0].env``, ``(data.token)``) goes through
_PATH_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_LITERALS = re.compile(r"'[^']*'|`[^`]*`|\"[^\"]*\"")  # JMESPath literals in a path: what it compares with, not a key
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")


def _missing(error):
    return AicrError("the Python package 'jmespath' is required to evaluate health checks (pip install jmespath); "
                     "or set health_checks: false", missing_library="jmespath", exception=error, field="health_checks")


def require_jmespath():
    if not HAS_JMESPATH:
        raise _missing(JMESPATH_IMPORT_ERROR)


def _jmespath():
    """``(jmespath, jmespath.exceptions, jmespath.functions)``, imported on first use."""
    if not _JMESPATH:
        require_jmespath()
        try:
            import jmespath  # pylint: disable=import-outside-toplevel
            from jmespath import exceptions as jmespath_exceptions  # pylint: disable=import-outside-toplevel
            from jmespath import functions as jmespath_functions  # pylint: disable=import-outside-toplevel
        except ImportError:
            raise _missing(traceback.format_exc())
        _JMESPATH[:] = [jmespath, jmespath_exceptions, jmespath_functions]
    return tuple(_JMESPATH)


def parse_duration(text, where):
    """Seconds of a Go duration (``5m``, ``1m30s``, ``45s``, ``500ms``); raises AicrError naming ``where``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    found = _DURATION.match(str(text or "").strip())
    if not found or not any(found.groups()):
        raise AicrError("%s: %r is not a duration; allowed: a Go duration such as 5m, 1m30s, 45s" % (where, text), field="health_checks")
    hours, minutes, seconds, millis = [float(g) if g else 0.0 for g in found.groups()]
    return hours * 3600 + minutes * 60 + seconds + millis / 1000.0


def _is_expression(text):
    return isinstance(text, str) and len(text) >= 2 and text.startswith("(") and text.endswith(")")


def _builtin_functions():
    return set(name[len("_func_"):] for name in dir(_jmespath()[2].Functions) if name.startswith("_func_"))


def _function_names(node, found):
    if isinstance(node, dict):
        if node.get("type") == "function_expression":
            found.add(node.get("value"))
        for child in node.get("children") or []:
            _function_names(child, found)
    return found


class Expression(object):
    """A compiled JMESPath expression (the text between the parentheses of ``(expr)``)."""

    __slots__ = ("text", "compiled")

    def __init__(self, text, where):
        self.text = text
        if "$" in text and not re.search(r"'[^']*\$[^']*'|`[^`]*\$[^`]*`", text):
            raise AicrError("%s: expression (%s) uses a binding ($...), which is not supported; allowed: JMESPath over the object"
                            % (where, text), field="health_checks", expression=text)
        try:
            self.compiled = _jmespath()[0].compile(text)
        except _jmespath()[1].JMESPathError as exc:
            raise AicrError("%s: expression (%s) is not valid JMESPath: %s" % (where, text, " ".join(str(exc).split())),
                            field="health_checks", expression=text)
        unknown = sorted(n for n in _function_names(self.compiled.parsed, set()) if n not in _builtin_functions())
        if unknown:
            raise AicrError("%s: expression (%s) calls %s, which is not supported; allowed: JMESPath's own functions"
                            % (where, text, ", ".join(unknown)), field="health_checks", expression=text)

    def search(self, value):
        try:
            return self.compiled.search(value)
        except _jmespath()[1].JMESPathError as exc:
            raise AicrError("expression (%s) failed: %s" % (self.text, " ".join(str(exc).split())), field="health_checks", expression=self.text)


class Tree(object):
    """A compiled assertion tree: expressions compiled, constructs checked, once when the check is read."""

    def __init__(self, raw, where):
        self.raw = raw
        self.node = self._compile(raw, where)

    def _compile(self, raw, where):
        if isinstance(raw, dict):
            entries = []
            for key, value in raw.items():
                key = str(key)
                foreach = key.startswith("~")
                text = key[1:] if foreach else key
                if foreach and text.startswith("."):
                    text = text[1:]
                if "->" in text:
                    raise AicrError("%s: key %r binds a name (->), which is not supported; allowed: plain keys, (expr), ~key"
                                    % (where, key), field="health_checks", key=key)
                expr = Expression(text[1:-1], where) if _is_expression(text) else None
                entries.append((key, text, expr, foreach, self._compile(value, "%s.%s" % (where, key))))
            return ("map", entries)
        if isinstance(raw, list):
            return ("list", [self._compile(item, "%s[%d]" % (where, i)) for i, item in enumerate(raw)])
        if _is_expression(raw):
            return ("expr", Expression(raw[1:-1], where))
        return ("scalar", raw)


def show(value):
    """A value as the failure messages print it (JSON, short)."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _equal(left, right):
    numbers = (int, float)
    if isinstance(left, numbers) and isinstance(right, numbers) and not isinstance(left, bool) and not isinstance(right, bool):
        return float(left) == float(right)
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return set(left) == set(right) and all(_equal(left[k], right[k]) for k in left)
    return left == right


def _match(node, actual, path, failures):
    kind, spec = node
    if kind == "map":
        if not spec:
            if actual is None:
                failures.append((path or "(object)", "a value", None))
            return
        for key, text, expr, foreach, child in spec:
            where = "%s.%s" % (path, key) if path else key
            if expr is not None:
                projected = expr.search(actual)
            else:
                if not isinstance(actual, dict):
                    failures.append((where, "a mapping with field %s" % text, actual))
                    continue
                if text not in actual:
                    failures.append((where, "the field (field not found in the input object)", None))
                    continue
                projected = actual[text]
            if foreach:
                if isinstance(projected, list):
                    items = [("%s[%d]" % (where, i), item) for i, item in enumerate(projected)]
                elif isinstance(projected, dict):
                    items = [("%s.%s" % (where, k), projected[k]) for k in sorted(projected)]
                else:
                    failures.append((where, "a list or mapping to iterate (~)", projected))
                    continue
                for item_path, item in items:
                    _match(child, item, item_path, failures)
            else:
                _match(child, projected, where, failures)
    elif kind == "list":
        if not isinstance(actual, list):
            failures.append((path, "a list of %d" % len(spec), actual))
        elif len(actual) != len(spec):
            failures.append((path, "a list of %d (lengths of slices don't match)" % len(spec), actual))
        else:
            for i, (child, item) in enumerate(zip(spec, actual)):
                _match(child, item, "%s[%d]" % (path, i), failures)
    elif kind == "expr":
        expected = spec.search(actual)
        if not _equal(actual, expected):
            failures.append((path, expected, actual))
    elif not _equal(actual, spec):
        failures.append((path, spec, actual))


def match(tree, obj):
    """The failures of ``obj`` against ``tree`` (a :class:`Tree`): ``[(path, expected, actual)]``, empty when it matches."""
    failures = []
    _match(tree.node, obj, "", failures)
    return failures


class Operation(object):
    """One ``assert`` (the resource must match) or ``error`` (no resource may match) of a step."""

    __slots__ = ("op", "step", "index", "tree", "api_version", "kind", "name", "namespace", "labels")

    def __init__(self, op, step, index, resource, where):
        if not isinstance(resource, dict):
            raise AicrError("%s: %s needs a resource mapping; allowed: resource (file is not supported)" % (where, op), field="health_checks")
        self.op, self.step, self.index = op, step, index
        self.api_version = resource.get("apiVersion")
        self.kind = resource.get("kind")
        if not isinstance(self.api_version, str) or not isinstance(self.kind, str) or _is_expression(self.api_version) or _is_expression(self.kind):
            raise AicrError("%s: %s resource needs a literal apiVersion and kind, got %r / %r" % (where, op, self.api_version, self.kind),
                            field="health_checks")
        meta = resource.get("metadata") or {}
        if not isinstance(meta, dict):
            raise AicrError("%s: metadata must be a mapping" % where, field="health_checks")
        self.name = meta.get("name") if isinstance(meta.get("name"), str) and not _is_expression(meta.get("name")) else None
        self.namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) and not _is_expression(meta.get("namespace")) else None
        labels = meta.get("labels") or {}
        # labels given as plain strings select the candidates (as Chainsaw does); any other form is matched per object
        self.labels = dict((k, v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str) and not _is_expression(k)
                           and not k.startswith("~") and not _is_expression(v)) if isinstance(labels, dict) else {}
        self.tree = Tree(resource, where)

    def label_selector(self):
        return ",".join("%s=%s" % (k, self.labels[k]) for k in sorted(self.labels)) or None

    def describe(self, namespace=None):
        ns = self.namespace or namespace
        target = "%s/%s" % (ns, self.name or "*") if ns else (self.name or "*")
        if self.labels:
            target += " [%s]" % self.label_selector()
        return "%s %s %s" % (self.op, self.kind, target)


class Check(object):
    """A parsed health check: its operations in order, the assert timeout, and whether it is AICR's explicit no-op."""

    __slots__ = ("name", "component", "operations", "timeout", "no_op", "steps")

    def __init__(self, name, component, operations, timeout, no_op, steps):
        self.name, self.component, self.operations, self.timeout, self.no_op, self.steps = name, component, operations, timeout, no_op, steps


def _load_docs(text, where):
    deps.require("PyYAML", "to read health checks", field="health_checks")
    try:
        return [d for d in deps.load_all(text, "health checks %s" % where) if d is not None]
    except deps.yaml.YAMLError as exc:
        raise AicrError("%s: the check is not valid YAML: %s" % (where, " ".join(str(exc).split())[:300]), field="health_checks")


def parse_check(text, component):
    """A :class:`Check` from a component's ``healthCheckAsserts`` text; raises AicrError on anything not supported."""
    require_jmespath()
    where = "health check of %s" % component
    docs = _load_docs(text, where)
    tests = [d for d in docs if isinstance(d, dict) and str(d.get("apiVersion") or "").startswith(CHAINSAW_GROUP)]
    if not tests:
        # AICR's raw path: plain resource documents, each asserted by apiVersion, kind and name
        operations = []
        for i, doc in enumerate(docs):
            if not isinstance(doc, dict) or not (doc.get("metadata") or {}).get("name"):
                raise AicrError("%s: document %d is neither a Chainsaw Test nor a resource with apiVersion, kind and metadata.name"
                                % (where, i + 1), field="health_checks")
            operations.append(Operation("assert", "resources", i, doc, "%s: document %d" % (where, i + 1)))
        return Check(component, component, operations, None, False, 1 if operations else 0)
    if len(tests) != len(docs) or len(tests) != 1:
        raise AicrError("%s: expected one Chainsaw Test document, found %d document(s) of which %d Tests" % (where, len(docs), len(tests)),
                        field="health_checks")
    test = tests[0]
    if test.get("kind") != "Test":
        raise AicrError("%s: kind %r is not supported; allowed: Test" % (where, test.get("kind")), field="health_checks")
    meta = test.get("metadata") or {}
    spec = test.get("spec") or {}
    timeouts = spec.get("timeouts") or {}
    timeout = parse_duration(timeouts["assert"], "%s: spec.timeouts.assert" % where) if timeouts.get("assert") is not None else DEFAULT_ASSERT_TIMEOUT
    no_op = str((meta.get("annotations") or {}).get(NO_OP_ANNOTATION) or "").lower() == "true"
    operations = []
    steps = spec.get("steps") or []
    if not isinstance(steps, list):
        raise AicrError("%s: spec.steps must be a list" % where, field="health_checks")
    for s, step in enumerate(steps):
        step_name = str((step or {}).get("name") or "step-%d" % (s + 1))
        step_where = "%s: step %s" % (where, step_name)
        if not isinstance(step, dict):
            raise AicrError("%s: a step must be a mapping" % step_where, field="health_checks")
        unknown = sorted(k for k in step if k not in IGNORED_STEP_KEYS and k != "try")
        if unknown:
            raise AicrError("%s: %s not supported; allowed: name, try (and the diagnostics %s, not run)"
                            % (step_where, ", ".join(unknown), ", ".join(k for k in IGNORED_STEP_KEYS if k != "name")), field="health_checks")
        for o, raw in enumerate(step.get("try") or []):
            kinds = [k for k in (raw or {}) if k not in ("description", "timeout")] if isinstance(raw, dict) else []
            if len(kinds) != 1 or kinds[0] not in OPERATIONS:
                raise AicrError("%s: operation %d (%s) is not supported; allowed: assert, error (health checks are read-only)"
                                % (step_where, o + 1, ", ".join(kinds) or raw), field="health_checks")
            body = raw[kinds[0]] or {}
            extra = sorted(k for k in body if k not in ("resource", "timeout", "description")) if isinstance(body, dict) else []
            if extra or not isinstance(body, dict):
                raise AicrError("%s: operation %d (%s) uses %s, which is not supported; allowed: resource"
                                % (step_where, o + 1, kinds[0], ", ".join(extra) or body), field="health_checks")
            operations.append(Operation(kinds[0], step_name, o, body.get("resource"), "%s: %s %d" % (step_where, kinds[0], o + 1)))
    return Check(str(meta.get("name") or component), component, operations, timeout, no_op, len(steps))


def evaluate(operation, candidates):
    """``(passed, detail)`` of one operation over the candidate objects (the caller read them from the cluster).

    ``assert``: passes when any candidate matches (none -> fails, "no resource found"); ``error``: passes when none
    matches. ``detail`` is None when passed, else ``{resource, expression, expected, actual, message}``."""
    if operation.op == "assert":
        if not candidates:
            return False, {"resource": None, "expression": None, "expected": "a resource", "actual": "none found", "message": "no resource found"}
        best = None
        for obj in candidates:
            failures = match(operation.tree, obj)
            if not failures:
                return True, None
            if best is None or len(failures) < len(best[1]):
                best = (obj, failures)
        obj, failures = best
        path, expected, actual = failures[0]
        more = " (and %d more)" % (len(failures) - 1) if len(failures) > 1 else ""
        expected, actual = masked(obj, path, expected), masked(obj, path, actual)
        return False, {"resource": _ref(obj), "expression": path, "expected": show(expected), "actual": show(actual),
                       "message": "%s: expected %s, got %s%s" % (path, show(expected), show(actual), more)}
    for obj in candidates:
        if not match(operation.tree, obj):
            return False, {"resource": _ref(obj), "expression": _first_expression(operation.tree), "expected": "no match",
                           "actual": "matches", "message": "matches the error condition %s" % show(masked(obj, "", _leaves(operation.tree)))}
    return True, None


def masked(obj, path, value):
    """``value`` (what a failure shows of ``obj`` at ``path``) with its secrets hidden, as ``_common.sensitive`` hides
    values: the whole of it when the path names a sensitive key (``data.password``, ``(spec.auth.token)``) or a
    Secret's ``data``/``stringData``, else the sensitive keys inside it (a Secret's ``data`` among them when it is the
    object itself) and the passwords of URLs. The message stays useful: the path, the expected shape and what was
    not hidden. A health check's failure goes to the task's ``msg`` and to the ClusterStack status, both widely read."""
    sensitive = Sensitive()
    words = tuple(_PATH_WORD.findall(_LITERALS.sub("", path or "")))
    is_secret = isinstance(obj, dict) and obj.get("kind") == "Secret"
    # the value at a word before the last is a mapping (auth.enabled is a setting; auth: user:pass a credential)
    on_path = any(sensitive.is_sensitive(words[:i + 1], {word: value if i == len(words) - 1 else {}}) for i, word in enumerate(words))
    if on_path or is_secret and words[:1] in (("data",), ("stringData",)):
        return _hidden_leaves(value)
    if is_secret and not words and isinstance(value, dict):
        value = dict(value, **dict((k, _hidden_leaves(value[k])) for k in ("data", "stringData") if k in value))
    return sensitive.redact(value)


def _hidden_leaves(value):
    """``value`` with every leaf ``<hidden>`` and its keys kept (which keys a Secret has is not secret; what they hold is);
    a boolean or null stays: what an expression such as ``(keys(data)[?@ == 'password'] | length(@) == `1`)`` computed."""
    if isinstance(value, dict):
        return dict((k, _hidden_leaves(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_hidden_leaves(v) for v in value]
    return value if value is None or isinstance(value, bool) else HIDDEN


def _ref(obj):
    meta = obj.get("metadata") or {}
    return "%s %s" % (obj.get("kind") or "?", "%s/%s" % (meta["namespace"], meta.get("name")) if meta.get("namespace") else meta.get("name"))


def _leaves(tree):
    """The non-identity part of an error tree (what it looks for), for the message."""
    raw = dict((k, v) for k, v in tree.raw.items() if k not in ("apiVersion", "kind", "metadata"))
    return raw or tree.raw.get("metadata")


def _first_expression(tree):
    for key in tree.raw:
        if key not in ("apiVersion", "kind", "metadata"):
            value = tree.raw[key]
            if isinstance(value, dict) and value:
                return "%s.%s" % (key, next(iter(value)))
            return key
    return "metadata"
