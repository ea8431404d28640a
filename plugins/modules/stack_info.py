#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: stack_info
short_description: List ClusterStacks (or inventory stacks kept in ConfigMaps) with their reconcile decision
version_added: 0.1.0
description:
  - Lists the C(runtime.aicr.io/v1alpha1) C(ClusterStack) objects of a cluster (or, with O(backend=configmap), the stacks
    whose spec and status live in C(aicr-stack-<name>) ConfigMaps) and decides for each whether a converge run is needed.
  - "Decision, first match wins: C(spec.suspend) - skip; no status yet; C(metadata.generation) differs from
    C(status.observedGeneration); the C(runtime.aicr.io/reconcile-requested) annotation differs from the value the last run
    handled; the last run did not end C(Ready); a newer catalog release with autoUpdate on; the resync interval
    (O(resync_interval), or the stack's C(spec.resyncInterval)) elapsed since C(status.reconcile.lastReconcileTime)."
  - Also selects the catalog release to resolve from (see the ClusterStack documentation for release directories) and
    whether C(autoUpdate) came from the stack or from O(auto_update).
  - autoUpdate moves a stack to a newer release only when the M(aicr.runtime.upgrade_plan) of the move is C(safe) (its
    criteria resolved on both releases, on the controller); otherwise the stack keeps its release and RV(stacks[].catalog)
    says why (C(held_back)).
  - With O(backend=configmap) a stack is only the ConfigMap C(aicr-stack-<name>) labelled C(runtime.aicr.io/stack=<name>)
    that the collection wrote (field manager C(aicr-runtime)); every other labelled ConfigMap of O(namespace) is a foreign
    claim - never listed as a stack, reported in RV(foreign_claims) and as a warning starting C(foreign claim:). Two
    ConfigMaps with that field manager that claim one stack (by name or by label) refuse that stack (RV(refused)). With
    O(backend=crd), a ClusterStack whose name is no valid stack name is refused.
author:
  - aicr.runtime contributors (@aicr)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.kube
  - aicr.runtime.stack_store
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Never changes anything.
requirements:
  - kubernetes (Python package)
options:
  names:
    description:
      - Only these stacks; all when empty.
      - Each a stack name - a DNS-1123 label (lowercase letters, digits and C(-), starting and ending with a letter or digit, at
        most 63 characters); any other fails before the cluster is contacted.
    type: list
    elements: str
    default: []
  resync_interval:
    description:
      - Operator-level resync interval (seconds, or a duration like C(5m)); a stack's C(spec.resyncInterval) wins.
      - 0 or more; C(0) converges every stack on every run. Checked, with every other option, before the cluster is contacted.
    type: raw
    default: 300
  auto_update:
    description:
      - Operator-level default of C(autoUpdate); a stack's C(spec.autoUpdate) wins.
    type: bool
    default: false
  show_values:
    description:
      - Return each spec as it is, secrets included.
      - With V(false) (the default) the secret values of RV(stacks[].spec) are C(<hidden>) - the default
        O(aicr.runtime.gated_release#module:sensitive_values) rule over the whole spec (C(componentOverrides.*.values) keys
        such as C(password), C(token), C(dsn)), and the password of any URL with userinfo (C(repositoryMirrors)).
      - With V(true) put C(no_log=true) on the task; Ansible's output and AWX's job events keep a task's whole result.
    type: bool
    default: false
seealso:
  - module: aicr.runtime.stack_status
"""

EXAMPLES = r"""
- name: Which stacks need a run
  aicr.runtime.stack_info:
    resync_interval: 10m
  register: stacks

- name: Show them
  ansible.builtin.debug:
    msg: "{{ stacks.stacks | map(attribute='name') | zip(stacks.stacks | map(attribute='reason')) | list }}"
"""

RETURN = r"""
crd_installed:
  description: Whether the ClusterStack CRD is installed (O(backend=crd)); without it the list is empty.
  returned: when O(backend=crd)
  type: bool
stacks:
  description: Every stack with its spec, status, catalog selection and decision.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: Stack name., type: str}
    generation: {description: C(metadata.generation)., type: int}
    annotations: {description: The object's annotations., type: dict}
    spec: {description: "Desired state; its secret values C(<hidden>) unless O(show_values=true).", type: dict}
    status: {description: Observed state., type: dict}
    needs_converge: {description: Whether a converge run is needed., type: bool}
    reason: {description: Why (or why not)., type: str}
    decision:
      description: C(needs_converge), C(reason), C(suspended), C(resync_seconds), C(reconcile_request), C(generation),
        C(observed_generation), and C(catalog_error) when the catalog cannot be selected.
      type: dict
    catalog:
      description: C(path) and C(version) to resolve from, C(latest), C(versioned), C(current), C(upgrade), C(message),
        C(auto_update) and C(auto_update_source) (C(spec) or C(default)); with autoUpdate and a newer release, C(plan) when
        its M(aicr.runtime.upgrade_plan) verdict is C(safe), else C(held_back) (C(version), C(verdict), C(reasons)) and
        the stack keeps its release.
      type: dict
  sample:
    - name: gpu-training
      generation: 2
      needs_converge: true
      reason: generation 2 != observedGeneration 1
converge:
  description: Names of the stacks that need a converge run.
  returned: always
  type: list
  elements: str
foreign_claims:
  description:
    - ConfigMaps of O(namespace) labelled C(runtime.aicr.io/stack) that are no stack's (O(backend=configmap); always empty with
      O(backend=crd)) - whatever O(names) says. Each is also a warning, its C(message).
  returned: always
  type: list
  elements: dict
  contains:
    kind: {description: C(ConfigMap)., type: str}
    namespace: {description: Its namespace., type: str}
    name: {description: Its name., type: str}
    claims_stack: {description: "The stack its C(runtime.aicr.io/stack) label names (empty when none).", type: str}
    reason: {description: "Why it is not that stack's - its name, its label or its field managers.", type: str}
    managers: {description: "Its field managers (C(metadata.managedFields[].manager)).", type: list, elements: str}
    message: {description: "The warning - C(foreign claim: ConfigMap <namespace>/<name> (claims stack <s>) <reason>; ignored).", type: str}
  sample:
    - kind: ConfigMap
      namespace: aicr-system
      name: evil
      claims_stack: gpu
      reason: is not named aicr-stack-<stack name> (a DNS-1123 label)
      managers: [kubectl-create]
      message: "foreign claim: ConfigMap aicr-system/evil (claims stack gpu) is not named aicr-stack-<stack name> (a DNS-1123 label); ignored"
refused:
  description:
    - Stacks (of O(names), or all) that are not listed in RV(stacks) because the store cannot tell which object is theirs - two
      ConfigMaps written with field manager C(aicr-runtime) claim them, or a ClusterStack's name is no valid stack name. Each
      is also a warning; the stack_reconcile role counts each as a failed stack.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: The stack., type: str}
    msg: {description: "One line naming the ConfigMaps (or the name) and what is allowed.", type: str}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._stack.engine import info
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import STACK_STORE_ARG_SPEC


def argument_spec():
    spec = dict(
        names=dict(type="list", elements="str", default=[]),
        resync_interval=dict(type="raw", default=300),
        auto_update=dict(type="bool", default=False),
        show_values=dict(type="bool", default=False),
    )
    spec.update(KUBE_ARG_SPEC)
    spec.update(STACK_STORE_ARG_SPEC)
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    # foreign claims and refused stacks become Ansible warnings (call_engine)
    module.exit_json(**call_engine(module, "stack_info", lambda: info(module.params), requires=["kubernetes"]))


if __name__ == "__main__":
    main()
