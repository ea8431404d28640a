# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A chart's own CRDs (``crds/``) created and upgraded by the engine (``chart_crds: managed``), not by helm.

Helm installs a chart's ``crds/`` once and never upgrades them. With ``chart_crds: managed``:

1. before the first change (with the values check, ``valuescheck``; in check mode too), the chart of every release that
   will be installed or upgraded is brought to local disk and the CRDs of its ``crds/`` (and of the ``crds/`` of the
   subcharts helm installs with the component's values - unpacked or as archives; one disabled by its ``condition`` or
   ``tags`` is left out, as helm leaves it out) are read. Each is compared with the live CRD by the
   breaking-change rules of crd_publish (``_schema.compat``); a breaking change is refused unless
   ``allow_breaking_crd_changes`` names the CRD or the component, and a CRD of another stack (its ``aicr.io/stack``
   label), of another field manager than helm and this collection, or one this stack's release did not install, is
   refused unless ``adopt``. A refusal refuses the rollout before anything is changed, naming the CRD and the field;
2. at the component's gate, before its pre-manifest objects and its ``helm upgrade``, each CRD is applied by
   crd_publish's own path (``_schema.publish.publish_definition``: server-side apply with the field manager
   ``aicr-runtime``, forced - the checks above decided who may own it -, waited for until Established), labelled with
   the stack and the component;
3. helm installs the release from the pulled chart with ``--skip-crds``.

CRDs are never deleted (a CRD's deletion deletes every custom resource of its kind), as helm never deletes them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    COMPONENT_LABEL, FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL, STACK_LABEL, label_value,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.crd import read_live
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat, publish
from ansible_collections.aicr.runtime.plugins.module_utils._schema.chartcrds import chart_crds

CHART_CRDS = ("helm", "managed")
HELM_MANAGER = "helm"  # the field manager of helm's own crds/ install (helm 3 create, helm 4 apply)


def spec_managers(live):
    """The field managers of a live CRD, status updates left out (the API server's own)."""
    entries = ((live or {}).get("metadata") or {}).get("managedFields") or []
    return sorted(set(e.get("manager") for e in entries if isinstance(e, dict) and e.get("manager") and e.get("subresource") != "status"))


def crd_owner(live, stack, installed_by_stack):
    """Who else owns the live CRD (a phrase), or None when this stack may change it: one labelled for this stack, or one
    only helm and this collection wrote that this stack's release installed (``installed_by_stack``)."""
    if live is None:
        return None
    labels = (live.get("metadata") or {}).get("labels") or {}
    owner = labels.get(STACK_LABEL)
    if owner:
        return None if owner == label_value(stack) else "stack %s" % owner
    others = [m for m in spec_managers(live) if m not in (HELM_MANAGER, FIELD_MANAGER)]
    if others:
        return "field managers %s" % ", ".join(others)
    if not installed_by_stack:
        return "no stack (field managers %s; not installed by a release of stack %s)" % (", ".join(spec_managers(live)) or "none", stack)
    return None


def allowed_breaking(allow, component, name):
    """Whether ``allow_breaking_crd_changes`` names the CRD ``name`` or the component."""
    return name in allow or component in allow


class ChartCrdManager(object):
    """The charts' CRDs of one run (``ctx``: a ``context.RunContext``): checked up front, applied at the gate, reported."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._crd_plans = {}  # component -> [crd] checked up front (or at its gate)
        self.chart_crd_report = []  # [{component, name, action, breaking, summary}] for the result
        self._crd_diffs = []  # the CRDs' before/after for --diff

    def managing(self):
        return self.ctx.opts.chart_crds == "managed" and self.ctx.opts.state == "present"

    def plan(self, st, archive):
        """Every CRD of the component's chart checked against the live one (ownership, breaking changes); the CRDs to
        apply, labelled. Raises AicrError naming the CRD (and the field of a breaking change)."""
        comp = st.comp
        installed_here = st.deployed is not None and not st.release_foreign
        planned = []
        for fname, crd in chart_crds(archive, comp.values):
            name = crd["metadata"]["name"]
            live = read_live(self.ctx.cluster, name)
            owner = crd_owner(live, self.ctx.opts.stack, installed_here)
            if owner is not None and not self.ctx.opts.adopt:
                raise AicrError("component %s: chart CRD %s (%s) belongs to %s, not stack %s: it is not changed (set adopt: true to take it over)"
                                % (comp.name, name, os.path.basename(fname), owner, self.ctx.opts.stack),
                                component=comp.name, field="chart_crds", crd=name, owner=owner)
            findings = compat.compare(live, crd) if live is not None else []
            if any(f["severity"] == "error" for f in findings) and not allowed_breaking(self.ctx.opts.allow_breaking_crd_changes, comp.name, name):
                raise AicrError("component %s: %s" % (comp.name, publish.refusal_message(
                    name, findings, field="allow_breaking_crd_changes",
                    allowed="compatible changes only, or %s or %s listed in allow_breaking_crd_changes" % (name, comp.name))),
                    component=comp.name, field="allow_breaking_crd_changes", crd=name, findings=findings)
            labels = crd["metadata"].setdefault("labels", {}) if isinstance(crd["metadata"].get("labels", {}), dict) else {}
            crd["metadata"]["labels"] = labels
            labels.update({STACK_LABEL: label_value(self.ctx.opts.stack), COMPONENT_LABEL: label_value(comp.name)})
            labels.setdefault(MANAGED_BY_LABEL, MANAGED_BY)
            planned.append(crd)
        self._crd_plans[comp.name] = planned
        if self.ctx.opts.check_mode:
            for crd in planned:
                self.publish(comp, crd, deadline=None)
        return planned

    def publish(self, comp, crd, deadline):
        name = crd["metadata"]["name"]
        wait_timeout = max(1, deadline - self.ctx.clock()) if deadline is not None else 1
        params = {"allow_breaking": allowed_breaking(self.ctx.opts.allow_breaking_crd_changes, comp.name, name), "force_conflicts": True,
                  "wait": not self.ctx.opts.check_mode, "wait_timeout": wait_timeout, "wait_sleep": self.ctx.opts.poll_interval}
        if not self.ctx.opts.check_mode and self.ctx.lease is not None:
            self.ctx.lease.check()  # a CRD is changed only while this run holds the stack
        done = publish.publish_definition(self.ctx.cluster, crd, params, check_mode=self.ctx.opts.check_mode, sleep=self.ctx.sleep, clock=self.ctx.clock)
        entry = {"component": comp.name, "name": name, "action": done["action"], "breaking": done["breaking"], "summary": done["summary"]}
        self.chart_crd_report.append(entry)
        if done["action"] != "unchanged":
            self._crd_diffs.append({"before_header": "CRD %s (live)" % name if done["old_found"] else "CRD %s (not installed)" % name,
                                    "after_header": "CRD %s (chart of %s: %s)" % (name, comp.name, done["action"]),
                                    "before": _yaml(comp_spec(done["diff"]["before"])), "after": _yaml(comp_spec(done["diff"]["after"]))})
            if not self.ctx.opts.check_mode:
                self.ctx.action("%s CRD %s of the chart of %s by server-side apply%s" % (
                    done["action"], name, comp.name, " (breaking change allowed)" if done["breaking"] else ""))
        return done

    def apply(self, st, archive, deadline):
        """At the component's gate, before anything of it is changed: its chart's CRDs applied (checked again if the
        up-front check did not see this component change)."""
        planned = self._crd_plans.get(st.comp.name)
        if planned is None:
            planned = self.plan(st, archive)
        for crd in planned:
            self.publish(st.comp, crd, deadline)
            st.chart_crds.append(crd["metadata"]["name"])  # recorded in the inventory (``inventory.recorded_crds``)
            st.changed = True

    def into(self, result):
        """The chart CRDs in the result: ``chart_crds`` entries, check mode's planned actions, the diff."""
        if not self.managing():
            return result
        result["chart_crds"] = list(self.chart_crd_report)
        if self.ctx.opts.check_mode:
            result["actions"] = ["would %s CRD %s of the chart of %s" % (e["action"], e["name"], e["component"])
                                 for e in self.chart_crd_report if e["action"] != "unchanged"] + list(result.get("actions") or [])
            if any(e["action"] != "unchanged" for e in self.chart_crd_report):
                result["changed"] = True
        if self.ctx.opts.diff and self._crd_diffs:
            result["diff"] = list(self._crd_diffs) + list(result.get("diff") or [])
        return result


def comp_spec(obj):
    """What a CRD's diff shows: its labels and spec (the schema change), not server-set metadata."""
    if not obj:
        return None
    return {"metadata": {"name": (obj.get("metadata") or {}).get("name"), "labels": (obj.get("metadata") or {}).get("labels") or {}},
            "spec": obj.get("spec")}


def _yaml(obj):
    return deps.yaml.safe_dump(obj, default_flow_style=False, sort_keys=True) if obj is not None else ""


__all__ = ["CHART_CRDS", "ChartCrdManager", "allowed_breaking", "chart_crds", "crd_owner"]
