#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: crd_publish
short_description: Publish a CustomResourceDefinition - refuse breaking changes, server-side apply, wait until Established
version_added: "0.1.0"
description:
  - Publishes a C(apiextensions.k8s.io/v1) CustomResourceDefinition, typically the one M(aicr.runtime.values_schema) generates
    from a Helm chart (O(aicr.runtime.values_schema#module:output=crd)).
  - Compares the new CRD with the live one using the breaking-change rules of M(aicr.runtime.values_schema) (crdify rules such as
    a field removed, a type changed, an enum value removed). Any finding of severity C(error) refuses the update, with every finding
    listed in the message and in RV(findings), unless O(allow_breaking=true).
  - Applies the CRD with server-side apply (field manager C(aicr-runtime)). A server-side dry-run apply is compared with the live
    object first, so a CRD that would not change is never written.
  - With O(wait), waits until the conditions C(Established) and C(NamesAccepted) are C(True) and the accepted names are the
    applied ones. C(NamesAccepted=False) (a name another CRD already uses) fails at once.
  - O(state=absent) deletes the CRD - and with it every custom resource of its kind - only when this collection manages it (the
    field manager C(aicr-runtime) holds fields of it and it carries the label C(app.kubernetes.io/managed-by=aicr-runtime)).
    Any other CRD of that name is refused naming its field managers and label, unless O(adopt=true).
  - With O(state=present) the CRD gets the label C(app.kubernetes.io/managed-by=aicr-runtime) when its definition sets none
    (CRDs from M(aicr.runtime.values_schema) carry it already), so that O(state=absent) can remove it again.
author:
  - aicr.runtime contributors (@aicr)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.kube
attributes:
  check_mode:
    support: full
    details: Reads the live CRD and runs the server-side dry-run apply; nothing is written and nothing is waited for.
  diff_mode:
    support: full
    details: The CRD before and after (server-owned metadata and status left out); after is the dry-run apply's answer.
  idempotent:
    support: full
    details: A CRD equal to the live one (as the server would store it) makes no mutating call.
requirements:
  - kubernetes (Python package)
  - PyYAML (Python package), for a CRD given as YAML text or a file
options:
  definition:
    description:
      - The CRD to publish, as a mapping (for example RV(aicr.runtime.values_schema#module:crd)) or as YAML/JSON text (its first
        CustomResourceDefinition document).
      - Mutually exclusive with O(src).
    type: raw
  src:
    description:
      - A YAML or JSON file holding the CRD (its first CustomResourceDefinition document).
      - Mutually exclusive with O(definition).
    type: path
  state:
    description:
      - C(present) creates or updates the CRD; C(absent) deletes it (every custom resource of its kind is deleted with it) when
        this collection manages it (see O(adopt)).
    type: str
    choices: [present, absent]
    default: present
  allow_breaking:
    description:
      - Apply the CRD even when the comparison with the live CRD finds breaking changes (findings of severity C(error)).
      - Existing custom resources may no longer validate, or lose pruned fields, after such an update.
    type: bool
    default: false
  severities:
    description:
      - Severity per check or per rule (C(error), C(warn) or C(ignore)), as O(aicr.runtime.values_schema#module:severities).
      - "For example C({enum_value_removed: warn})."
    type: dict
  force_conflicts:
    description:
      - Take over fields that other field managers own (server-side apply C(force=true)). Without it, such a conflict fails
        and names the fields.
    type: bool
    default: false
  adopt:
    description:
      - With O(state=absent), delete the CRD even when this collection does not manage it - when the field manager
        C(aicr-runtime) holds no field of it or its label C(app.kubernetes.io/managed-by) is not C(aicr-runtime) (another
        operator's CRD, a Helm chart's, one applied by hand). Every custom resource of its kind is deleted with it.
      - With V(false) (the default) such a CRD is left alone and the task fails naming its field managers and label.
      - The delete names the uid and resourceVersion that were read, so a CRD replaced or changed in between is not deleted.
    type: bool
    default: false
  wait:
    description:
      - Wait until the CRD is C(Established) with its names accepted (with O(state=absent), until it is gone).
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for O(wait), more than 0 and at most 86400 (a C(0) is refused; use O(wait=false) not to wait).
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between two reads of the CRD while waiting, more than 0 and at most 60.
    type: float
    default: 1
notes:
  - The cluster is reached with the Python C(kubernetes) client only; C(kubernetes.core) is not needed.
  - The options and the definition are checked in one pass before the cluster is contacted - the CRD's group, kind, plural,
    singular, listKind, scope and version names by apiextensions' rules; every problem found is listed in C(errors), C(msg) is
    the first one's line.
seealso:
  - module: aicr.runtime.values_schema
"""

EXAMPLES = r"""
- name: Generate the CRD of a chart
  aicr.runtime.values_schema:
    chart: ./charts/example-operator
    output: crd
  register: generated

- name: Publish it and wait until it is Established
  aicr.runtime.crd_publish:
    definition: "{{ generated.crd }}"
    kubeconfig: ~/.kube/lab
    wait_timeout: 60

- name: Publish an update that removes values keys (existing custom resources lose them)
  aicr.runtime.crd_publish:
    src: ./build/exampleoperators.yaml
    allow_breaking: true

- name: Remove the CRD and every custom resource of its kind (only if aicr.runtime manages it)
  aicr.runtime.crd_publish:
    definition: "{{ generated.crd }}"
    state: absent

- name: Remove a CRD that another tool installed (with every custom resource of its kind)
  aicr.runtime.crd_publish:
    src: ./legacy/exampleoperators.yaml
    state: absent
    adopt: true
"""

RETURN = r"""
name:
  description: The CRD's name (C(<plural>.<group>)).
  returned: always
  type: str
  sample: exampleoperators.example-operator.bundles.aicr.io
action:
  description: C(create), C(update), C(unchanged), C(delete) or C(absent) (nothing to delete).
  returned: always
  type: str
  sample: update
actions:
  description: What was done (or would be done, in check mode), one line each.
  returned: always
  type: list
  elements: str
old_found:
  description: Whether the cluster had the CRD before this task.
  returned: always
  type: bool
findings:
  description:
    - Breaking-change findings of the new CRD against the live one (empty on first publication), each with C(rule), C(check),
      C(version), C(path), C(message) and C(severity). Also returned when the update is refused.
  returned: with O(state=present)
  type: list
  elements: dict
  sample:
    - {rule: existingFieldRemoval, check: field_removed, version: v1alpha1, path: "^.spec.values.logLevel",
       message: "removed field : ^.spec.values.logLevel", severity: error}
breaking:
  description: Whether any finding has severity C(error).
  returned: with O(state=present)
  type: bool
summary:
  description: One line counting breaking changes and warnings, with the first few listed.
  returned: with O(state=present)
  type: str
established:
  description: Whether the CRD is Established with its names accepted (always false in check mode for a new or changed CRD).
  returned: with O(state=present)
  type: bool
conditions:
  description: The CRD's conditions by type (C(status), C(reason), C(message)).
  returned: with O(state=present)
  type: dict
  sample: {Established: {status: "True", reason: InitialNamesAccepted, message: the initial names have been accepted}}
waited:
  description: Seconds spent waiting.
  returned: when O(wait) waited (not in check mode)
  type: float
crd:
  description: The CRD as the cluster holds it (in check mode, as it would), without C(managedFields).
  returned: with O(state=present)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._schema.publish import publish


def argument_spec():
    spec = dict(
        definition=dict(type="raw"),
        src=dict(type="path"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        allow_breaking=dict(type="bool", default=False),
        severities=dict(type="dict"),
        force_conflicts=dict(type="bool", default=False),
        adopt=dict(type="bool", default=False),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=120),
        wait_sleep=dict(type="float", default=1),
    )
    spec.update(KUBE_ARG_SPEC)
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True, mutually_exclusive=[("definition", "src")],
                           required_one_of=[("definition", "src")])
    module.exit_json(**call_engine(module, "crd_publish", lambda: publish(module.params, check_mode=module.check_mode), requires=["kubernetes"]))


if __name__ == "__main__":
    main()
