# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fabric service asks the cluster before and after a change.

- before a detach: no pod on the node requests ``nvidia.com/gpu`` (GPUs) and no DRA claim names the device,
  unless ``force_detach`` (:meth:`ClusterChecks._check_detach`);
- after an attach, with ``verify_visible``: the node shows the new GPUs (ResourceSlice ids or allocatable
  ``nvidia.com/gpu``), waited for up to ``wait_timeout`` (:meth:`ClusterChecks._verify_visible`).

:class:`ClusterChecks` is a section of :class:`~.service.FabricService` (a mixin: it reads the service's cluster view,
options, lock and clock).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import READY


class ClusterChecks(object):
    """The cluster checks of :class:`~.service.FabricService`."""

    def _usage_of(self, node):
        with self._lock:
            if node not in self._usage:
                self._usage[node] = (self.cluster.gpu_pods(node), self.cluster.device_claims(node))
            return self._usage[node]

    def _check_detach(self, run, target, device):
        if self.force_detach:
            return
        where = target.label
        if not run.node or self.cluster is None:
            raise AicrError("%s: refusing to detach %s: without node (and Kubernetes access) its users cannot be checked; give node or force_detach=true"
                            % (where, device.res_uuid), field="force_detach")
        pods, claims = self._usage_of(run.node)
        names = set([device.res_uuid] + ([device.serial] if device.serial else []))
        claimed = ["%s/%s" % (c["namespace"], c["name"]) for c in claims if names & set(c.get("devices") or [])]
        if claimed:
            raise AicrError("%s: refusing to detach %s: DRA claims %s name it; delete them or set force_detach=true"
                            % (where, device.res_uuid, ", ".join(sorted(claimed))), claims=sorted(claimed))
        if device.type == "gpu" and pods:
            users = sorted("%s/%s" % (p["namespace"], p["name"]) for p in pods)
            raise AicrError("%s: refusing to detach GPU %s: pods on node %s request nvidia.com/gpu: %s; drain them or set force_detach=true"
                            % (where, device.res_uuid, run.node, ", ".join(users)), pods=users)

    def _verify_visible(self, run, devices):
        gpus = [d for d in devices if d.type == "gpu" and d.phase == READY]
        serials = [a["serial"] for a in run.attached if a["type"] == "gpu" and a.get("serial")]
        if not run.node or not serials:
            if not run.node:
                run.warnings.append("machine %s: verify_visible skipped: no node given" % run.machine_id)
            return
        if self.cluster is None:
            raise AicrError("verify_visible: node %s cannot be checked without Kubernetes access" % run.node, field="verify_visible")
        expected = len(gpus)
        if run.baseline is not None:
            removed = len([d for d in run.detached if d["type"] == "gpu"])
            expected = max(expected, run.baseline + len(serials) - removed)
        deadline = self.clock() + self.wait_timeout
        while True:
            ids = self.cluster.slice_device_ids(run.node)
            allocatable = self.cluster.gpu_allocatable(run.node)
            if all(s in ids for s in serials) or allocatable >= expected:
                return
            if self.clock() >= deadline:
                raise AicrError("verify_visible: node %s does not show the attached GPUs %s after %.0fs (allocatable nvidia.com/gpu=%d, expected >= %d)"
                                % (run.node, ", ".join(serials), self.wait_timeout, allocatable, expected), node=run.node)
            self.sleep(self.poll_interval)
