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
from ansible_collections.aicr.runtime.plugins.module_utils._kube.crd import KIND
from ansible_collections.aicr.runtime.plugins.module_utils._schema import publish

MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")  # what helm reads of crds/


def _crd_member(parts):
    """Whether ``parts`` (a path inside a chart, without the chart's directory) is a file of ``crds/`` helm reads."""
    return len(parts) >= 2 and parts[0] == "crds" and parts[-1].lower().endswith(MANIFEST_EXTENSIONS)


def _archive_crd_files(fileobj, source, depth=0):
    """``{path: bytes}`` of the crds/ files of a chart archive and of its subcharts (unpacked or archived)."""
    found = {}
    subcharts = {}

    def wanted(name):
        parts = name.split("/")[1:]
        while len(parts) > 2 and parts[0] == "charts" and not parts[1].endswith(".tgz"):
            parts = parts[2:]  # an unpacked subchart: charts/<sub>/...
        if _crd_member(parts):
            return True
        return depth < 3 and len(parts) == 2 and parts[0] == "charts" and parts[1].endswith(".tgz")

    for name, data in sorted(bounded.read_tar(fileobj, source, wanted).items()):
        if name.endswith(".tgz"):
            subcharts[name] = data
        else:
            found[name] = data
    for name, data in subcharts.items():
        found.update(_archive_crd_files(io.BytesIO(data), "%s: %s" % (source, name), depth + 1))
    return found


def _dir_crd_files(root):
    """``{path: bytes}`` of the crds/ files of a chart directory and of its subcharts (unpacked or archived)."""
    found = {}
    for base, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(base, root)
        parts = [] if rel == "." else rel.split(os.sep)
        while len(parts) >= 2 and parts[0] == "charts":
            parts = parts[2:]  # an unpacked subchart: charts/<sub>/...
        for fname in sorted(files):
            full = os.path.join(base, fname)
            if _crd_member(parts + [fname]):
                with open(full, "rb") as handle:
                    found[full] = bounded.read_bounded(handle, "chart %s: %s" % (root, fname))
            elif parts == ["charts"] and fname.endswith(".tgz"):
                with open(full, "rb") as handle:
                    found.update(_archive_crd_files(handle, full, 1))
    return found


def chart_crds(path):
    """``[(file, crd)]`` of a local chart (directory or archive): every CRD of its ``crds/`` and its subcharts' ``crds/``,
    checked as crd_publish checks a definition; a crds/ document of another kind is refused (helm would create it, but
    ``--skip-crds`` skips it)."""
    try:
        files = _dir_crd_files(path) if os.path.isdir(path) else _archive_crd_files(path, "chart archive %s" % path)
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
