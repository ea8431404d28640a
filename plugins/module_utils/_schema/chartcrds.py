# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The CRDs of a chart on local disk (directory or archive): its ``crds/`` and its subcharts' ``crds/``, as helm reads them.

Shared by gated_release's ``chart_crds: managed`` (``_release.chartcrds``) and the upgrade plans (``_stack.upgrade``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import tarfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import dotted, merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._kube.crd import KIND
from ansible_collections.aicr.runtime.plugins.module_utils._schema import publish

MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")  # what helm reads of crds/


def _crd_member(parts):
    """Whether ``parts`` (a path inside a chart, without the chart's directory) is a file of ``crds/`` helm reads."""
    return len(parts) >= 2 and parts[0] == "crds" and parts[-1].lower().endswith(MANIFEST_EXTENSIONS)


def _wanted(parts):
    """What is read of a chart (``parts`` relative to its directory): its crds/ files, Chart.yaml and values.yaml (which
    subcharts are enabled), its subcharts' archives - at every level of unpacked subcharts."""
    while len(parts) > 2 and parts[0] == "charts" and not parts[1].endswith(".tgz"):
        parts = parts[2:]  # an unpacked subchart: charts/<sub>/...
    return _crd_member(parts) or parts in (["Chart.yaml"], ["values.yaml"]) or (len(parts) == 2 and parts[0] == "charts" and parts[1].endswith(".tgz"))


def _archive_files(fileobj, source):
    """``{(parts relative to the chart's directory): bytes}`` of what ``_wanted`` reads of a chart archive."""
    files = bounded.read_tar(fileobj, source, lambda name: _wanted(name.split("/")[1:]))
    return dict((tuple(name.split("/")[1:]), data) for name, data in files.items())


def _dir_files(root):
    """``{(parts relative to root): bytes}`` of what ``_wanted`` reads of a chart directory."""
    found = {}
    for base, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(base, root)
        parts = [] if rel == "." else rel.split(os.sep)
        for fname in sorted(files):
            if _wanted(parts + [fname]):
                with open(os.path.join(base, fname), "rb") as handle:
                    found[tuple(parts + [fname])] = bounded.read_bounded(handle, "chart %s: %s" % (root, fname))
    return found


def _load(data, source):
    doc = deps.load(data.decode("utf-8", "replace"), source) if data is not None else None
    return doc if isinstance(doc, dict) else {}


class _Chart(object):
    """What ``chart_crds`` needs of one chart of the tree: its name, dependencies, default values, crds/ files, subcharts."""

    def __init__(self, files, source, fallback_name, prefix="", depth=0):
        meta = _load(files.get(("Chart.yaml",)), "%s: %sChart.yaml" % (source, prefix))
        self.name = str(meta.get("name") or fallback_name)
        self.dependencies = [d for d in meta.get("dependencies") or [] if isinstance(d, dict) and d.get("name")]
        self.values = _load(files.get(("values.yaml",)), "%s: %svalues.yaml" % (source, prefix))
        self.crds = dict((prefix + "/".join(parts), data) for parts, data in files.items() if _crd_member(list(parts)))
        self.subcharts = []
        unpacked = sorted(set(parts[1] for parts in files if len(parts) > 2 and parts[0] == "charts" and not parts[1].endswith(".tgz")))
        for sub in unpacked:
            inner = dict((parts[2:], data) for parts, data in files.items() if len(parts) > 2 and parts[:2] == ("charts", sub))
            self.subcharts.append(_Chart(inner, source, sub, "%scharts/%s/" % (prefix, sub), depth))
        for parts in sorted(p for p in files if len(p) == 2 and p[0] == "charts" and p[1].endswith(".tgz")):
            if depth < 3:
                where = "%scharts/%s/" % (prefix, parts[1])
                inner = _archive_files(io.BytesIO(files[parts]), "%s: %s" % (source, where.rstrip("/")))
                self.subcharts.append(_Chart(inner, source, parts[1][:-len(".tgz")], where, depth + 1))

    def enabled_subcharts(self, cvals, path, tags):
        """``[(name in the values, chart)]`` of the subcharts helm installs with the coalesced values ``cvals`` (of the top
        chart; this chart's at ``path``): helm's rules - a listed dependency is enabled unless its ``tags`` are all false
        in the top values' ``tags`` (one true tag enables it), and the first of its ``condition`` paths holding a boolean
        decides over the tags; a subchart that Chart.yaml does not list is always installed."""
        listed = dict((d["name"], d) for d in self.dependencies)
        out = []
        for sub in self.subcharts:
            if sub.name not in listed:
                out.append((sub.name, sub))
        for dep in self.dependencies:
            sub = [c for c in self.subcharts if c.name == dep["name"]]
            if not sub:
                continue
            as_name = str(dep.get("alias") or dep["name"])
            if _dependency_enabled(dep, cvals, path, tags):
                out.append((as_name, sub[0]))
        return out


def _dependency_enabled(dep, cvals, path, tags):
    """helm's processDependencyTags and processDependencyConditions for one dependency."""
    said = [tags.get(t) for t in dep.get("tags") or [] if isinstance(tags.get(t), bool)]
    enabled = True in said or False not in said
    for condition in str(dep.get("condition") or "").split(","):
        value = dotted(cvals, path + condition.strip()) if condition.strip() else None
        if isinstance(value, bool):
            return value
    return enabled


def _coalesce(chart, values):
    """helm's CoalesceValues: the user's ``values`` over the chart's defaults, each subchart's defaults under its name."""
    merged = merge_null_deletes(chart.values, values if isinstance(values, dict) else {})
    names = dict((d["name"], str(d.get("alias") or d["name"])) for d in chart.dependencies)
    for sub in chart.subcharts:
        key = names.get(sub.name, sub.name)
        own = merged.get(key)
        merged[key] = _coalesce(sub, own if isinstance(own, dict) else {})
    return merged


def _installed_crd_files(chart, values):
    """``{file: bytes}`` of the crds/ of the chart and of the subcharts helm installs with ``values`` (None: all)."""
    found = dict(chart.crds)
    if values is None:
        for sub in chart.subcharts:
            found.update(_installed_crd_files(sub, None))
        return found
    cvals = _coalesce(chart, values)
    tags = cvals.get("tags") if isinstance(cvals.get("tags"), dict) else {}

    def walk(node, path):
        for as_name, sub in node.enabled_subcharts(cvals, path, tags):
            found.update(sub.crds)
            walk(sub, path + as_name + ".")

    walk(chart, "")
    return found


def chart_crds(path, values=None):
    """``[(file, crd)]`` of a local chart (directory or archive): every CRD of its ``crds/`` and of the ``crds/`` of the
    subcharts helm installs with the user's ``values`` (a subchart disabled by its ``condition`` or ``tags`` is not; None:
    every subchart), checked as crd_publish checks a definition; a crds/ document of another kind is refused (helm would
    create it, but ``--skip-crds`` skips it)."""
    try:
        if os.path.isdir(path):
            chart = _Chart(_dir_files(path), "chart %s" % path, os.path.basename(os.path.normpath(path)))
        else:
            chart = _Chart(_archive_files(path, "chart archive %s" % path), "chart archive %s" % path, os.path.basename(path))
        files = _installed_crd_files(chart, values)
    except (tarfile.TarError, OSError) as exc:
        raise AicrError("chart_crds: cannot read the chart %s (%s)" % (path, exc), field="chart_crds")
    crds = []
    for fname, data in sorted(files.items()):
        for doc in deps.load_all(data.decode("utf-8", "replace"), "chart %s" % fname):
            if not doc:
                continue
            if not isinstance(doc, dict) or doc.get("kind") != KIND:
                raise AicrError("chart_crds: %s of the chart holds a %s; allowed with chart_crds: managed: CustomResourceDefinitions only"
                                % (fname, doc.get("kind") if isinstance(doc, dict) else type(doc).__name__), field="chart_crds", file=fname)
            crds.append((fname, publish.check_definition(doc)))
    return crds


__all__ = ["MANIFEST_EXTENSIONS", "chart_crds"]
