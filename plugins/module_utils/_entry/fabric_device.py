# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fabric_device module does, as one function over its parameters (the module only validates and reports).

1. the targets (one per machine, module-level defaults under each ``machines`` entry);
2. Kubernetes access when a node, ``credentials_secret`` or ``verify_visible`` needs it (the shared client, as the
   kubeconfig's identity);
3. credentials: the Secret's keys, then the options (the options win); every value is a secret;
4. with ``stack`` (or ``orphans``) the stacks' device records (``records``; the orphan ledger, ``orphans``);
5. the backend for ``provider`` (``factory``), live status to ``status_stack`` (devices), the service's run - with ``stack``,
   changes only under the stack's fabric Lease (``exclusive``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.exclusive import GatedClient, run_exclusive
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.factory import build_backend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import CREDENTIAL_KEYS, KubernetesClusterView
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.options import check_options
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.orphans import OrphanLedger
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import DeviceRecords
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.service import FabricService
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection
from ansible_collections.aicr.runtime.plugins.module_utils._stack.live import live_status, run_with_live_status

LIVE_STATUS_INTERVAL = 0.5
TARGET_KEYS = ("type", "model", "count", "devices", "state")


def targets_from(params):
    """One Target per machine (``machines`` items, or the top-level node/machine_id); none for the orphan sweep alone.
    Read from the parameters only (nothing is contacted); ``options.check_options`` checks them."""
    defaults = dict((key, params.get(key)) for key in TARGET_KEYS)
    items = params.get("machines") or [{"node": params.get("node"), "machine_id": params.get("machine_id")}]
    if not params.get("machines") and not params.get("node") and not params.get("machine_id") and params.get("orphans"):
        return []  # the orphan sweep alone
    targets = []
    for item in items:
        merged = dict(defaults)
        merged.update(dict((k, v) for k, v in item.items() if v is not None and k in TARGET_KEYS))
        targets.append(Target(machine_id=item.get("machine_id"), node=item.get("node"), dtype=merged["type"], model=merged["model"],
                              count=merged["count"], devices=merged["devices"], state=merged["state"]))
    return targets


def needs_cluster(params, targets):
    return bool(params["credentials_secret"] or params["verify_visible"] or any(t.node for t in targets) or params.get("stack")
                or params.get("orphans"))


def needs_kubernetes(params, check_mode=False):
    """Whether the run talks to the cluster: node checks and credentials (:func:`needs_cluster`) or live status."""
    return needs_cluster(params, targets_from(params)) or bool(params["status_stack"] and not check_mode)


def _client(params):
    connection.require_kubernetes("for node, pod and visibility checks")
    # the module's timeout bounds each request, to the API server as to the fabric (a server that never answers included)
    return connection.client_for(params["kubeconfig"], params["context"], request_timeout=params["timeout"], timeout_option="timeout")


def run(params, check_mode=False, secret=None):
    """Converge the fabric as ``params`` (fabric_device's options) ask; ``secret(value)`` is told every credential read
    from ``credentials_secret`` (the module hides them). Returns the result; raises AicrError."""
    targets = targets_from(params)
    check_options(params, targets)  # every option's problem (stack names first) at once, before the cluster or the fabric is reached
    client = _client(params) if needs_kubernetes(params, check_mode) else None
    cluster = KubernetesClusterView(client) if needs_cluster(params, targets) else None
    credentials = {}
    if params["credentials_secret"]:
        ref = params["credentials_secret"]
        credentials.update(cluster.read_secret(ref["namespace"], ref["name"]))
        for value in credentials.values():
            if secret is not None:
                secret(value)
    for key in CREDENTIAL_KEYS:
        if params[key]:
            credentials[key] = params[key]
    settle = params["settle_timeout"] if params["settle_timeout"] is not None else 2 * params["timeout"]
    # a Redfish action that runs as a task has settled when its task monitor says so: the same budget
    backend = build_backend(params["provider"], params["endpoint"], credentials, tenant_id=params["tenant_id"], cluster_id=params["cluster_id"],
                            ca_path=params["ca_path"], validate_certs=params["validate_certs"], timeout=params["timeout"],
                            allow_http=params["allow_http"], trust_env=params["trust_env"], task_timeout=settle,
                            task_poll_interval=params["poll_interval"])
    live, live_warning = None, None
    if params["status_stack"] and not check_mode:
        live, live_warning = live_status(client, params["status_stack"], params["status_backend"], params["status_namespace"],
                                         interval=LIVE_STATUS_INTERVAL, devices=True)

    def attempt(on_transition, gate=None):
        records, ledger = None, None
        writer = GatedClient(client, gate) if gate is not None else client  # no record or ledger write without the Lease
        if params.get("stack") or params.get("orphans"):
            records = DeviceRecords(writer, params["stack_namespace"], stack=params.get("stack"), dry_run=check_mode)
        if params.get("orphans"):
            ledger = OrphanLedger(writer, params["stack_namespace"], dry_run=check_mode)
        service = FabricService(backend, cluster=cluster, check_mode=check_mode, force_detach=params["force_detach"],
                                operator_coexistence=params["operator_coexistence"], wait=params["wait"], wait_timeout=params["wait_timeout"],
                                verify_visible=params["verify_visible"], poll_interval=params["poll_interval"], settle_timeout=settle,
                                max_workers=params["max_workers"], on_transition=on_transition, partial=params["partial"],
                                records=records, orphans=params.get("orphans"), orphan_grace=params.get("orphan_grace", 600), ledger=ledger,
                                adopt=params.get("adopt"), gate=gate)
        return service.run(targets)

    def converge(on_transition):
        if not params.get("stack") or check_mode:
            return attempt(on_transition)
        # one run at a time changes a stack's devices; a run that changes nothing takes no Lease (exclusive.py)
        return run_exclusive(client, params["stack"], params["stack_namespace"], lambda gate: attempt(on_transition, gate),
                             message="aicr.runtime.fabric_device of stack %s" % params["stack"])

    try:
        return run_with_live_status(live, live_warning, converge)
    finally:
        backend.transport.close()
