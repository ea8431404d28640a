# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The charts' CRD changes of an upgrade plan (``judge_crds``): both chart versions of a component read, each CRD compared.

A component whose chart (name, repository or version) changes between the two catalogs has both chart versions brought to
local disk: a remote chart by ``helm pull`` (``repository_mirrors`` and ``repository_credentials`` applied, as
gated_release pulls) into a temporary directory removed afterwards; a local one (a repository or mirror that is a
directory) read where it is: ``<chart>-<version>.tgz``, ``<chart>-<version>/``, else ``<chart>`` itself (a directory whose
``Chart.yaml`` must have that version, or an archive). The CRDs of each (its ``crds/`` and its subcharts', read as
``chart_crds: managed`` reads them, ``_schema.chartcrds``) are compared by name with crd_publish's breaking-change rules
(``_schema.compat``). What each change means for the plan is :data:`CHANGES` (codes of ``upgrade.RULES``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source, normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat
from ansible_collections.aicr.runtime.plugins.module_utils._schema.chartcrds import chart_crds

SHOWN_FIELDS = 5  # added fields named in a note; the rest counted


def _added_fields(old, new):
    """``version:path`` of every schema node of ``new`` that ``old`` does not have (same version), and new versions."""
    old_versions = dict((v.get("name"), v) for v in (old.get("spec") or {}).get("versions") or [])
    added = []
    for version in (new.get("spec") or {}).get("versions") or []:
        name = version.get("name")
        if name not in old_versions:
            added.append("version %s" % name)
            continue
        before = compat.flatten(((old_versions[name].get("schema") or {}).get("openAPIV3Schema")) or {})
        after = compat.flatten(((version.get("schema") or {}).get("openAPIV3Schema")) or {})
        added.extend("%s:%s" % (name, path) for path in sorted(after) if path not in before)
    return added


def _shown(items):
    return ", ".join(items[:SHOWN_FIELDS]) + (" and %d more" % (len(items) - SHOWN_FIELDS) if len(items) > SHOWN_FIELDS else "")


def compare_crds(component, old_crds, new_crds):
    """``(changes, findings)``: ``changes`` [{name, change, breaking, warnings, added_fields}] for every CRD of either chart
    version, ``findings`` [(code, message)] (codes of ``upgrade.RULES``). ``old_crds``/``new_crds``: {name: crd}."""
    changes, findings = [], []
    for name in sorted(set(old_crds) | set(new_crds)):
        old, new = old_crds.get(name), new_crds.get(name)
        entry = {"name": name, "breaking": [], "warnings": [], "added_fields": []}
        if old is None:
            entry["change"] = "added"
            findings.append(("crd_added", "%s chart CRD %s added: it would be created" % (component, name)))
        elif new is None:
            entry["change"] = "removed"
            findings.append(("crd_removed", "%s chart CRD %s removed: helm keeps the CRD and its resources, and nothing upgrades it any more"
                             % (component, name)))
        else:
            result = compat.compare(old, new)
            entry["breaking"] = [dict((k, f[k]) for k in ("rule", "version", "path", "message")) for f in result if f["severity"] == "error"]
            entry["warnings"] = [dict((k, f[k]) for k in ("rule", "version", "path", "message")) for f in result if f["severity"] == "warn"]
            entry["added_fields"] = _added_fields(old, new)
            for f in entry["breaking"]:
                findings.append(("crd_breaking", "%s chart CRD %s: breaking change %s at %s (version %s): %s"
                                 % (component, name, f["rule"], f["path"], f["version"], f["message"])))
            for f in entry["warnings"]:
                findings.append(("crd_warning", "%s chart CRD %s: %s at %s (version %s): %s"
                                 % (component, name, f["rule"], f["path"], f["version"], f["message"])))
            if entry["added_fields"]:
                findings.append(("crd_fields_added", "%s chart CRD %s adds %s" % (component, name, _shown(entry["added_fields"]))))
            if old.get("spec") == new.get("spec"):
                entry["change"] = "unchanged"
            else:
                entry["change"] = "breaking" if entry["breaking"] else "changed"
                if not (entry["breaking"] or entry["warnings"] or entry["added_fields"]):
                    findings.append(("crd_changed", "%s chart CRD %s changed compatibly" % (component, name)))
        changes.append(entry)
    return changes, findings


class ChartCrdJudge(object):
    """Reads the CRDs of chart versions (each once per plan run); :meth:`close` removes what was pulled."""

    def __init__(self, helm_binary="helm", repository_mirrors=None, repository_credentials=None, helm=None):
        self.mirrors = normalize_mirrors(repository_mirrors)
        self.helm_binary = helm_binary or "helm"
        self.repository_credentials = repository_credentials
        self._helm = helm
        self._tmp = None
        self._crds = {}  # (chart_ref, repo, version) -> {name: crd} or the AicrError reading it raised

    def _runner(self):
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="aicr-plan-charts-")  # 0700
        if self._helm is None:
            self._helm = HelmRunner(self.helm_binary, home=os.path.join(self._tmp, "home"), repository_credentials=self.repository_credentials,
                                    credentials_dir=os.path.join(self._tmp, "auth"))
        return self._helm

    def close(self):
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @staticmethod
    def local_chart(path, version):
        """The local chart of ``version`` at ``path`` (see the module's docstring)."""
        for candidate in ("%s-%s.tgz" % (path, version), "%s-%s" % (path, version)):
            if version and os.path.exists(candidate):
                return candidate
        if os.path.isdir(path):
            meta_path = os.path.join(path, "Chart.yaml")
            meta = {}
            if os.path.isfile(meta_path):
                with open(meta_path) as handle:
                    meta = deps.load(handle.read(), meta_path) or {}
            found = str(meta.get("version") or "") if isinstance(meta, dict) else ""
            if version and found != str(version):
                raise AicrError("the local chart %s is version %s, not %s (and there is no %s-%s)" % (path, found or "(none)", version, path, version),
                                field="repository_mirrors", value=path)
            return path
        if os.path.isfile(path):
            return path
        raise AicrError("no local chart %s-%s, %s-%s.tgz or %s" % (path, version, path, version, path), field="repository_mirrors", value=path)

    def crds(self, chart, repository, version):
        """``{name: crd}`` of one chart version; raises AicrError saying why it cannot be read."""
        chart_ref, repo, flags, _where = chart_source(chart, repository, self.mirrors)
        key = (chart_ref, repo, version)
        if key not in self._crds:
            try:
                if repo is None and not chart_ref.startswith("oci://"):
                    path = self.local_chart(chart_ref, version)
                else:
                    helm = self._runner()
                    path = helm.pull(chart_ref, repo, version, os.path.join(self._tmp, "charts", str(len(self._crds))), extra_flags=flags,
                                     what="helm pull %s --version %s" % (chart_ref, version))
                self._crds[key] = dict((crd["metadata"]["name"], crd) for _file, crd in chart_crds(path))
            except AicrError as exc:
                self._crds[key] = exc
        if isinstance(self._crds[key], AicrError):
            raise self._crds[key]
        return self._crds[key]

    def judge(self, component, old, new, before, after):
        """``(crds, findings, not_judged)`` of one component present in both catalogs: ``old``/``new`` its views
        ({chart, repository}), ``before``/``after`` the chart versions. ``not_judged`` is None or why it was not."""
        if not old["chart"] or not new["chart"]:
            return {"judged": False, "reason": "not a Helm chart on both sides"}, [], None
        if (old["chart"], old["repository"], before) == (new["chart"], new["repository"], after):
            return {"judged": True, "changes": []}, [], None
        try:
            old_crds = self.crds(old["chart"], old["repository"], before)
            new_crds = self.crds(new["chart"], new["repository"], after)
        except AicrError as exc:
            reason = "chart CRDs of %s: not compared (%s)" % (component, exc.msg)
            return {"judged": False, "reason": exc.msg}, [], reason
        changes, findings = compare_crds(component, old_crds, new_crds)
        return {"judged": True, "changes": changes}, findings, None


__all__ = ["ChartCrdJudge", "compare_crds"]
