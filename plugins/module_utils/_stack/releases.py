# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Catalog releases: how a catalog source advertises versions, and which one a stack should use.

``spec.catalog.source`` is one of:

* a **release directory**: it holds versioned catalog archives named ``<anything>-<version>.tar.gz``
  (or ``.tgz``), e.g. ``aicr-catalog-1.2.0.tar.gz``, with ``<version>`` as ``MAJOR.MINOR.PATCH``
  (optional leading ``v``, optional ``-prerelease``); or it holds an ``index.yaml``/``index.json``
  ``{releases: [{version, path, digest}]}`` (``path`` relative to the directory), which then wins;
* anything else (a ``recipes/`` directory, one archive): not versioned - ``CatalogCurrent`` is Unknown.

Selection: ``spec.catalog.version`` pins a release. Otherwise the release already resolved
(``status.recipe.catalogVersion``) is kept, unless autoUpdate applies, in which case the newest
release is used; a stack that never resolved starts at the newest release.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
_ARCHIVE = re.compile(r"^(?P<stem>.+?)-v?(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\.(?:tar\.gz|tgz)$")
INDEX_FILES = ("index.yaml", "index.yml", "index.json")


def version_key(version):
    """Sort key for MAJOR.MINOR.PATCH[-pre] (a pre-release sorts before its release)."""
    text = str(version).lstrip("v")
    core, _sep, pre = text.partition("-")
    try:
        nums = tuple(int(p) for p in core.split("."))
    except ValueError:
        raise AicrError("catalog version: %r is not allowed; allowed: MAJOR.MINOR.PATCH[-prerelease]" % version, field="version")
    return nums + ((1, "") if not pre else (0, pre))


def _read_index(path):
    with open(path, "rb") as handle:
        text = bounded.read_bounded(handle, "catalog index %s" % path).decode("utf-8")
    if path.endswith(".json"):
        data = bounded.load_json(text, "catalog index %s" % path)
    else:
        if not deps.HAS_YAML:
            raise AicrError("catalog index %s: PyYAML is required to read it; allowed: index.json without PyYAML" % path, field="catalog.source")
        data = deps.load(text, "catalog index %s" % path)
    releases = (data or {}).get("releases") if isinstance(data, dict) else None
    if not isinstance(releases, list):
        raise AicrError("catalog index %s: releases is %r; allowed: a list of {version, path, digest}" % (path, type(releases).__name__),
                        field="catalog.source", path=path)
    return releases


def list_releases(source):
    """Releases advertised by ``source`` ([{version, path, digest}] newest last), or None when not versioned."""
    if not source or not os.path.isdir(source):
        return None
    for name in INDEX_FILES:
        index = os.path.join(source, name)
        if os.path.isfile(index):
            found = []
            for rel in _read_index(index):
                if not isinstance(rel, dict) or not rel.get("version") or not rel.get("path"):
                    raise AicrError("catalog index %s: entry %r is not allowed; allowed: {version, path, digest}" % (index, rel),
                                    field="catalog.source")
                version_key(rel["version"])
                found.append({"version": str(rel["version"]).lstrip("v"), "path": os.path.join(source, rel["path"]),
                              "digest": rel.get("digest") or ""})
            return sorted(found, key=lambda r: version_key(r["version"]))
    if os.path.isfile(os.path.join(source, "registry.yaml")) or os.path.isdir(os.path.join(source, "overlays")):
        return None  # a plain recipes/ directory
    found = []
    for name in os.listdir(source):
        match = _ARCHIVE.match(name)
        if match:
            found.append({"version": match.group("version"), "path": os.path.join(source, name), "digest": ""})
    if not found:
        return None
    return sorted(found, key=lambda r: version_key(r["version"]))


def select(catalog_spec, resolved_version=None, auto_update=False):
    """Which catalog to resolve from; a dict with path, version, digest, latest, versioned, current, upgrade, message."""
    catalog_spec = catalog_spec or {}
    source = catalog_spec.get("source") or ""
    if not source:
        raise AicrError("spec.catalog.source: empty; allowed: a release directory, a recipes/ directory or a catalog archive",
                        field="spec.catalog.source")
    releases = list_releases(source)
    pinned = str(catalog_spec.get("version") or "").lstrip("v")
    if releases is None:
        return {"path": source, "version": pinned, "digest": catalog_spec.get("digest") or "", "latest": "", "versioned": False,
                "current": None, "upgrade": False, "resolved_version": resolved_version or "",
                "message": "catalog source %s advertises no versions" % source}
    by_version = dict((r["version"], r) for r in releases)
    latest = releases[-1]
    resolved = str(resolved_version or "").lstrip("v")
    if pinned:
        if pinned not in by_version:
            raise AicrError("spec.catalog.version: %r is not allowed; allowed: %s" % (pinned, ", ".join(r["version"] for r in releases)),
                            field="spec.catalog.version", value=pinned)
        chosen = by_version[pinned]
    elif auto_update or not resolved or resolved not in by_version:
        chosen = latest
    else:
        chosen = by_version[resolved]
    current = version_key(chosen["version"]) >= version_key(latest["version"])
    if current:
        message = "catalog %s is the newest release in %s" % (chosen["version"], source)
    else:
        why = ", pinned by spec.catalog.version" if pinned else ", autoUpdate is off"
        message = "catalog %s is available (using %s%s)" % (latest["version"], chosen["version"], why)
    return {"path": chosen["path"], "version": chosen["version"], "digest": catalog_spec.get("digest") or chosen["digest"],
            "latest": latest["version"], "versioned": True, "current": current,
            "upgrade": bool(resolved) and chosen["version"] != resolved, "resolved_version": resolved, "message": message}
