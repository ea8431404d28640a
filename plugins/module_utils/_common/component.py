# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The component: one type from recipe_resolve to gated_release, the manifest renderer and the status writers.

recipe_resolve builds a :class:`Component` from each enabled AICR componentRef and returns :meth:`Component.to_dict`
(the ``components[]`` of its result); gated_release reads that dict back with :meth:`Component.from_dict` (the
same keys, no aliases); the manifest renderer takes the same dict; a rollout's component result and a
ClusterStack status entry are made from a Component's fields.

The rules every reader of a component shares live here once:

- *manifest-only*: a component without a chart deploys only its manifest files (no helm release);
- *chart reference*: an OCI repository's chart is ``<repository>/<chart>``; any other chart is its name, with the
  repository given to helm separately (:func:`chart_reference`);
- *release digest*: sha256 of chart, upstream repository, version and values (:func:`release_digest`);
- *what may reach helm's argv*: a chart name, a repository URL (an OCI reference in particular) and a version each have
  one allowed form (:func:`chart_source_problem`, :func:`check_chart_source`), checked before helm runs: a chart is a
  positional argument, so ``-x`` would be read as a flag, and ``../`` would leave a ``file://`` repository;
- *overrides*: the keys a ``component_overrides`` entry may set and their types (:func:`override_problems`), and how
  they apply (:meth:`Component.overridden`; ``values`` are merged, ``null`` deletes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, merge_null_deletes

OVERRIDE_KEYS = ("chart", "repository", "version", "namespace", "values", "enabled")
# recipe_resolve applies these while resolving (chart and repository are the deployer's: gated_release)
RESOLVE_OVERRIDE_KEYS = ("version", "namespace", "values", "enabled")
_STRING_OVERRIDES = ("chart", "repository", "version", "namespace")


def is_oci(repository):
    return isinstance(repository, str) and repository.startswith("oci://")


# helm's chart name charset (its metadata rule: letters, digits, ".", "_", "-"), "/"-separated for a path inside an OCI
# registry or a repository's folder; a segment never starts with "-" (a flag to helm) or "." (".." leaves the folder)
_CHART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")
# an OCI repository: oci://<host>[:port][/<path>], the path lower case as the distribution spec's repository names
_OCI_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_OCI_REPOSITORY = re.compile(r"^oci://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?(?:/%s)*/?$" % _OCI_PATH)
_OCI_CHART = re.compile(r"^%s(?:/%s)*$" % (_OCI_PATH, _OCI_PATH))
_URL = re.compile(r"^(?:https?://[^\s/?#]+|file://)[^\s]*$|^/[^\s]*$")
# a chart version or a helm version constraint (1.2.3, v26.3.3, >=1.0.0 <2.0.0, ~1.2, ^1, 1.x, *)
_VERSION = re.compile(r"^[A-Za-z0-9*^~=<>!][A-Za-z0-9.+_~^<>=!*, |-]{0,127}$")
CHART_ALLOWED = ("a helm chart name (letters, digits, '.', '_', '-'; '/' between path segments; no segment starting with '-' or '.'), "
                 "lower case in an OCI registry")
REPOSITORY_ALLOWED = "an https://, http://, oci://<host>[:port]/<lower-case path> or file:// URL (or an absolute path), without spaces"
VERSION_ALLOWED = "a chart version or a helm version constraint (letters, digits and . + _ ~ ^ < > = ! * , | - and spaces; not starting with '-')"


def chart_source_problem(chart, repository, version):
    """``(field, value, allowed)`` of the first of ``chart``, ``repository``, ``version`` that helm must not be given
    (None when all are allowed; an empty value is not checked here)."""
    plain = _USERINFO.sub(r"\1", repository) if isinstance(repository, str) else repository  # userinfo has its own refusal
    if repository and (not isinstance(repository, str) or not (_OCI_REPOSITORY.match(plain) if is_oci(plain) else _URL.match(plain))):
        return "repository", repository, REPOSITORY_ALLOWED
    if chart and (not isinstance(chart, str) or len(chart) > 253 or not _CHART.match(chart) or (is_oci(repository) and not _OCI_CHART.match(chart))):
        return "chart", chart, CHART_ALLOWED
    if version and (not isinstance(version, str) or not _VERSION.match(version)):
        return "version", version, VERSION_ALLOWED
    return None


def check_chart_source(name, chart, repository, version, where="recipe"):
    """AicrError naming the field, the component ``name`` and what is allowed when :func:`chart_source_problem` finds one."""
    problem = chart_source_problem(chart, repository, version)
    if problem:
        field, value, allowed = problem
        shown = repr(value)[:120] if field != "repository" else repr(_redacted(value))[:160]
        raise AicrError("%s: component %s: %s %s is not allowed; allowed: %s" % (where, name, field, shown, allowed) if name else
                        "%s: %s %s is not allowed; allowed: %s" % (where, field, shown, allowed), field=field, component=name)


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")


def _redacted(url):
    return _USERINFO.sub(r"\1***@", str(url))


def chart_reference(chart, repository):
    """What helm installs: ``<repository>/<chart>`` for an OCI repository, else the chart name (``""`` without a chart)."""
    if not chart:
        return ""
    if is_oci(repository):
        return repository.rstrip("/") + "/" + chart
    return chart


def release_digest(chart, repository, version, values):
    """A stable digest of what defines a release; label-safe (48 hex chars)."""
    canonical = json.dumps({"chart": chart, "repository": repository or "", "version": str(version or ""), "values": values or {}},
                           sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:48]


def override_problems(overrides, names, allowed=OVERRIDE_KEYS):
    """What is wrong with ``component_overrides`` for a recipe of components ``names``, in order.

    A list of ``(kind, name, key, value)``: ``not-a-mapping`` (the whole option), ``unknown-component``,
    ``entry-not-a-mapping``, ``unknown-key``, ``not-a-string`` (chart, repository, version, namespace: a non-empty
    string or number), ``values-not-a-mapping``, ``enabled-not-a-boolean``. Each module words them as it documents.
    """
    if not isinstance(overrides, dict):
        return [("not-a-mapping", None, None, overrides)]
    problems = []
    known = set(names)
    for name, spec in overrides.items():
        if name not in known:
            problems.append(("unknown-component", name, None, None))
            continue
        if not isinstance(spec, dict):
            problems.append(("entry-not-a-mapping", name, None, spec))
            continue
        for key in spec:
            if key not in allowed:
                problems.append(("unknown-key", name, key, spec[key]))
        for key in _STRING_OVERRIDES:
            value = spec.get(key)
            if key in allowed and value is not None and (not isinstance(value, (str, int, float)) or isinstance(value, bool) or str(value) == ""):
                problems.append(("not-a-string", name, key, value))
        if spec.get("values") is not None and not isinstance(spec["values"], dict):
            problems.append(("values-not-a-mapping", name, "values", spec["values"]))
        if spec.get("enabled") is not None and not isinstance(spec["enabled"], bool):
            problems.append(("enabled-not-a-boolean", name, "enabled", spec["enabled"]))
    return problems


_SCALAR_KEYS = ("type", "chart", "repository", "version", "namespace")
_LIST_KEYS = ("dependencies", "external_dependencies", "values_files", "pre_manifest_files", "pre_manifest_paths", "manifest_files",
              "manifest_paths")
_BOOLEAN_KEYS = ("manifest_only", "enabled", "cleanup")


def dict_problems(raw):
    """What :meth:`Component.from_dict` cannot read in a component dict (recipe_resolve's ``components[]`` or one written
    by hand), in order: ``(key, value, allowed)`` per key of the wrong type (``[]`` when it can read it all). The value
    of ``values`` is never shown (it may hold secrets): callers name its type."""
    problems = []
    if raw.get("values") is not None and not isinstance(raw["values"], dict):
        problems.append(("values", raw["values"], "a mapping of Helm values"))
    for key in _SCALAR_KEYS:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            problems.append((key, value, "a string"))
    for key in _LIST_KEYS:
        value = raw.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(item, str) and item for item in value)):
            problems.append((key, value, "a list of non-empty strings"))
    for key in _BOOLEAN_KEYS:
        value = raw.get(key)
        if value is not None and not isinstance(value, bool):
            problems.append((key, value, "a boolean"))
    return problems


def _file_list(value, field, name, base_dir):
    """Manifest files as absolute paths: strings, relative ones joined to ``base_dir``."""
    paths = []
    for path in value or []:
        if not path or not isinstance(path, str):
            raise AicrError("components: %s of %s has an entry %r that is not a file path" % (field, name, path), component=name, field=field)
        if not os.path.isabs(path):
            if not base_dir:
                raise AicrError("components: %s of %s lists the relative path %s; give absolute paths or the catalog option" % (field, name, path),
                                component=name, field=field)
            path = os.path.join(base_dir, path)
        paths.append(path)
    return paths


class Component(object):
    """One component of a recipe: what to deploy, where, and what it waits for."""

    __slots__ = ("name", "type", "chart", "repository", "version", "namespace", "values", "values_files", "dependencies",
                 "external_dependencies", "pre_manifest_files", "pre_manifest_paths", "manifest_files", "manifest_paths",
                 "manifest_only", "cleanup", "order", "gate")

    def __init__(self, name, type="Helm", chart="", repository="", version="", namespace="", values=None,  # pylint: disable=redefined-builtin
                 values_files=None, dependencies=None, external_dependencies=None, pre_manifest_files=None, pre_manifest_paths=None,
                 manifest_files=None, manifest_paths=None, cleanup=False, order=None, manifest_only=None):
        self.name = name
        self.type = type
        self.chart = chart or ""
        self.repository = repository or ""
        self.version = str(version) if version not in (None, "") else ""
        self.namespace = namespace or ""
        self.values = values if values is not None else {}
        self.values_files = list(values_files or [])
        self.dependencies = list(dependencies or [])
        self.external_dependencies = list(external_dependencies or [])
        self.pre_manifest_files = list(pre_manifest_files or [])
        self.pre_manifest_paths = list(pre_manifest_paths or [])
        self.manifest_files = list(manifest_files or [])
        self.manifest_paths = list(manifest_paths or [])
        # the one rule: no chart, no release (a component known only from an inventory says so itself)
        self.manifest_only = (not self.chart) if manifest_only is None else bool(manifest_only)
        self.cleanup = bool(cleanup)
        self.order = order
        self.gate = []  # the managed dependencies a rollout waits for (set by the rollout plan)

    @property
    def chart_ref(self):
        return chart_reference(self.chart, self.repository)

    @property
    def oci(self):
        return is_oci(self.repository)

    @property
    def kind(self):
        """``release`` (a helm chart) or ``objects`` (manifest files only)."""
        return "objects" if self.manifest_only else "release"

    def digest(self):
        return release_digest(self.chart, self.repository, self.version, self.values)

    def to_dict(self):
        """The component as recipe_resolve returns it (and gated_release, the renderer and the status read it)."""
        out = {
            "name": self.name, "type": self.type, "chart": self.chart, "chart_ref": self.chart_ref, "repository": self.repository,
            "oci": self.oci, "version": self.version, "namespace": self.namespace, "values": self.values,
            "values_files": list(self.values_files), "dependencies": list(self.dependencies),
            "external_dependencies": list(self.external_dependencies), "pre_manifest_files": list(self.pre_manifest_files),
            "pre_manifest_paths": list(self.pre_manifest_paths), "manifest_files": list(self.manifest_files),
            "manifest_paths": list(self.manifest_paths), "manifest_only": self.manifest_only, "enabled": True, "cleanup": self.cleanup,
        }
        if self.order is not None:
            out["order"] = self.order
        return out

    @classmethod
    def from_dict(cls, raw, base_dir=None):
        """A component of recipe_resolve's ``components`` (or one written the same way by hand).

        Manifest files are ``pre_manifest_paths``/``manifest_paths`` (absolute), else the catalog-relative
        ``pre_manifest_files``/``manifest_files`` joined to ``base_dir``. ``manifest_only: true`` means no chart.
        """
        name = raw["name"]
        pre = _file_list(raw["pre_manifest_paths"] if "pre_manifest_paths" in raw else raw.get("pre_manifest_files"), "pre_manifest_files", name,
                         base_dir)
        post = _file_list(raw["manifest_paths"] if "manifest_paths" in raw else raw.get("manifest_files"), "manifest_files", name, base_dir)
        return cls(name, type=raw.get("type") or "Helm", chart="" if raw.get("manifest_only") else raw.get("chart"),
                   repository=raw.get("repository"), version=raw.get("version"), namespace=raw.get("namespace") or "default",
                   values=deep_copy(raw.get("values") or {}), values_files=raw.get("values_files"), dependencies=raw.get("dependencies"),
                   external_dependencies=raw.get("external_dependencies"), pre_manifest_files=raw.get("pre_manifest_files"),
                   pre_manifest_paths=pre, manifest_files=raw.get("manifest_files"), manifest_paths=post, cleanup=raw.get("cleanup"),
                   order=raw.get("order"))

    @classmethod
    def leftover(cls, name, entry):
        """A component a stack deployed earlier, known only from its inventory entry or release labels (to remove it)."""
        return cls(name, namespace=entry.get("namespace") or "default", dependencies=entry.get("dependencies"),
                   manifest_only=not entry.get("release"))

    def overridden(self, override):
        """This component with a ``component_overrides`` entry applied (chart, repository, version, namespace; values merged,
        null deletes): a copy, or the component itself when the entry changes nothing."""
        if not override:
            return self
        copy = Component.from_dict(self.to_dict())
        copy.gate = list(self.gate)
        for key in _STRING_OVERRIDES:
            if override.get(key) is not None:
                setattr(copy, key, str(override[key]))
        if "chart" in override:
            copy.manifest_only = not copy.chart
        if override.get("values") is not None:
            copy.values = merge_null_deletes(self.values, override["values"])
        return copy
