#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: stack_status
short_description: Read, ensure and update the observed status of a ClusterStack (or of an inventory stack's ConfigMap)
version_added: 0.1.0
description:
  - Updates the C(status) of a C(runtime.aicr.io/v1alpha1) C(ClusterStack) through its C(/status) subresource, or, with
    O(backend=configmap), the status kept in the ConfigMap C(aicr-stack-<name>) of a stack declared in inventory.
  - Sets the phase, conditions (standard shape; C(lastTransitionTime) changes only when a condition's status changes),
    components (from M(aicr.runtime.gated_release) results), devices (from M(aicr.runtime.fabric_device)), the resolved
    recipe, C(observedGeneration) and reconcile bookkeeping, and records history events (the newest 50 are kept).
    Phase changes and component phase changes are recorded in history automatically; the C(Ready) condition follows the phase.
  - Read-modify-write with the object's C(resourceVersion); on 409 Conflict (for example a concurrent spec edit) the stack is
    re-read and only this update is re-applied. An update that changes nothing writes nothing.
  - Without any update option the module only reads the status.
author:
  - aicr.runtime contributors (@aicr)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.kube
  - aicr.runtime.stack_store
attributes:
  check_mode:
    support: full
    details: Computes and returns the new status; nothing is written.
  diff_mode:
    support: full
    details: Returns the status (and, for O(backend=configmap), the spec) before and after.
  idempotent:
    support: full
    details: Applying the same update twice writes once; history events given in O(events) are appended on every call that writes.
requirements:
  - kubernetes (Python package)
options:
  name:
    description:
      - The stack (ClusterStack name, or the inventory stack name for O(backend=configmap)).
      - A DNS-1123 label (lowercase letters, digits and C(-), starting and ending with a letter or digit, at most 63
        characters); any other fails before the cluster is contacted.
      - May be omitted when only O(install_crd) is wanted.
    type: str
  install_crd:
    description:
      - Create or update the ClusterStack CRD first and wait until it is Established.
    type: bool
    default: false
  spec:
    description:
      - O(backend=configmap) only - the stack's desired state (the ClusterStack C(spec) shape). The ConfigMap is created when
        missing; its generation goes up by one whenever the spec differs from the stored one.
      - The ConfigMap C(aicr-stack-<name>) is written with field manager C(aicr-runtime) and the label
        C(runtime.aicr.io/stack=<name>) - what makes it the stack's. One found at that name that the collection did not
        write, or labelled for another stack, is a foreign claim - the task fails naming it and writes nothing.
      - Its secret values (the default O(aicr.runtime.gated_release#module:sensitive_values) rule) are C(<hidden>) in the
        diff (C(<changed>) after, when they changed), and their strings are masked in all of the task's output.
    type: dict
  phase:
    description:
      - The overall phase.
    type: str
    choices: [Pending, Resolving, Attaching, Deploying, Ready, Degraded, Failed]
  phase_message:
    description:
      - Text appended to the history event of a phase change.
    type: str
  conditions:
    description:
      - Conditions to set, each with C(type) (C(RecipeResolved), C(DevicesReady), C(PreflightPassed), C(ComponentsReady),
        C(HealthChecksPassed) or C(CatalogCurrent)),
        C(status) (C(True), C(False), C(Unknown)), C(reason) and C(message). C(Ready) is derived from the phase.
      - Every argument (the stack, the store, O(spec), the phase, each condition, component, device and event) is checked in one
        pass before the cluster is contacted; every problem found is listed in C(errors).
    type: list
    elements: dict
  components:
    description:
      - Component results of M(aicr.runtime.gated_release) (or status entries), merged by name into C(status.components).
        A C(Removed) component is dropped from the list.
    type: list
    elements: dict
  replace_components:
    description:
      - Replace C(status.components) by O(components) instead of merging.
    type: bool
    default: false
  devices:
    description:
      - The devices attached for the stack (C(node), C(type), C(model), C(res_uuid), C(serial), C(status)); replaces C(status.devices).
    type: list
    elements: dict
  recipe:
    description:
      - The resolved recipe - C(name), C(catalogVersion), C(catalogDigest), C(appliedOverlays). C(resolvedAt) is set when any of
        them changes (and a history event recorded). Another key is refused naming the nearest one.
    type: dict
  events:
    description:
      - History events to record, strings or dicts with C(type) and C(message).
    type: list
    elements: raw
  observed_generation:
    description:
      - Set C(status.observedGeneration) (and the conditions' C(observedGeneration)) - the generation the run started from; 0 or more.
    type: int
  reconcile:
    description:
      - Merged into C(status.reconcile) - C(lastReconcileTime), C(lastHandledReconcileRequest), C(reason), C(resyncSeconds) (0 or
        more). Another key is refused naming the nearest one.
    type: dict
  catalog:
    description:
      - Merged into C(status.catalog) - C(latestVersion), C(autoUpdate), C(autoUpdateSource) (C(spec) or C(default)). Another key is
        refused naming the nearest one.
    type: dict
seealso:
  - module: aicr.runtime.stack_info
  - module: aicr.runtime.gated_release
"""

EXAMPLES = r"""
- name: Install the ClusterStack CRD
  aicr.runtime.stack_status:
    install_crd: true

- name: Mark the stack as deploying
  aicr.runtime.stack_status:
    name: gpu-training
    phase: Deploying
    conditions:
      - {type: RecipeResolved, status: "True", reason: Resolved, message: "recipe h100-kind-training"}

- name: Record the rollout
  aicr.runtime.stack_status:
    name: gpu-training
    phase: Ready
    components: "{{ rollout.components }}"
    replace_components: true
    observed_generation: 3
    conditions:
      - {type: ComponentsReady, status: "True", reason: AllReady, message: "6/6 components Ready"}
    events:
      - {type: Reconciled, message: "generation 3 converged"}

- name: A stack from inventory, status in a ConfigMap
  aicr.runtime.stack_status:
    name: lab
    backend: configmap
    namespace: aicr-system
    spec:
      catalog: {source: /opt/aicr/releases}
      criteria: {service: kind, accelerator: h100, intent: training}
"""

RETURN = r"""
status:
  description: The stack's status after the update (or as it would be, in check mode).
  returned: when O(name) is given
  type: dict
  sample:
    phase: Ready
    observedGeneration: 3
    readyComponents: 6/6
    conditions: [{type: Ready, status: "True", reason: Reconciled, message: every component is Ready,
                  lastTransitionTime: "2026-11-29T14:00:00Z", observedGeneration: 3}]
    history: [{time: "2026-11-29T14:00:00Z", type: PhaseReady, message: phase Deploying -> Ready}]
generation:
  description: The stack's C(metadata.generation) (for O(backend=configmap), the ConfigMap's spec generation).
  returned: when O(name) is given
  type: int
events:
  description: History events this update recorded (automatic and given).
  returned: when O(name) is given
  type: list
  elements: dict
conflicts:
  description: How many 409 Conflicts were retried.
  returned: when O(name) is given
  type: int
actions:
  description: What was done (or would be done, in check mode).
  returned: always
  type: list
  elements: str
backend:
  description: C(crd) or C(configmap).
  returned: when O(name) is given
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._stack.engine import spec_secrets, update_status
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_PHASES
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import STACK_STORE_ARG_SPEC


def argument_spec():
    spec = dict(
        name=dict(type="str"),
        install_crd=dict(type="bool", default=False),
        spec=dict(type="dict"),
        phase=dict(type="str", choices=list(STACK_PHASES)),
        phase_message=dict(type="str"),
        conditions=dict(type="list", elements="dict"),
        components=dict(type="list", elements="dict"),
        replace_components=dict(type="bool", default=False),
        devices=dict(type="list", elements="dict"),
        recipe=dict(type="dict"),
        events=dict(type="list", elements="raw"),
        observed_generation=dict(type="int"),
        reconcile=dict(type="dict"),
        catalog=dict(type="dict"),
    )
    spec.update(KUBE_ARG_SPEC)
    spec.update(STACK_STORE_ARG_SPEC)
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(**call_engine(module, "stack_status", lambda: update_status(module.params, check_mode=module.check_mode, diff=module._diff),
                                   requires=["kubernetes"], secrets=spec_secrets(module.params)))


if __name__ == "__main__":
    main()
