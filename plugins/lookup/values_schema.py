# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: values_schema
short_description: JSON Schema, CRD, validation or breaking changes of Helm chart values, on the controller
version_added: 0.1.0
author:
  - aicr.runtime maintainers (@aicr-runtime)
description:
  - The controller-side view of M(aicr.runtime.values_schema), with the same engine.
  - Each term is a source - a chart (directory, C(.tgz), C(oci://) reference or a chart name with O(repository))
    or a values file (a term ending in C(.yaml)/C(.yml) that is a file, not a chart directory).
  - Returns one element - the output (the schema, the CRD, the list of violations or the list of findings), or
    with O(result=all) the whole result dictionary.
  - A chart from a private repository or registry is pulled with O(repository_credentials), as the module does.
extends_documentation_fragment:
  - aicr.runtime.repository_credentials
options:
  _terms:
    description: Sources; at most one chart, any number of values files (merged in order).
    type: list
    elements: str
    required: false
  output:
    description: What to produce.
    type: str
    default: json_schema
    choices: [json_schema, crd, validate, compare]
  chart_version:
    description: Version to pull for a repository or C(oci://) chart.
    type: str
  repository:
    description: URL of the http(s) chart repository of the chart term.
    type: str
  helm_binary:
    description: The helm executable used to pull charts.
    type: str
    default: helm
  plain_http:
    description: Pull an C(oci://) chart over plain HTTP; for an https repository, skip certificate verification.
    type: bool
    default: false
  values:
    description: Values merged over the values files (validate).
    type: dict
  set:
    description: C(helm --set) style overrides (validate).
    type: list
    elements: str
  schema:
    description: JSON Schema (mapping or file) to validate against instead of the inferred one.
    type: raw
  draft:
    description: JSON Schema dialect.
    type: str
    default: "2020-12"
    choices: ["2020-12", "draft-07"]
  name:
    description: Chart name for the CRD names when there is no chart term.
    type: str
  group:
    description: CRD API group.
    type: str
  kind:
    description: CRD kind.
    type: str
  plural:
    description: CRD plural.
    type: str
  domain:
    description: Domain of the default group.
    type: str
    default: aicr.io
  api_version:
    description: CRD version name.
    type: str
  scope:
    description: Scope of the custom resource.
    type: str
    default: Namespaced
    choices: [Namespaced, Cluster]
  versions:
    description: Chart versions allowed in C(.spec.version).
    type: list
    elements: str
  preserve_unknown_fields:
    description: Keep unknown keys in every object of C(.spec.values).
    type: bool
    default: false
  old_crd:
    description: The current CRD (mapping, file or live name) for O(output=compare).
    type: raw
  new_crd:
    description: The proposed CRD (mapping or file); default the generated one.
    type: raw
  severities:
    description: Severity per check or rule (error, warn, ignore).
    type: dict
  compat_profile:
    description: Default severities and rules of O(output=compare) (C(aicr) or C(crdify)), as the module's option.
    type: str
    default: aicr
  k8s_schema_version:
    description: Kubernetes minor of the pinned definitions C($k8s/...) references resolve against (C(1.35), C(1.36), C(1.37)).
    type: str
    default: "1.37"
  fail_on_error:
    description: Raise an error when validation or comparison finds errors (the module's default is true).
    type: bool
    default: false
  kubeconfig:
    description: Kubeconfig path or mapping (live O(old_crd)).
    type: raw
  context:
    description: Kubeconfig context.
    type: str
  result:
    description: C(output) returns the output only; C(all) the whole result dictionary.
    type: str
    default: output
    choices: [output, all]
notes:
  - Errors are raised as lookup errors with the same one-line messages as the module.
  - A keyword that is not one of the options above (C(ouput=...)) is refused, naming the nearest option - never ignored.
  - A boolean option given a value that is no boolean (C(plain_http=perhaps)) is refused too - Ansible would read it as C(false).
"""

EXAMPLES = r"""
- name: The JSON Schema of a chart
  ansible.builtin.set_fact:
    gpu_schema: "{{ lookup('aicr.runtime.values_schema', 'charts/gpu-operator') }}"

- name: Violations of site values (a list, empty when valid)
  ansible.builtin.assert:
    that: lookup('aicr.runtime.values_schema', 'charts/gpu-operator', output='validate', values=site_values) | length == 0

- name: The schema of a chart in a private repository (credentials from a vault-encrypted variable)
  ansible.builtin.set_fact:
    agent_schema: >-
      {{ lookup('aicr.runtime.values_schema', 'example-agent', repository='https://charts.example.com/private',
                chart_version='1.2.0', repository_credentials=[{'url': 'https://charts.example.com/private',
                                                               'username': 'ci', 'password': vault_charts_password}]) }}

- name: The CRD of a values file alone
  ansible.builtin.debug:
    msg: "{{ lookup('aicr.runtime.values_schema', 'files/values.yaml', output='crd', name='demo') }}"
"""

RETURN = r"""
_raw:
  description: A one-element list holding the output (dict for json_schema/crd, list for validate/compare) or the whole result.
  type: list
  elements: raw
"""

import os

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup

_PASSED = ("output", "chart_version", "repository", "helm_binary", "plain_http", "values", "set", "schema", "draft", "name", "group", "kind", "plural",
           "domain", "api_version", "scope", "versions", "preserve_unknown_fields", "old_crd", "new_crd", "severities", "compat_profile",
           "k8s_schema_version", "fail_on_error", "kubeconfig", "context", "repository_credentials")


def split_terms(terms):
    """(chart or None, [values files]) from the lookup terms."""
    chart, files = None, []
    for term in terms or []:
        term = str(term)
        path = os.path.expanduser(term)
        if term.endswith((".yaml", ".yml")) and os.path.isfile(path):
            files.append(path)
        elif chart is None:
            chart = term
        else:
            raise AnsibleLookupError("values_schema lookup: more than one chart given (%r and %r); allowed: one chart and values files" % (chart, term))
    return chart, files


class LookupModule(EngineLookup):

    name = "values_schema lookup"

    def evaluate(self, terms, variables):
        chart, files = split_terms(terms)
        params = dict((key, self.get_option(key)) for key in _PASSED)
        params["chart"] = chart
        params["values_files"] = files
        result = engine.run(params)
        failure = result.pop("failed_message", None)
        if failure:
            raise AnsibleLookupError(failure)
        self.warn(result)
        if self.get_option("result") == "all":
            return [result]
        return [result[engine.RESULT_KEYS[params["output"]]]]
