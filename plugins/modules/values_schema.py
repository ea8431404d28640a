#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: values_schema
short_description: Helm values.yaml to JSON Schema and CRD, values validation and CRD breaking-change reports
version_added: "0.1.0"
description:
  - Infers a schema from a chart's C(values.yaml), with subcharts merged under their keys. Types come from the YAML tags;
    descriptions and annotations come from the comments (plain blocks, helm-docs, bitnami C(@param), losisin C(@schema), C(@type)).
  - O(output=json_schema) returns a JSON Schema (draft 2020-12, or draft-07 as Helm uses) usable as C(values.schema.json).
  - O(output=crd) returns an C(apiextensions.k8s.io/v1) CustomResourceDefinition with the values under C(.spec.values),
    checked to be a structural schema.
  - O(output=validate) validates values (files, a mapping and C(--set) overrides) and returns every violation.
  - O(output=compare) reports breaking changes between two CRDs (crdify rules) with configurable severities.
  - O(dest) writes the result to a file, idempotently.
  - Documentation hints (bitnami readme-generator C([object]), helm-docs C((type))) only type null leaves. The chart's own values are then
    validated against the generated JSON Schema and CRD; a node that rejects its default is widened to admit it, with a warning naming the
    path and the annotation. Unknown annotation keys give a warning.
  - References (C($ref), C(itemRef)) are resolved offline - losisin's C($k8s/...) alias against pinned Kubernetes definitions
    (O(k8s_schema_version)), relative and C(file:) paths against the values file - bundled into C($defs) in the JSON Schema and
    dereferenced inline in the CRD. A reference that cannot be resolved offline is dropped with a warning.
  - A null leaf without an annotation is typed from the chart's commented-out example of it, or, for a documented list of Kubernetes
    well-known keys (C(resources), C(affinity), C(tolerations), C(hostUsers), C(minAvailable)...), from the pinned Kubernetes
    definitions; nothing else is guessed from a name.
  - A recursive YAML alias (a collection containing an alias of itself) becomes a local C($ref) cycle in the JSON Schema and is cut with
    C(x-kubernetes-preserve-unknown-fields) in the CRD, with a warning.
author:
  - aicr.runtime maintainers (@aicr-runtime)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.repository_credentials
attributes:
  check_mode:
    support: full
    details: Nothing is written in check mode; C(changed) and C(diff) tell what O(dest) would become.
  diff_mode:
    support: full
    details: With O(dest), the diff shows the file before and after.
  idempotent:
    support: full
options:
  output:
    description: What to produce. The result is returned under RV(schema), RV(crd), RV(errors) or RV(findings).
    type: str
    choices: [json_schema, crd, validate, compare]
    default: json_schema
  chart:
    description:
      - A chart directory, a packaged C(.tgz), an C(oci://) reference, or a chart name in O(repository) (fetched with C(helm pull),
        with O(repository_credentials) where the repository or registry needs them).
    type: str
  chart_version:
    description: Version to pull for a repository or C(oci://) chart.
    type: str
  repository:
    description: URL of an http(s) chart repository holding O(chart); also where O(discover_versions) reads C(index.yaml).
    type: str
  helm_binary:
    description: The helm executable used to pull charts from repositories.
    type: str
    default: helm
  plain_http:
    description:
      - Pull an C(oci://) chart over plain HTTP (C(helm pull --plain-http)), for a registry without TLS such as a
        local mirror; for an https repository, skip its certificate verification (C(--insecure-skip-tls-verify)).
    type: bool
    default: false
  values_files:
    description:
      - Values files merged in order (later wins). For O(output=json_schema)/O(output=crd) they add to the schema's sources;
        for O(output=validate) they are the values validated.
    type: list
    elements: path
  values:
    description: Values (a mapping) merged over O(values_files) for O(output=validate).
    type: dict
  set:
    description: C(helm --set) style overrides (C(a.b=1), C(list[0].x=y), C({a,b}) lists), applied last for O(output=validate).
    type: list
    elements: str
  set_string:
    description: Like O(set), every value kept as a string (C(helm --set-string)).
    type: list
    elements: str
  schema:
    description: For O(output=validate), a JSON Schema (a mapping or a file) to validate against instead of the one inferred from O(chart).
    type: raw
  draft:
    description: JSON Schema dialect of O(output=json_schema).
    type: str
    choices: ["2020-12", "draft-07"]
    default: "2020-12"
  name:
    description:
      - Chart name used to derive the CRD names when there is no O(chart) (default the values file's directory name).
      - A DNS-1123 label, used as it is (the default group is C(<name>.bundles.<domain>)); any other is refused, never folded
        into one.
    type: str
  group:
    description: CRD API group (default C(<chart>.bundles.<domain>)); a DNS-1123 subdomain with at least one dot.
    type: str
  kind:
    description: CRD kind (default the chart name in CamelCase); CamelCase letters and digits, at most 63 characters.
    type: str
  plural:
    description: CRD plural (default the lower-case kind plus C(s)); a DNS-1035 label.
    type: str
  domain:
    description: Domain of the default group; a DNS-1123 subdomain.
    type: str
    default: aicr.io
  api_version:
    description: Version name of the CRD (C(v1alpha1) when unset); a DNS-1035 label.
    type: str
  scope:
    description: Scope of the custom resource.
    type: str
    choices: [Namespaced, Cluster]
    default: Namespaced
  versions:
    description: Chart versions allowed in C(.spec.version) (an enum); each a non-empty string, listed once.
    type: list
    elements: str
  discover_versions:
    description: Read the chart's versions from O(repository)'s C(index.yaml) for the C(.spec.version) enum.
    type: bool
    default: false
  preserve_unknown_fields:
    description: Keep unknown keys in every object of C(.spec.values) instead of pruning them (free-form maps always keep them).
    type: bool
    default: false
  old_crd:
    description: For O(output=compare), the current CRD - a mapping, a YAML/JSON file, or the name of a live CRD (C(<plural>.<group>)).
    type: raw
  new_crd:
    description: For O(output=compare), the proposed CRD (a mapping or a file); default the CRD generated from the sources.
    type: raw
  severities:
    description:
      - Severity (C(error), C(warn), C(ignore)) per check (e.g. C(enum_value_added)) or per crdify rule name (e.g. C(description)).
    type: dict
  k8s_schema_version:
    description:
      - Kubernetes minor whose pinned API definitions resolve losisin C($k8s/_definitions.json#/definitions/...) references, offline,
        and type the Kubernetes well-known keys a chart leaves null.
      - The definitions ship with the collection (trimmed from the PyPI package kubernetes-validate); nothing is fetched.
    type: str
    choices: ["1.35", "1.36", "1.37"]
    default: "1.37"
  compat_profile:
    description:
      - Default severities and rules of O(output=compare).
      - C(aicr) reports a description change, an added default, an added C(nullable) and a removed pattern as warnings or not at all
        (existing objects stay valid), and adds crd-schema-checker's rules (a new required field under a new required parent, a new
        field with a minimum size).
      - C(crdify) gives crdify v0.5.0's findings (every finding an error, its rules only; a change of a keyword none of its rules compares
        is its C(unhandled) error).
    type: str
    choices: [aicr, crdify]
    default: aicr
  fail_on_error:
    description: Fail when O(output=validate) finds violations or O(output=compare) finds findings of severity error.
    type: bool
    default: true
  kubeconfig:
    description: Path to a kubeconfig, or its content as a mapping, to read a live O(old_crd).
    type: raw
  context:
    description: Kubeconfig context.
    type: str
  dest:
    description: Write the result (schema, CRD, errors or findings) to this file; JSON when it ends in C(.json), YAML otherwise.
    type: path
  dest_format:
    description: Format of O(dest).
    type: str
    choices: [auto, json, yaml]
    default: auto
notes:
  - Every option is checked in one pass before a chart is pulled, a file read or a cluster contacted (choices, the CRD names by
    apiextensions' rules, types, O(versions), every O(set)/O(set_string) expression, O(severities), what O(output) needs);
    every problem found is listed in C(errors), C(msg) is the first one's line.
  - Values files, O(values), the result of O(set), O(schema) and the CRDs are held to the collection's input limits (bytes,
    nodes, alias nodes, depth; C(AICR_RUNTIME_MAX_*), see C(docs/troubleshooting.md#limits)) - a YAML alias bomb is refused
    unexpanded, naming the file.
  - Remote C($ref) in schemas are never fetched during validation; they accept any value and a warning is returned.
  - Details of the inference rules and of the differences with other generators are in C(docs/modules/values_schema.md).
requirements:
  - jsonschema (for O(output=validate))
  - kubernetes (for a live O(old_crd))
  - helm (for charts from repositories)
seealso:
  - plugin: aicr.runtime.values_schema
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Write values.schema.json for a chart
  aicr.runtime.values_schema:
    chart: charts/gpu-operator
    output: json_schema
    draft: draft-07
    dest: charts/gpu-operator/values.schema.json

- name: CRD for a chart from a repository, with the versions it offers
  aicr.runtime.values_schema:
    chart: gpu-operator
    repository: https://helm.ngc.nvidia.com/nvidia
    chart_version: v25.3.0
    discover_versions: true
    output: crd
  register: api

- name: JSON Schema of a chart in a private repository (basic auth and a private CA; the password only in a private file)
  aicr.runtime.values_schema:
    chart: gpu-operator
    repository: https://charts.internal/nvidia
    chart_version: v25.3.0
    discover_versions: true
    output: crd
    repository_credentials:
      - url: https://charts.internal/nvidia
        username: "{{ charts_user }}"
        password: "{{ charts_password }}"
        ca_file: /etc/pki/internal-ca.pem

- name: Validate site values before an install
  aicr.runtime.values_schema:
    chart: charts/gpu-operator
    output: validate
    values_files: [site/gpu-operator.yaml]
    set: ["driver.enabled=false"]

- name: Refuse breaking changes against the live CRD
  aicr.runtime.values_schema:
    chart: charts/gpu-operator
    output: compare
    old_crd: gpuoperators.gpu-operator.bundles.aicr.io
    severities:
      enum_value_added: warn
"""

RETURN = r"""
schema:
  description: The JSON Schema (O(output=json_schema)).
  returned: output is json_schema
  type: dict
crd:
  description: The CustomResourceDefinition (O(output=crd)).
  returned: output is crd
  type: dict
dropped:
  description: JSON-Schema-only annotation keywords that a structural CRD cannot carry ({path, keyword, value, reason}).
  returned: output is crd
  type: list
  elements: dict
errors:
  description: Every violation, each {path, value, rule, constraint, message, schema_path}.
  returned: output is validate
  type: list
  elements: dict
  sample: [{"path": "driver.enabled", "value": "yes", "rule": "type", "constraint": "boolean", "message": "'yes' is not of type 'boolean'"}]
valid:
  description: Whether the values validate.
  returned: output is validate
  type: bool
findings:
  description:
    - Breaking-change findings, each {rule, check, version, path, message, severity}; ignored ones are left out.
    - C(version) is the CRD version compared, C(<older> -> <newer>) for two served versions of the new CRD, null for the whole CRD.
  returned: output is compare
  type: list
  elements: dict
  sample: [{"rule": "type", "check": "type_changed", "version": "v1alpha1", "path": "^.spec.values.port",
            "message": "type changed : \"integer\" -> \"string\"", "severity": "error"}]
breaking:
  description: Whether any finding has severity error.
  returned: output is compare
  type: bool
old_found:
  description: Whether O(old_crd) exists (false for a live name the cluster does not have; no findings then).
  returned: output is compare
  type: bool
summary:
  description: One line counting errors and warnings, listing the first errors.
  returned: output is compare
  type: str
chart:
  description: Name, version, app_version and subchart keys of the chart read.
  returned: when chart is given
  type: dict
dest:
  description: The file written (or that would be written).
  returned: when dest is given
  type: str
actions:
  description: What was done (or would be done in check mode).
  returned: when dest is given
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._helm.repositories import REPOSITORY_CREDENTIALS_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine

ARGUMENT_SPEC = dict(
    output=dict(type="str", default="json_schema", choices=["json_schema", "crd", "validate", "compare"]),
    chart=dict(type="str"),
    chart_version=dict(type="str"),
    repository=dict(type="str"),
    helm_binary=dict(type="str", default="helm"),
    plain_http=dict(type="bool", default=False),
    repository_credentials=REPOSITORY_CREDENTIALS_SPEC,
    values_files=dict(type="list", elements="path"),
    values=dict(type="dict"),
    set=dict(type="list", elements="str"),
    set_string=dict(type="list", elements="str"),
    schema=dict(type="raw"),
    draft=dict(type="str", default="2020-12", choices=["2020-12", "draft-07"]),
    name=dict(type="str"),
    group=dict(type="str"),
    kind=dict(type="str"),
    plural=dict(type="str"),
    domain=dict(type="str", default="aicr.io"),
    api_version=dict(type="str"),
    scope=dict(type="str", default="Namespaced", choices=["Namespaced", "Cluster"]),
    versions=dict(type="list", elements="str"),
    discover_versions=dict(type="bool", default=False),
    preserve_unknown_fields=dict(type="bool", default=False),
    old_crd=dict(type="raw"),
    new_crd=dict(type="raw"),
    severities=dict(type="dict"),
    compat_profile=dict(type="str", default="aicr", choices=["aicr", "crdify"]),
    k8s_schema_version=dict(type="str", default="1.37", choices=["1.35", "1.36", "1.37"]),
    fail_on_error=dict(type="bool", default=True),
    kubeconfig=dict(type="raw", no_log=False),  # its secrets alone become no_log values (call_engine -> require_libraries)
    context=dict(type="str"),
    dest=dict(type="path"),
    dest_format=dict(type="str", default="auto", choices=["auto", "json", "yaml"]),
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
        required_if=[("output", "compare", ["old_crd"])],
    )
    requires = ["PyYAML", "jsonschema"] if module.params["output"] == "validate" else ["PyYAML"]
    module.exit_json(**call_engine(module, "values_schema", lambda: engine.run(dict(module.params), check_mode=module.check_mode), requires=requires))


if __name__ == "__main__":
    main()
