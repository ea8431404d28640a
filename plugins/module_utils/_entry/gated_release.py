# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gated_release from its module parameters to its result: :func:`execute` is what the gated_release module calls.

The parameters are checked in one pass first (``gated_release_inputs``); then one connection for the Python client and
helm (``_kube.connection``), the readiness pre-flight (``_release.preflight``), the helm runner (``_helm.helm``), the
rollout (``_release.engine.GatedRelease``) and, with ``status_stack``, the stack's live status (``_stack.live``) and its
gate conditions (``_stack.status``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_NAMESPACE
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry import gated_release_inputs as inputs
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection as kube
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import Deadline, labelled
from ansible_collections.aicr.runtime.plugins.module_utils._release import preflight
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease
from ansible_collections.aicr.runtime.plugins.module_utils._stack import status as stack_status
from ansible_collections.aicr.runtime.plugins.module_utils._stack.live import live_status, run_with_live_status
from ansible_collections.aicr.runtime.plugins.module_utils._stack.store import make_store

LIVE_STATUS_INTERVAL = 0.5  # seconds between two live status writes (transitions in between are coalesced)


def _write_gates(client, params, result):
    """The gate conditions of a run that stopped before its live status started (a failed pre-flight); a warning or None."""
    try:
        writer = stack_status.StatusWriter(make_store(client, params.get("status_backend") or "crd", params.get("status_namespace") or STACK_NAMESPACE,
                                                      "status_namespace"),
                                           params["status_stack"])
    except AicrError as exc:
        return "status_stack: %s" % exc.msg
    return stack_status.write_gates(writer, result)


def execute(params, check_mode=False, diff=False, cluster=None, helm=None, status_client=None):
    """Run gated_release from module parameters; returns the result dict (``failed_message`` when it failed).

    ``cluster``/``helm`` are injected by tests; otherwise built from kubeconfig/context/helm_binary.
    With ``status_stack`` (and not in check mode) every component transition is written to that stack's status
    (``_stack.live.LiveStatus``, through ``status_client`` or a client from kubeconfig/context); the result then has ``live_status``.
    """
    # one validation pass: every parameter checked, every problem listed, before the cluster is reached
    given = inputs.checked(params, check_mode=check_mode, diff=diff)
    recipe, resolved, plan, options, checks = given.recipe, given.resolved, given.plan, given.options, given.checks
    snapshot = params.get("snapshot")
    if snapshot is None and params.get("resolve"):
        snapshot = params["resolve"].get("snapshot")
    tmp = tempfile.mkdtemp(prefix="aicr-gated-")
    try:
        connection = None
        if cluster is None or helm is None or (params.get("status_stack") and status_client is None):
            # one resolution: the Python client and helm reach the same cluster as the same identity
            connection = kube.resolve(params.get("kubeconfig"), params.get("context"))
        if cluster is None:
            # overall_timeout bounds every request of the run, connection included (a server that never answers too)
            cluster = connection.client(deadline=Deadline(options.overall_timeout, labelled("overall_timeout", options.overall_timeout)))
        # the readiness pre-flight: before the helm probe, the Lease or any other request that could change something
        checked = preflight.run(params.get("preflight") or "auto", recipe, snapshot, cluster)
        if checked is not None and not checked["passed"]:
            failed = {"changed": False, "components": [], "waves": [], "actions": [], "foreign_claims": [], "preflight": checked,
                      "failed_message": preflight.failure_message(checked)}
            if resolved is not None:
                failed["resolved"] = resolved
            if params.get("status_stack") and not check_mode:
                warning = _write_gates(status_client or connection.client(), params, failed)
                if warning:
                    failed["warnings"] = [warning]
            return failed
        if helm is None:
            kubeconfig_path, context = connection.helm_kubeconfig(tmp)
            helm = HelmRunner(params.get("helm_binary") or "helm", kubeconfig_path=kubeconfig_path, context=context,
                              home=params.get("helm_home") or os.path.join(tmp, "helm"), version_cache_dir=options.cache_dir,
                              repository_credentials=params.get("repository_credentials"), credentials_dir=os.path.join(tmp, "helm-auth"),
                              fetch_charts=True, chart_cache_dir=inputs.chart_cache_dir(params))
            helm.release_flags = list(options.helm_flags)
            # checked before the first mutation (GatedRelease.run) and at the end; read meanwhile
            helm.start_version_probe()
        live, live_warning = None, None
        if params.get("status_stack") and not check_mode:
            live, live_warning = live_status(status_client or connection.client(), params["status_stack"], params.get("status_backend") or "crd",
                                             params.get("status_namespace") or STACK_NAMESPACE, interval=LIVE_STATUS_INTERVAL)
        if live is None and live_warning is None:
            result = GatedRelease(cluster, helm, plan, options, checks=checks).run()
        else:
            def rollout(hook):
                return GatedRelease(cluster, helm, plan, options, on_transition=hook, checks=checks).run()

            result = run_with_live_status(live, live_warning, rollout)
        result["helm_version"] = getattr(helm, "major", None)
        if getattr(helm, "warnings", None):
            result["warnings"] = list(result.get("warnings") or []) + list(helm.warnings)
        retried = getattr(cluster, "retried", 0)  # KubeClient's count; the unit doubles have none
        if isinstance(retried, int) and retried:
            result["warnings"] = list(result.get("warnings") or []) + [
                "the API server did not answer %d request(s) at first (no answer, 429 or 5xx): they were sent again" % retried]
        if checked is not None:
            result["preflight"] = checked
        if live is not None:
            warning = stack_status.write_gates(live.writer, result)
            if warning:
                result.setdefault("warnings", []).append(warning)
        if resolved is not None:
            result["resolved"] = resolved
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
