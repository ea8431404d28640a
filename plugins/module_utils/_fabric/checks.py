# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fabric service asks the cluster before and after a change.

- before a detach: no pod on the node requests ``nvidia.com/gpu`` (GPUs) and no DRA claim names the device,
  unless ``force_detach`` (:meth:`ClusterChecks.check_detach`);
- after an attach, with ``verify_visible``: the node shows the new GPUs (ResourceSlice ids or allocatable
  ``nvidia.com/gpu``), waited for up to ``wait_timeout`` (:meth:`ClusterChecks.verify_visible`).

:class:`ClusterChecks` is given the run's :class:`~.context.RunContext` (its cluster view, options, clock and pause); it
keeps each node's GPU pods and DRA claims, read once per run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import READY


class ClusterChecks:
    """The cluster checks of one fabric run (the machine threads share one instance)."""

    def __init__(self, context):
        self.context = context
        self._lock = threading.Lock()
        self._usage = {}

    def usage_of(self, node):
        """(pods requesting ``nvidia.com/gpu``, DRA claims) on ``node``, read once per run."""
        with self._lock:
            if node not in self._usage:
                cluster = self.context.cluster
                self._usage[node] = (cluster.gpu_pods(node), cluster.device_claims(node))
            return self._usage[node]

    def check_detach(self, run, target, device):
        """Refuse (AicrError) to detach ``device`` while its node's pods or DRA claims use it, unless ``force_detach``."""
        if self.context.options.force_detach:
            return
        where = target.label
        if not run.node or self.context.cluster is None:
            raise AicrError("%s: refusing to detach %s: without node (and Kubernetes access) its users cannot be checked; give node or force_detach=true"
                            % (where, device.res_uuid), field="force_detach")
        pods, claims = self.usage_of(run.node)
        names = set([device.res_uuid] + ([device.serial] if device.serial else []))
        claimed = ["%s/%s" % (c["namespace"], c["name"]) for c in claims if names & set(c.get("devices") or [])]
        if claimed:
            raise AicrError("%s: refusing to detach %s: DRA claims %s name it; delete them or set force_detach=true"
                            % (where, device.res_uuid, ", ".join(sorted(claimed))), claims=sorted(claimed))
        if device.type == "gpu" and pods:
            users = sorted("%s/%s" % (p["namespace"], p["name"]) for p in pods)
            raise AicrError("%s: refusing to detach GPU %s: pods on node %s request nvidia.com/gpu: %s; drain them or set force_detach=true"
                            % (where, device.res_uuid, run.node, ", ".join(users)), pods=users)

    def verify_visible(self, run, devices):
        """``verify_visible``: wait (``wait_timeout``) until the node shows the GPUs this run attached."""
        ctx = self.context
        wait_timeout = ctx.options.wait_timeout
        gpus = [d for d in devices if d.type == "gpu" and d.phase == READY]
        serials = [a["serial"] for a in run.attached if a["type"] == "gpu" and a.get("serial")]
        if not run.node or not serials:
            if not run.node:
                run.warnings.append("machine %s: verify_visible skipped: no node given" % run.machine_id)
            return
        if ctx.cluster is None:
            raise AicrError("verify_visible: node %s cannot be checked without Kubernetes access" % run.node, field="verify_visible")
        expected = len(gpus)
        if run.baseline is not None:
            removed = len([d for d in run.detached if d["type"] == "gpu"])
            expected = max(expected, run.baseline + len(serials) - removed)
        deadline = ctx.clock() + wait_timeout
        while True:
            ids = ctx.cluster.slice_device_ids(run.node)
            allocatable = ctx.cluster.gpu_allocatable(run.node)
            if all(s in ids for s in serials) or allocatable >= expected:
                return
            if ctx.clock() >= deadline:
                raise AicrError("verify_visible: node %s does not show the attached GPUs %s after %.0fs (allocatable nvidia.com/gpu=%d, expected >= %d)"
                                % (run.node, ", ".join(serials), wait_timeout, allocatable, expected), node=run.node)
            ctx.pause()
