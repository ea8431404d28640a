#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Over 400 lines: DOCUMENTATION, EXAMPLES and RETURN are 562 of them; the module itself (argument spec, main) is about 95.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fabric_device
short_description: Attach and detach composable GPUs and CXL memory on a PCIe/CXL fabric, safely and idempotently
version_added: 0.1.0
description:
  - Declares how many devices of a type and model a server (a fabric machine) holds, or which devices it must not hold,
    and converges the fabric to that through the FTI CDI Fabric Manager, the FTI CDI Cluster Manager or a Redfish
    CompositionService.
  - The machine is always read first; only the deficit is attached, one device per request; only devices named by
    their fabric id are detached (a surplus is chosen by id, never "remove N").
  - After an ambiguous outcome (timeout, connection reset, HTTP 5xx) or an error answer the machine is re-read; a new
    matching device is adopted and a device that is gone counts as detached. A request is re-sent only when the
    re-read, after the fabric had time to settle, shows it had no effect - never a double attach. A 502/503/504 is a
    gateway's answer (the manager behind it may still be applying the change), so the machine is re-read until the change
    shows or O(settle_timeout), as after a timeout.
  - An attach whose device comes up failed or critical is rolled back (detached again) and the task fails.
  - A failed task still reports what was done on the fabric - C(changed), RV(attached), RV(detached), RV(rolled_back) - and
    in RV(pending) every attach or detach sent whose outcome was not final when the run stopped (accepted but not shown,
    a timeout or a gateway's 502/503/504, a Redfish task still running, a device still being added or removed at
    O(wait_timeout)).
  - Every option is checked before anything is contacted - the ranges below; a zero is a value, never the default - and
    every problem is listed in the failed result's C(errors).
  - All or nothing - the free pool is checked before the first attach, and when an attach fails the devices this run
    attached on that machine are rolled back, unless O(partial).
  - Unless O(force_detach), a GPU is not detached while pods on its node request C(nvidia.com/gpu) or a DRA
    ResourceClaim names it; the refusal names the pods or claims.
  - When the composable-resource-operator (C(cro.hpsys.ibm.ie.com)) is installed on the cluster, it detaches devices no
    ComposableResource claims after about 10 minutes; the module refuses unless O(operator_coexistence=allow).
  - Several machines (O(machines)) are handled concurrently with a bounded thread pool; devices on one machine
    sequentially.
  - With O(stack) the devices are owned per stack - every attach is recorded in the stack's ConfigMap (an intent before
    the attach, the device's id after it), and counts, surplus detaches and O(state=absent) touch only the devices that
    stack recorded, never another stack's. A run killed between an attach and its record is found by the next run.
  - O(orphans) lists (and, with V(detach), after O(orphan_grace) detaches) the devices on the cluster's machines that no
    stack recorded.
author:
  - aicr.runtime maintainers (@aicr-runtime)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.fabric
  - aicr.runtime.live_status
attributes:
  check_mode:
    support: full
    details: The machines (and the free pool) are read; the attaches and detaches that would happen are returned in RV(actions), nothing is changed.
  diff_mode:
    support: full
    details: RV(diff) holds the device lists of every machine before and after.
  idempotent:
    support: full
    details: A second run with the same arguments reads the machines and sends no mutating request.
requirements:
  - requests
  - kubernetes (when O(node), O(credentials_secret) or O(verify_visible) is used)
options:
  node:
    description:
      - Kubernetes node name. It is resolved to the fabric machine through C(spec.providerID) C(fsas-cdi://<uuid>) or, on
        OpenShift, the annotations Node C(machine.openshift.io/machine) -> Machine C(metal3.io/BareMetalHost) ->
        BareMetalHost C(cluster-manager.cdi.io/machine).
      - Needed for the pod/claim safety check before a detach and for O(verify_visible).
    type: str
  machine_id:
    description:
      - Fabric machine UUID (Redfish - the ComputerSystem id). Use instead of, or together with, O(node).
    type: str
  type:
    description: Device type.
    type: str
    choices: [gpu, cxlmemory]
    default: gpu
  model:
    description:
      - Device model as the fabric names it (the C(model eq) condition), for example C(A100). Any model when omitted.
      - The fabric's spelling is authoritative. A model that differs from it only in case (C(A100) for the fabric's C(a100))
        is matched with a warning naming the fabric's spelling - against the devices of the machine, the pool's models
        (Redfish) or the cluster template (C(fti_cm)); the FTI Fabric Manager cannot list its models, so when nothing is free
        under the spelling given its lower- and upper-case forms are asked too. A present model the fabric does not know fails
        listing the models the machine and the pool have; an absent one that the machine does not hold and the fabric does
        not know is a warning.
    type: str
  count:
    description:
      - With O(state=present) - the number of devices of O(type)/O(model) the machine must hold. A deficit is attached,
        a surplus detached (failed/critical devices first, then the newest).
    type: int
  devices:
    description:
      - With O(state=absent) - fabric resource ids (C(res_uuid), Redfish block id) or serials to detach. Ids not
        attached to the machine are ignored.
      - With O(state=absent) and no O(devices), every device of O(type) (and O(model)) on the machine is detached.
    type: list
    elements: str
  state:
    description: Whether the devices are to be attached (O(count)) or detached.
    type: str
    choices: [present, absent]
    default: present
  machines:
    description:
      - Several machines in one run (handled concurrently, one token for all). Each item takes O(node) or O(machine_id)
        and may override O(type), O(model), O(count), O(devices) and O(state); unset keys come from the top-level options.
    type: list
    elements: dict
    suboptions:
      node:
        description: Kubernetes node name.
        type: str
      machine_id:
        description: Fabric machine UUID.
        type: str
      type:
        description: Device type.
        type: str
        choices: [gpu, cxlmemory]
      model:
        description: Device model.
        type: str
      count:
        description: Desired number of devices.
        type: int
      devices:
        description: Device ids to detach.
        type: list
        elements: str
      state:
        description: present or absent.
        type: str
        choices: [present, absent]
  force_detach:
    description:
      - Detach even when pods on the node request C(nvidia.com/gpu) or DRA claims name the device, or when no node is
        known to check.
    type: bool
    default: false
  operator_coexistence:
    description:
      - What to do when the composable-resource-operator is installed on the cluster. C(refuse) fails the task;
        C(allow) proceeds and returns a warning.
    type: str
    choices: [refuse, allow]
    default: refuse
  wait:
    description:
      - Wait for asynchronous providers (C(fti_cm), C(redfish)) until attached devices are ready and detached ones gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for asynchronous changes and for O(verify_visible). 1 to 86400.
      - A device still being added (or removed) when it has passed stays so on the fabric; the task fails reporting it in
        RV(attached) (RV(detached)) and RV(pending).
    type: int
    default: 300
  verify_visible:
    description:
      - After attaching GPUs, wait until the node reports them - ResourceSlice devices with the GPUs' UUIDs, or allocatable
        C(nvidia.com/gpu) of at least its value before the run plus the GPUs attached (and at least the machine's fabric GPU count).
    type: bool
    default: false
  poll_interval:
    description:
      - Seconds between reads while waiting, and between polls of a Redfish task monitor that gives no C(Retry-After).
      - More than 0 and at most 86400.
    type: float
    default: 2
  settle_timeout:
    description:
      - After an ambiguous outcome, seconds to keep re-reading the machine for the change to show before deciding it did not
        happen. Defaults to twice O(timeout).
      - A fabric manager behind a gateway that can take longer than this to apply an attach (after the gateway answered 502,
        503 or 504) needs a longer value, or the attach may be sent again while the first one still lands.
      - Also the longest wait for a Redfish action the service runs as a task (C(202 Accepted) and a task monitor); a task
        still running then fails the target without re-sending the action (it is in RV(pending)).
      - More than 0 and at most 86400.
    type: float
  max_workers:
    description: Machines handled at the same time, 1 to 256.
    type: int
    default: 8
  stack:
    description:
      - The stack that owns the devices of this run. Its records are the ConfigMap C(aicr-devices-<stack>) in
        O(stack_namespace) (labels C(app.kubernetes.io/managed-by=aicr-runtime), C(aicr.io/stack),
        C(app.kubernetes.io/component=fabric-devices)), written with server-side apply (field manager C(aicr-runtime)).
      - Before each attach an intent is written (stack, machine, node, type, model, pool, time, run id and the devices the
        machine held); after it the device's C(res_uuid) and serial. An intent without a device, left by a run that ended in
        between, is resolved by the next run - devices of that type and model that appeared on the machine since and no stack
        records are adopted (a warning names them), none means the attach never happened (the intent is dropped), more than
        the open intents (or another stack's open intent on the same machine and model) is ambiguous - reported, not adopted.
      - O(count), the surplus and O(state=absent) (with or without O(devices)) then count and touch only the devices this
        stack recorded; devices of other stacks, and devices no stack recorded, are left alone. A recorded device the machine
        does not list is marked missing and still counts on that run; it leaves the records when the next run misses it too.
      - A DNS-1123 label (lowercase letters, digits and C(-), starting and ending with a letter or digit, at most 63
        characters), as O(status_stack); any other fails before the cluster or the fabric is contacted.
      - A records ConfigMap is trusted only as the collection writes it - named C(aicr-devices-<stack>), its label and
        C(data.stack) naming that stack, field manager C(aicr-runtime) among its C(managedFields). Any other ConfigMap
        labelled as device records is a foreign claim - not read at all (it never replaces a stack's records nor hides a
        device from the orphan sweep), reported in RV(foreign_claims) (and the C(foreign_claims) of RV(records), or of
        RV(orphans) on a sweep) and as a warning starting C(foreign claim:).
      - Without it, every device of O(type)/O(model) on the machine counts, as before.
      - One run at a time changes a stack's devices. A run that is about to change something (a record, an attach, a
        detach) takes the stack's fabric Lease C(aicr-fabric-<stack>) in O(stack_namespace) first and starts again under it
        from the reads, so two runs of one stack never attach the same deficit twice; while another run holds it the task
        fails, naming that run and when it last renewed the Lease. A run that changes nothing takes no Lease. The
        Lease of a killed run is taken over once 60 seconds have passed since its last renewal, by the API server's clock.
        A run that loses the Lease (a renewal refused, another run took it over) stops before its next change and fails,
        reporting what it attached and detached.
      - Needs Kubernetes access (O(kubeconfig)) and the Role C(aicr-runtime:lease) (C(meta/rbac/aicr-system.yaml)) bound
        to the identity in O(stack_namespace) - C(get), C(list), C(create) and C(patch) on ConfigMaps and the Lease there;
        the ClusterRole C(aicr-runtime:fabric) grants no ConfigMaps.
    type: str
  adopt:
    description:
      - With O(stack) - fabric ids (C(res_uuid)) of devices the stack attached before it kept records (the C(resUUID)s of a
        ClusterStack's C(status.devices)). Those on the run's machines that no stack records and that a O(state=present) target
        counts (its type and model, up to its O(count) - an adoption never makes a surplus to detach) are adopted into the
        stack's records (a warning names them); the others are ignored (the orphan sweep finds the ones nobody adopts).
    type: list
    elements: str
  stack_namespace:
    description:
      - The namespace of the device records of O(stack), of its fabric Lease, and of the orphan ledger of O(orphans). It
        must exist, with the Role C(aicr-runtime:lease) bound there to the identity.
    type: str
    default: aicr-system
  orphans:
    description:
      - After the targets (or alone, without O(node), O(machine_id) and O(machines)) list the devices attached to the cluster's
        machines - every node that resolves to a fabric machine, and the targets' machines - that no stack records in
        O(stack_namespace). Devices of a machine, type and model on which a stack has an open intent are C(held), not orphans.
      - V(report) lists them in RV(orphans) (and a warning) and notes when each was first seen (ConfigMap
        C(aicr-fabric-orphans) in O(stack_namespace), by the API server's clock).
      - V(detach) also detaches every orphan first seen at least O(orphan_grace) seconds ago, after the same drain check as
        any detach (O(force_detach)); a refusal is reported (C(refused)) with a warning, never a failed task. Orphans
        within the grace period are left alone (C(within_grace)).
      - Check mode reports (C(would_detach)) and writes nothing.
    type: str
    choices: [report, detach]
  orphan_grace:
    description:
      - Seconds an orphan must have been seen before O(orphans=detach) detaches it - 10 minutes by default, the grace period
        of the composable-resource-operator's upstream syncer for devices without a ComposableResource.
      - 0 (detach at once) or more.
    type: int
    default: 600
  partial:
    description:
      - All or nothing is the default - before the first attach the free pool is checked for every machine (the deficits of
        machines drawing on one pool added up) and nothing is attached when it cannot cover them; when an attach fails anyway,
        the devices this run attached on that machine are detached again (after the same drain check as any detach) and
        returned in RV(rolled_back).
      - With V(true) the devices attached before the failing one stay attached (the task still fails, naming them).
    type: bool
    default: false
  allow_http:
    description:
      - Accept a plain C(http://) O(endpoint). Credentials and tokens then travel unencrypted; a warning says so.
        Without it an C(http://) endpoint is refused.
    type: bool
    default: false
  trust_env:
    description:
      - Use the environment as C(requests) does - proxies from C(HTTPS_PROXY)/C(NO_PROXY) and C(.netrc) - and, unless
        O(ca_path) names a bundle, the CA bundle of C(SSL_CERT_FILE) (as CoHDI's Helm chart sets it) or C(REQUESTS_CA_BUNDLE),
        else the system trust store. TLS verification stays on (O(validate_certs)).
      - Off by default - the environment is ignored, O(ca_path) or the bundle of C(requests) is used, and no proxy.
    type: bool
    default: false
  kubeconfig:
    description:
      - Path to a kubeconfig file, or its parsed content. Defaults to C($KUBECONFIG), C(~/.kube/config), then in-cluster.
    type: raw
  context:
    description: kubeconfig context to use.
    type: str
  status_stack:
    description:
      - Write every device transition to the status of this stack as it happens - a C(ClusterStack) name
        (O(status_backend=crd)) or the name of a stack kept in a ConfigMap (O(status_backend=configmap)).
      - Each attach adds the device to C(status.devices) and each detach removes it (matched by fabric id), with a
        C(DeviceAttached) or C(DeviceDetached) history event, through the status subresource, re-reading on a 409
        conflict. Transitions are coalesced - at most one write every 0.5 seconds, plus a final one before the module
        returns. A run that attaches and detaches nothing writes nothing.
      - A status write that fails never fails the fabric run; it is reported as a warning (after three failures in a row
        live status is given up). A stack that cannot be read disables live status with a warning.
      - Never used in check mode. Uses O(kubeconfig) and O(context).
    type: str
notes:
  - Device status follows the FTI C(res_op_status) first character - C(0) ok, C(1) ok with a warning (returned in
    RV(devices[].warnings) and RV(fabric_warnings)), C(2) critical; an empty or unknown status of a device that counts is an error
    naming it. Redfish C(Status.Health) C(OK)/C(Warning)/C(Critical) maps the same way.
  - A machine read that returns no machine or lacks required fields fails with the machine named.
seealso:
  - name: composable-resource-operator
    description: The Kubernetes operator for the same fabrics (ComposabilityRequest, ComposableResource).
    link: https://github.com/CoHDI/composable-resource-operator
  - name: DMTF Redfish composability
    description: CompositionService, ResourceBlocks, AddResourceBlock/RemoveResourceBlock.
    link: https://www.dmtf.org/standards/redfish
"""

EXAMPLES = r"""
- name: Node gpu-worker-1 holds exactly two A100s from the fabric, visible to Kubernetes
  aicr.runtime.fabric_device:
    provider: fti_fm
    endpoint: cdi.example.com
    tenant_id: 3f1e6f4c-0000-4000-8000-000000000001
    credentials_secret: {name: fti-credentials, namespace: composable}
    ca_path: /etc/pki/fabric-ca.pem
    node: gpu-worker-1
    type: gpu
    model: A100
    count: 2
    verify_visible: true
  register: gpus

- name: Two H100s on each of four machines through the Cluster Manager, concurrently
  aicr.runtime.fabric_device:
    provider: fti_cm
    endpoint: cdi.example.com
    tenant_id: "{{ fti_tenant }}"
    cluster_id: "{{ fti_cluster }}"
    realm: cdi
    client_id: aicr
    client_secret: "{{ vault_fti_client_secret }}"
    username: automation
    password: "{{ vault_fti_password }}"
    model: H100
    count: 2
    machines:
      - node: gpu-worker-1
      - node: gpu-worker-2
      - node: gpu-worker-3
      - node: gpu-worker-4

- name: Detach one named GPU (refused while pods use GPUs on the node)
  aicr.runtime.fabric_device:
    provider: fti_fm
    endpoint: cdi.example.com
    tenant_id: "{{ fti_tenant }}"
    credentials_secret: {name: fti-credentials, namespace: composable}
    node: gpu-worker-1
    state: absent
    devices: [0670c861-2253-593d-8dca-02affed2122a]

- name: Two A100s on gpu-worker-1 owned by stack "training" (another stack's A100s there are never counted or detached)
  aicr.runtime.fabric_device:
    provider: fti_fm
    endpoint: cdi.example.com
    tenant_id: "{{ fti_tenant }}"
    credentials_secret: {name: fti-credentials, namespace: composable}
    node: gpu-worker-1
    model: a100
    count: 2
    stack: training

- name: Detach devices no stack recorded, once seen for 10 minutes (report first with orphans=report)
  aicr.runtime.fabric_device:
    provider: fti_fm
    endpoint: cdi.example.com
    tenant_id: "{{ fti_tenant }}"
    credentials_secret: {name: fti-credentials, namespace: composable}
    orphans: detach
    orphan_grace: 600

- name: Compose a CXL memory block through Redfish
  aicr.runtime.fabric_device:
    provider: redfish
    endpoint: https://bmc-composer.example.com
    username: admin
    password: "{{ vault_redfish_password }}"
    machine_id: System-7
    type: cxlmemory
    count: 1
"""

RETURN = r"""
devices:
  description: Devices on the machines after the run (in check mode, the planned list; planned attaches have C(res_uuid) null).
  returned: always
  type: list
  elements: dict
  contains:
    res_uuid:
      description: Fabric resource id (Redfish - the ResourceBlock id).
      type: str
    serial:
      description: The serial the node sees (for GPUs, the C(GPU-...) UUID).
      type: str
    type:
      description: C(gpu) or C(cxlmemory).
      type: str
    model:
      description: Device model.
      type: str
    status:
      description: C(ok), C(warning), C(critical), C(unknown), or the phase C(pending), C(removing), C(failed).
      type: str
    warnings:
      description: Status warnings of this device.
      type: list
      elements: str
    machine:
      description: Fabric machine id.
      type: str
    node:
      description: Kubernetes node, when known.
      type: str
  sample:
    - {res_uuid: 0670c861-2253-593d-8dca-02affed2122a, serial: GPU-9a1e0c55-1c3e-5b2a-9f2d-3a9e1c7b5d11, type: gpu, model: A100,
       status: ok, warnings: [], machine: cb765435-c696-502d-9ae2-781e57375583, node: node-0}
attached:
  description:
    - Devices attached (or adopted after an ambiguous outcome) by this run, same fields as RV(devices) - also when the task
      fails. A device the fabric is still adding when the run stops has C(status) C(pending) (and is in RV(pending)).
  returned: always
  type: list
  elements: dict
detached:
  description:
    - Devices detached by this run, same fields as RV(devices) - also when the task fails. A device the fabric is still
      removing when the run stops has C(status) C(removing) (and is in RV(pending)).
  returned: always
  type: list
  elements: dict
rolled_back:
  description:
    - Devices this run attached and detached again - an attached device that came up failed, or (all or nothing, unless
      O(partial)) the devices attached on a machine before a later attach there failed. Same fields as RV(devices).
  returned: always
  type: list
  elements: dict
actions:
  description:
    - Every mutation, in order - C(action) (C(attach) or C(detach)), C(machine), C(node), C(type), C(model), C(res_uuid), C(serial),
      and C(adopted) for an attach found after an ambiguous outcome, C(rollback) for the detach of a device this run attached,
      C(orphan) for the detach of an orphan; C(pending), C(status) and C(reason) for one whose outcome was not final (RV(pending)).
      In check mode, the planned mutations.
  returned: always
  type: list
  elements: dict
  sample:
    - {action: attach, machine: cb765435-c696-502d-9ae2-781e57375583, node: node-0, type: gpu, model: A100,
       res_uuid: 0670c861-2253-593d-8dca-02affed2122a, serial: GPU-9a1e0c55-1c3e-5b2a-9f2d-3a9e1c7b5d11, adopted: false}
pending:
  description:
    - The RV(actions) whose outcome was not final when the run stopped - the fabric accepted the change but it did not show
      within O(settle_timeout), the answer was a timeout or a gateway's 502/503/504 and the machine did not show the change,
      a Redfish task was still running, the machine could not be re-read after the request, or the device was still being
      added or removed at O(wait_timeout). Each has the fields of RV(actions) plus C(pending) (true), C(status) (the
      device's status when last read - C(pending), C(removing)...; null when no device of the change was seen) and
      C(reason) (why the run stopped following it). Such a change may still land; the run counts as changed. Re-run to
      converge - the machine is read first, and with O(stack) the intent record settles it.
  returned: always
  type: list
  elements: dict
  sample:
    - {action: attach, machine: cb765435-c696-502d-9ae2-781e57375583, node: node-0, type: gpu, model: A100,
       res_uuid: 0670c861-2253-593d-8dca-02affed2122a, serial: GPU-9a1e0c55-1c3e-5b2a-9f2d-3a9e1c7b5d11, adopted: false, pending: true,
       status: pending, reason: "node node-0 (machine cb765435-...): device 0670c861-... still being added after 300s (wait_timeout); ..."}
diff:
  description: Device lists per machine before and after (C(before.machines.<id>), C(after.machines.<id>)).
  returned: always
  type: dict
machines:
  description: Per machine - C(machine), C(node), C(attached), C(detached) and C(rolled_back) counts, C(error), C(warnings).
  returned: always
  type: list
  elements: dict
fabric_warnings:
  description: Device status warnings, adopted outcomes, operator coexistence (also emitted as Ansible warnings).
  returned: always
  type: list
  elements: str
cancelled:
  description: The run was stopped by SIGTERM (AWX's cancel); C(msg) says what was done before.
  returned: when cancelled
  type: bool
  sample: true
stopped:
  description: Child processes the cancel stopped (the collection's common cancel result; empty, fabric_device starts none).
  returned: when cancelled
  type: list
  elements: str
done:
  description: What a cancelled run did before it stopped (attaches sent, devices attached or detached), in order.
  returned: when cancelled
  type: list
  elements: str
token_requests:
  description: Access tokens requested during the run (normally 1 for FTI providers, 0 for Redfish).
  returned: always
  type: int
fabric_requests:
  description: HTTP requests sent to the fabric, by method.
  returned: always
  type: dict
  sample: {GET: 4, PATCH: 2, POST: 1}
owned:
  description: With O(stack) - the devices of the run's machines that the stack records after the run, same fields as RV(devices).
  returned: when O(stack) is set
  type: list
  elements: dict
records:
  description:
    - With O(stack) - C(stack), C(namespace), C(writes) (record writes made), C(adopted) (devices of open intents adopted
      into the stack's records, same fields as RV(devices)) and C(foreign_claims) (records ConfigMaps not read - C(kind),
      C(namespace), C(name), C(claims_stack) (the stack it names), C(reason), C(managers), C(message), the warning).
  returned: when O(stack) is set
  type: dict
  sample: {stack: gpu, namespace: aicr-system, writes: 4, adopted: [], foreign_claims: []}
foreign_claims:
  description:
    - Every foreign claim of the run - the C(foreign_claims) of RV(records) and of RV(orphans) in one list (the shape
      gated_release and stack_info give theirs) - objects that claim a stack but that the collection did not write under
      that stack's own name, never acted on. Each is also a warning, its C(message).
  returned: always
  type: list
  elements: dict
  sample:
    - kind: ConfigMap
      namespace: aicr-system
      name: aicr-devices-forged
      claims_stack: gpu
      reason: "is not named aicr-devices-gpu, the records ConfigMap of stack gpu"
      managers: [kubectl-create]
      message: >-
        foreign claim: ConfigMap aicr-system/aicr-devices-forged (claims stack gpu) is not named aicr-devices-gpu, the records
        ConfigMap of stack gpu; ignored
lease:
  description:
    - With O(stack) - the stack's fabric Lease (C(namespace/name)) the run held while it changed something; null when it
      changed nothing (no Lease was taken).
  returned: when O(stack) is set, not in check mode
  type: str
  sample: aicr-system/aicr-fabric-gpu
orphans:
  description:
    - With O(orphans) - C(mode), C(grace), C(machines) (swept), C(ledger_writes) and C(devices), each with the fields of
      RV(devices) plus C(action) (C(reported), C(within_grace), C(detached), C(would_detach), C(refused), C(held), C(pending) - a
      detach sent whose outcome is open, in RV(pending) too),
      C(first_seen), C(detach_after) (seconds of grace left) and C(reason).
    - C(foreign_claims) - the records ConfigMaps not read (as in RV(records)) and an orphan ledger the collection did not
      write (its first-seen times are not used).
  returned: when O(orphans) is set
  type: dict
  sample:
    mode: detach
    grace: 600
    machines: 3
    ledger_writes: 1
    devices:
      - {res_uuid: 0670c861-2253-593d-8dca-02affed2122a, type: gpu, model: a100, machine: cb765435-c696-502d-9ae2-781e57375583,
         node: node-0, action: within_grace, first_seen: "2026-12-01T17:00:00.000Z", detach_after: 420.0}
live_status:
  description: What the live status writer did - stack, backend, device transitions seen, status writes made, 409 conflicts retried.
  returned: when O(status_stack) is set, not in check mode, and the stack could be read
  type: dict
  sample: {stack: gpu, backend: crd, transitions: 2, writes: 1, conflicts: 0}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._entry import fabric_device as fabric
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.factory import PROVIDERS
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import LIVE_STATUS_ARG_SPEC


def argument_spec():
    spec = dict(
        provider=dict(type="str", required=True, choices=list(PROVIDERS)),
        endpoint=dict(type="str", required=True),
        tenant_id=dict(type="str"),
        cluster_id=dict(type="str"),
        username=dict(type="str", no_log=True),
        password=dict(type="str", no_log=True),
        client_id=dict(type="str"),  # an identifier, not a secret: masking it would mangle every output
        client_secret=dict(type="str", no_log=True),
        realm=dict(type="str"),
        credentials_secret=dict(type="dict", no_log=False, options=dict(name=dict(type="str", required=True), namespace=dict(type="str", default="default"))),
        ca_path=dict(type="path"),
        validate_certs=dict(type="bool", default=True),
        timeout=dict(type="float", default=30),
        node=dict(type="str"),
        machine_id=dict(type="str"),
        type=dict(type="str", choices=["gpu", "cxlmemory"], default="gpu"),
        model=dict(type="str"),
        count=dict(type="int"),
        devices=dict(type="list", elements="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        machines=dict(type="list", elements="dict", options=dict(
            node=dict(type="str"),
            machine_id=dict(type="str"),
            type=dict(type="str", choices=["gpu", "cxlmemory"]),
            model=dict(type="str"),
            count=dict(type="int"),
            devices=dict(type="list", elements="str"),
            state=dict(type="str", choices=["present", "absent"]),
        )),
        force_detach=dict(type="bool", default=False),
        operator_coexistence=dict(type="str", choices=["refuse", "allow"], default="refuse"),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
        verify_visible=dict(type="bool", default=False),
        poll_interval=dict(type="float", default=2),
        settle_timeout=dict(type="float"),
        max_workers=dict(type="int", default=8),
        partial=dict(type="bool", default=False),
        stack=dict(type="str"),
        stack_namespace=dict(type="str", default="aicr-system"),
        adopt=dict(type="list", elements="str"),
        orphans=dict(type="str", choices=["report", "detach"]),
        orphan_grace=dict(type="int", default=600),
        allow_http=dict(type="bool", default=False),
        trust_env=dict(type="bool", default=False),
    )
    spec.update(KUBE_ARG_SPEC)
    spec.update(LIVE_STATUS_ARG_SPEC)
    return spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("count", "devices"), ("machines", "node"), ("machines", "machine_id")],
        required_by={"adopt": "stack"},
        required_one_of=[("node", "machine_id", "machines", "orphans")],
    )
    # SIGTERM (AWX's cancel): no attach or detach is started after it; the one in flight is finished, and the task fails
    # listing what was done (the machine threads stop at their next step, see _fabric/service.py)
    result = call_engine(module, "fabric_device", lambda: fabric.run(module.params, check_mode=module.check_mode, secret=module.no_log_values.add),
                         requires=["requests", "kubernetes"] if fabric.needs_kubernetes(module.params, module.check_mode) else ["requests"],
                         temporary=False, warnings_as="fabric_warnings")  # engine warnings: Ansible's, and readable in fabric_warnings
    module.exit_json(**result)


if __name__ == "__main__":
    main()
