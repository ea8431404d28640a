# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Render a component's manifest files with the real helm template engine.

A throwaway chart is generated whose templates are the manifest files
(``templates/pre/NNN-<file>`` and ``templates/post/NNN-<file>``), named and versioned
like the component's chart (``.Chart.Name``, ``.Chart.Version`` without a leading
``v``), with ``.Values`` = ``{<component>: values}`` and the release named after the
component in its namespace (``.Release.Namespace``, ``.Release.Service`` = Helm).
``helm template --output-dir`` writes one file per template, so each document is
attributed to its wave and file; documents are split with PyYAML and empty ones dropped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import shutil
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps, jsoncache
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

_SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def chart_version(version):
    """The chart version helm accepts: leading ``v`` removed; non-semver -> ``0.0.0-<slug>``."""
    text = str(version or "").strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    if _SEMVER.match(text):
        return text
    if re.match(r"^\d+\.\d+$", text):
        return text + ".0"
    cleaned = re.sub(r"[^0-9A-Za-z.-]+", "-", text).strip("-.") or "0"
    return "0.0.0-" + cleaned


def _chart_name(name):
    cleaned = re.sub(r"[^a-z0-9-]+", "-", str(name or "manifests").lower()).strip("-")
    return cleaned or "manifests"


def render_key(component, waves, helm_id=""):
    """Digest of everything a rendering depends on: file contents, values, name, namespace, chart, version, helm."""
    digest = hashlib.sha256()
    meta = {"name": component["name"], "namespace": component["namespace"], "chart": component.get("chart") or "",
            "version": str(component.get("version") or ""), "values": component.get("values") or {}, "helm": helm_id}
    digest.update(json.dumps(meta, sort_keys=True, default=str).encode("utf-8"))
    for wave in sorted(waves):
        for path in waves[wave]:
            digest.update(("\0%s\0%s\0" % (wave, path)).encode("utf-8"))
            try:
                with open(path, "rb") as handle:
                    digest.update(handle.read())
            except (IOError, OSError):
                digest.update(b"<missing>")
    return digest.hexdigest()


def render_manifests_cached(helm, component, waves, tmp_root=None, cache_dir=None):
    """:func:`render_manifests` with an on-disk cache keyed by :func:`render_key` (``cache_dir`` None = no cache).

    A re-run with unchanged manifests and values then runs no ``helm template`` at all.
    """
    if not cache_dir or not any(waves.values()):
        return render_manifests(helm, component, waves, tmp_root=tmp_root)
    key = render_key(component, waves, helm_id=str(getattr(helm, "binary", "")))
    path = os.path.join(cache_dir, "render", key[:2], key + ".json")
    cached = jsoncache.load(path)
    if isinstance(cached, dict) and set(cached) == set(waves):
        return cached
    result = render_manifests(helm, component, waves, tmp_root=tmp_root)
    jsoncache.store(path, result)
    return result


def render_manifests(helm, component, waves, tmp_root=None):
    """Render ``waves`` = {"pre": [paths], "post": [paths]}; return {"pre": [docs], "post": [docs]}.

    ``component`` needs ``name``, ``namespace``, ``chart`` (may be empty), ``version``, ``values``.
    """
    result = dict((wave, []) for wave in waves)
    if not any(waves.values()):
        return result
    workdir = tempfile.mkdtemp(prefix="aicr-render-", dir=tmp_root)
    try:
        name = component["name"]
        chart_dir = os.path.join(workdir, "chart")
        files = {}
        for wave, paths in waves.items():
            target = os.path.join(chart_dir, "templates", wave)
            os.makedirs(target)
            for index, path in enumerate(paths):
                if not os.path.isfile(path):
                    raise AicrError("manifest_files: %s of component %s does not exist" % (path, name), component=name, file=path)
                base = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(path))
                if not base.endswith((".yaml", ".yml", ".json")):
                    base += ".yaml"
                rel = "%03d-%s" % (index, base)
                shutil.copyfile(path, os.path.join(target, rel))
                files[(wave, rel)] = path
        with open(os.path.join(chart_dir, "Chart.yaml"), "w") as handle:
            deps.yaml.safe_dump({"apiVersion": "v2", "name": _chart_name(component.get("chart") or name),
                                 "version": chart_version(component.get("version")), "type": "application"}, handle)
        values_file = os.path.join(workdir, "values.json")
        with open(values_file, "w") as handle:
            json.dump({name: component.get("values") or {}}, handle)
        out_dir = os.path.join(workdir, "out")
        helm.template(name, chart_dir, component["namespace"], values_file, out_dir)
        rendered_root = None
        for entry in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
            rendered_root = os.path.join(out_dir, entry, "templates")
        for wave, paths in waves.items():
            for index, path in enumerate(paths):
                base = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(path))
                if not base.endswith((".yaml", ".yml", ".json")):
                    base += ".yaml"
                rendered = os.path.join(rendered_root or "", wave, "%03d-%s" % (index, base))
                if not rendered_root or not os.path.isfile(rendered):
                    continue  # the template rendered to nothing
                with open(rendered, "rb") as handle:
                    text = bounded.read_bounded(handle, "manifest_files: %s of component %s" % (path, name)).decode("utf-8")
                try:
                    docs = [d for d in deps.load_all(text, "manifest_files: %s of component %s" % (path, name)) if d]
                except deps.yaml.YAMLError as exc:
                    raise AicrError("manifest_files: %s of component %s renders to invalid YAML: %s" % (path, name, str(exc).splitlines()[0]),
                                    component=name, file=path)
                for doc in docs:
                    if not isinstance(doc, dict):
                        raise AicrError("manifest_files: %s of component %s renders a document that is not a mapping" % (path, name), component=name, file=path)
                    result[wave].append(doc)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
