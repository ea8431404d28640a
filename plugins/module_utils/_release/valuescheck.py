# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Values checked against every chart before the first change (``validate_values``, on by default).

Once the survey knows which releases will be installed or upgraded, and before the Lease is taken or anything is
written, the chart of each is brought to local disk - a local chart as it is, a remote one pulled once per run (through
the mirrors and ``repository_credentials``, ``HelmRunner.pull``), every chart at the same time, up to ``concurrency`` -
and the chart's default values merged with the component's values are validated against the chart's own
``values.schema.json`` (``_common.validation``, the rule values_schema applies). A chart that cannot be pulled, a
schema that cannot be applied or a value that violates it refuses the whole rollout: nothing is installed, every
refused component says why, and check mode shows the same refusal (the plan is not clean). A rollout therefore either
starts with every chart's values valid or does not start; the schemas given in ``values_schemas`` were checked even
earlier, with the parameters (``_entry.gated_release_inputs``).

A release whose digest (chart, repository, version, values) is what is deployed is not checked again: it is not
installed. Charts without a ``values.schema.json`` are not checked here; a schema inferred from their ``values.yaml``
(values_schema's ``generate``) can be given in ``values_schemas``, or checked as a warning only by the cluster_runtime
role's ``cluster_runtime_validate_values`` (inferred schemas can be stricter than the chart).

The chart pulled here is the one installed: its archive is kept for the run, so the component's gate (and an early
start) install from it without pulling again. A component whose release turns out to change only when the survey is
repeated under the Lease (the cluster moved meanwhile) has its chart pulled and checked at its gate, failing that
component alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps, validation
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FAILED
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import chart_schema_and_defaults
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source


class ValuesChecker(object):
    """The charts of one run brought to local disk and their values checked (``ctx``: a ``context.RunContext``;
    ``crds``: the run's ``chartcrds.ChartCrdManager``, whose CRD check runs on the same pulled chart)."""

    def __init__(self, ctx, crds):
        self.ctx = ctx
        self.crds = crds
        self.chart_archives = {}  # (name, chart_ref, repo, version) -> the local chart
        self._chart_locks = KeyedLocks()
        self._values_valid = set()  # (name, digest, chart): values checked against that chart's schema

    def local_chart(self, comp, chart_ref, repo, flags):
        """The chart on local disk: a local chart as it is, a remote one pulled into the run's scratch directory (once per
        run: the up-front check, an early start and the gate share it)."""
        key = (comp.name, chart_ref, repo, comp.version)
        with self._chart_locks(comp.name):
            if key not in self.chart_archives:
                self.chart_archives[key] = self.ctx.helm.pull(chart_ref, repo, comp.version, os.path.join(self.ctx.workdir, "charts", comp.name),
                                                              extra_flags=flags)
            return self.chart_archives[key]

    def pull_and_validate(self, comp, chart_ref, repo, flags):
        """Pull the chart and check the values against its ``values.schema.json`` (if any); returns the archive path."""
        archive = self.local_chart(comp, chart_ref, repo, flags)
        self.validate_chart_values(comp, archive)
        return archive

    def validate_chart_values(self, comp, archive):
        """The chart's defaults merged with the component's values, against the chart's ``values.schema.json`` (a chart
        without one: nothing to check). Once per values and chart in a run."""
        key = (comp.name, comp.digest(), archive)
        if key in self._values_valid:
            return
        schema, defaults_text = chart_schema_and_defaults(archive)
        if schema:
            defaults = deps.load(defaults_text, "chart %s: values.yaml" % archive) if defaults_text.strip() else {}
            try:
                problems = validation.rule_problems(schema, merge_null_deletes(defaults if isinstance(defaults, dict) else {}, comp.values))
            except AicrError as exc:  # a schema that cannot be applied: the chart's, named with the component
                raise AicrError("values: component %s: the chart's values.schema.json cannot be applied (%s)" % (comp.name, exc.msg),
                                component=comp.name, field="values")
            if problems:
                raise AicrError("values: component %s: %d value(s) violate the chart's values.schema.json; first: %s" % (comp.name, len(problems), problems[0]),
                                component=comp.name, field="values", problems=problems[:50])
        self._values_valid.add(key)

    def check_up_front(self):
        """Before the first change, and in check mode: every release that will be installed or upgraded has its chart
        brought to local disk (concurrently) and its values checked against the chart's own schema. Returns ``(state,
        field)`` of each component refused (its state Failed, saying why), in deployment order; [] when all are valid."""
        to_check = [self.ctx.states[name] for name in self.ctx.plan.order
                    if not self.ctx.states[name].comp.manifest_only and self.ctx.states[name].comp.chart and self.ctx.states[name].action != "unchanged"]

        def check(st):
            try:
                chart_ref, repo, flags, _where = chart_source(st.comp.chart, st.comp.repository, self.ctx.opts.mirrors)
                if self.ctx.opts.validate_chart_schema:
                    archive = self.pull_and_validate(st.comp, chart_ref, repo, flags)
                else:
                    archive = self.local_chart(st.comp, chart_ref, repo, flags)
                if self.crds.managing():
                    self.crds.plan(st, archive)  # ChartCrds: a breaking or foreign CRD refused before the first change
            except AicrError as exc:
                st.phase = FAILED
                named = exc.msg.startswith(("values: component %s:" % st.comp.name, "component %s:" % st.comp.name))
                st.message = exc.msg if named else "component %s: %s" % (st.comp.name, exc.msg)
                return st, exc.details.get("field") or "chart"
            return None

        if not to_check:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(self.ctx.opts.concurrency, len(to_check)))) as pool:
            return [found for found in pool.map(check, to_check) if found is not None]


__all__ = ["ValuesChecker"]
