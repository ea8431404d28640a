#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: recipe_resolve
short_description: Resolve an AICR recipe from criteria, exactly as AICR v0.19.0 does
version_added: 0.1.0
description:
  - Resolves a recipe from an AICR recipe catalog (an AICR C(recipes/) directory or a C(.tar.gz) of one)
    for the given criteria, with the semantics of NVIDIA AI Cluster Runtime v0.19.0 (C(pkg/recipe)).
  - Overlays whose criteria match are merged over C(base) along their inheritance chains, mixins are
    composed, a configuration profile is applied, registry defaults are filled in and the deployment
    order is computed (topological, ties broken alphabetically).
  - Returns the AICR C(RecipeResult) and, for deployers, the managed components in deployment order
    with chart, repository, version, namespace, effective Helm values and manifest files.
  - Secret values (O(sensitive_values)) are C(<hidden>) in the result unless O(show_values=true).
  - The module only reads files; it never changes anything (C(changed) is always C(false)).
    The parsed catalog is cached by content digest under O(cache_dir).
author:
  - aicr.runtime maintainers (@aicr-runtime)
extends_documentation_fragment:
  - aicr.runtime.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads the catalog; check mode returns the same result.
      - In check mode the parsed-catalog cache is read but not written (an archive is still unpacked into O(cache_dir)).
  diff_mode:
    support: none
    details: Nothing is changed, so there is no diff.
  idempotent:
    support: full
options:
  catalog:
    description:
      - Path to an AICR recipe catalog - a C(recipes/) directory (with C(overlays/base.yaml) and
        C(registry.yaml)) or a C(.tar.gz)/C(.tgz) of one, with or without a single top folder.
    type: path
    required: true
  criteria:
    description:
      - Recipe criteria, a mapping of the keys below. Unset (or C(any)) dimensions are unstated. Values are trimmed and lowercased.
      - C(service) - Kubernetes service, for example C(eks), C(gke), C(aks), C(oke), C(kind), C(lke), C(bcm), C(ocp);
        C(self-managed), C(self) and C(vanilla) mean unstated; C(openshift) means C(ocp).
      - C(accelerator) - GPU type, for example C(h100), C(gb200), C(b200), C(a100), C(l40s), C(rtx-pro-6000).
      - C(intent) - workload intent, C(training) or C(inference).
      - C(os) - worker node OS, for example C(ubuntu), C(cos), C(ol). C(al2) and C(al2023) mean C(amazonlinux).
      - C(platform) - platform layer, for example C(kubeflow), C(dynamo), C(nim), C(slurm).
      - C(nodes) - number of worker nodes (metadata only; C(0) means unstated), an integer from C(0) to C(100000).
      - The dimensions are strings. Anything but a mapping, a key not listed here (named with the nearest one) and a value
        of the wrong type are refused before the catalog is read, each problem listed in C(errors).
    type: raw
    default: {}
  profile:
    description:
      - Configuration profile selection C(name=value), for example C(gpuStack=operator-managed).
      - When omitted, the default value of the profile declared by the resolved overlays applies.
    type: str
  skip_components:
    description:
      - Components to leave out of the rollout. They stay in the recipe, disabled (C(overrides.enabled=false)),
        and count as provided externally for their dependents, as AICR does for disabled components.
    type: list
    elements: str
    default: []
  component_overrides:
    description:
      - Per-component changes applied after resolution, keyed by component name. An unknown key is refused naming the nearest one;
        C(namespace) is a DNS-1123 label.
      - C(version) and C(namespace) replace the resolved ones; C(values) is merged last into the effective
        Helm values (maps merge recursively, C(null) deletes a key); C(enabled=false) disables the component.
    type: dict
    default: {}
  cache_dir:
    description:
      - Directory for the parsed-catalog cache and for unpacked catalog archives.
      - Defaults to C($AICR_RUNTIME_CACHE_DIR), else C($XDG_CACHE_HOME/aicr-runtime), else C(~/.cache/aicr-runtime).
      - The compiled code of the collection's own modules is kept under the default directory, never under this one,
        since a module's imports run before its options are read.
    type: path
  use_cache:
    description:
      - Persist and reuse the parsed catalog metadata in O(cache_dir), keyed by the catalog digest.
    type: bool
    default: true
  show_values:
    description:
      - Return the effective Helm values as they are, secrets included (RV(components[].values), the recipe's
        C(componentRefs[].overrides)).
      - With V(false) (the default) everything secret by O(sensitive_values) is C(<hidden>) in the result and RV(values_hidden)
        says whether anything was; the strings of secret values given in O(component_overrides) (4 characters or longer)
        are masked in all of the task's output, its C(invocation) included. Such a result is for reading (names, versions,
        order, digest); M(aicr.runtime.gated_release) refuses to deploy it - give gated_release O(aicr.runtime.gated_release#module:resolve)
        instead, which resolves in its own process and returns no values.
      - With V(true) nothing is hidden, not even O(component_overrides) in C(invocation); put C(no_log=true) on the task,
        since Ansible's output and AWX's job events keep a task's whole result.
    type: bool
    default: false
  sensitive_values:
    description:
      - Which Helm values are secret, as O(aicr.runtime.gated_release#module:sensitive_values) - key names (matched by
        their words, in any case - V(password) hides C(adminPassword) and C(DB_PASSWORD)) and dotted paths.
      - A URL with a user name and password in any value shows its password as C(<hidden>) whatever its key.
    type: list
    elements: str
    default: [password, passwd, token, secret, apiKey, key, credentials, auth, dsn, connectionString]
  snapshot:
    description:
      - Resolve against a snapshot of the cluster, as C(aicr recipe --snapshot) does - an AICR C(Snapshot) mapping,
        the registered result of M(aicr.runtime.cluster_facts), or the path of a Snapshot YAML/JSON file.
      - "A document with neither C(kind: Snapshot) nor C(measurements) is no Snapshot and is refused."
      - The snapshot's C(apiVersion) is C(aicr.run/v1alpha2) (AICR v0.19.0); one M(aicr.runtime.cluster_facts) wrote before
        as C(aicr.nvidia.com/v1alpha1) is read with a warning.
      - Criteria not given in O(criteria) are taken from the snapshot as AICR v0.19.0 fingerprints it (service from
        C(K8s.node.provider), accelerator from the C(nvidia.com/gpu.product) label over the nodes or the PCI model of
        C(GPU.hardware), OS from C(OS.release.ID), C(nodes) from C(NodeTopology.summary.node-count)); a snapshot that
        then states nothing is refused.
      - The constraints of each matched overlay, of the mixins and of the profile value are evaluated on the
        snapshot; overlays that fail are left out (C(recipe.metadata.excludedOverlays),
        C(recipe.metadata.constraintWarnings)). A reading the snapshot lacks excludes the overlay; a malformed
        constraint or an unparseable version fails the task (fail closed).
      - When the only uncovered dimensions came from the snapshot (none given in O(criteria)) they are cleared and the
        recipe is resolved once more (RV(relaxed_dimensions)).
      - The snapshot's GPU driver state (C(GPU.hardware) C(driver-loaded)) is recorded in
        C(recipe.metadata.gpuDriverState), and a preinstalled driver turns gpu-operator's driver off where the recipe
        already expects a preinstalled one, as AICR does.
    type: raw
  node_scheduling:
    description:
      - Node selectors, tolerations, node count and workload gate written into each component's values at the paths the
        catalog's C(registry.yaml) names (C(nodeScheduling), C(podScheduling)), as C(aicr bundle) v0.19.0 writes them from
        its flags; the values returned (and deployed by M(aicr.runtime.gated_release)) then equal the bundle's
        C(values.yaml) with C(cluster-values.yaml) for the same flags.
      - "A mapping: C(system) and C(accelerated), each C({node_selector: {label: value}, tolerations: [...]})
        (C(--system-node-selector)/C(--system-node-toleration), C(--accelerated-node-selector)/C(--accelerated-node-toleration));
        C(nodes), an integer written to C(nodeCountPaths) when more than 0 (C(--nodes)); C(workload_gate), a taint
        C(key=value:effect) or C(key:effect) written as that string to the accelerated C(taintStrPaths) (C(--workload-gate));
        C(workload_selector), labels written to C(workloadSelectorPaths) (C(--workload-selector))."
      - A toleration is a mapping (C(key), C(operator) V(Exists) or V(Equal), C(value), C(effect) V(NoSchedule),
        V(PreferNoSchedule) or V(NoExecute), C(tolerationSeconds)) or AICR's flag syntax (C(key=value:effect), C(key:effect), C(*)).
      - "Tolerations not given are AICR's default C([{operator: Exists}]), written even when this option is not given, as the
        bundle writes them with no flag; C(tolerations: []) writes none. A path the recipe's own C(overrides) set to an
        empty list or mapping is left alone; a toleration path they set to a non-empty list gets these tolerations appended;
        every other path is replaced."
      - The user's O(component_overrides) C(values) are merged after this and win, as C(--set-json) does.
      - Every problem is named by its field (for example C(node_scheduling.accelerated.tolerations[0].effect)) before the
        catalog is read.
    type: raw
notes:
  - Every option is checked in one pass before the catalog is read or unpacked (criteria keys and types, C(nodes) of O(criteria), the
    O(profile) form, O(skip_components), the shape of O(component_overrides), the kind of O(snapshot)); what only the catalog can
    say (a criteria value, a component the recipe lacks) once it is read. Every problem found is listed in C(errors); C(msg) is
    the first one's line.
  - Errors (bad criteria value, unknown profile, missing or malformed catalog files, unknown base,
    dependency cycles, duplicate mixins) fail the task with a one-line message naming the field or
    file, the value and what is allowed.
seealso:
  - name: AICR recipe data architecture
    description: Overlays, mixins, registry and criteria of the AICR recipe catalog.
    link: https://github.com/NVIDIA/aicr/tree/main/recipes
"""

EXAMPLES = r"""
- name: Resolve the H100 / EKS / Ubuntu / training recipe from a pinned AICR catalog
  aicr.runtime.recipe_resolve:
    catalog: /opt/aicr/recipes
    criteria:
      service: eks
      accelerator: h100
      os: ubuntu
      intent: training
  register: plan

- name: Show the rollout plan
  ansible.builtin.debug:
    msg: "{{ plan.recipe.deploymentOrder }}"

- name: Resolve from a catalog archive with a profile, a pinned version and a skipped component
  aicr.runtime.recipe_resolve:
    catalog: /opt/aicr/recipes-v0.19.0.tar.gz
    criteria: {service: aks, accelerator: h100, os: ubuntu, intent: training}
    profile: gpuStack=operator-managed
    skip_components: [nvsentinel]
    component_overrides:
      gpu-operator:
        version: v26.3.3
        values:
          driver: {version: "580.95.05"}
  register: plan

- name: Read the cluster, then resolve against what it is
  aicr.runtime.cluster_facts:
  register: facts

- name: Resolve for this cluster (criteria not given come from the snapshot; failing overlays are left out)
  aicr.runtime.recipe_resolve:
    catalog: /opt/aicr/recipes
    criteria: {intent: training}
    snapshot: "{{ facts }}"
  register: plan
"""

RETURN = r"""
recipe:
  description:
    - The AICR C(RecipeResult) as C(aicr recipe --format json) (v0.19.0) writes it for the same question - C(kind),
      C(apiVersion), C(metadata.version) (C(v0.19.0)), C(metadata.appliedOverlays), C(metadata.selectedProfile) (when a
      profile applies), C(criteria) (with C(nodes) when stated or fingerprinted), C(constraints), C(componentRefs),
      C(deploymentOrder), C(validation), C(configuration) (Slurm recipes).
    - With O(snapshot), C(metadata.excludedOverlays) (C(name), C(reason) C(constraint-failed) or
      C(mixin-constraint-failed)) and C(metadata.constraintWarnings) (C(overlay), C(constraint), C(expected),
      C(actual), C(reason)) when an overlay was left out, and C(metadata.gpuDriverState) (C(preinstalled), C(absent)).
  returned: success
  type: dict
  sample:
    kind: RecipeResult
    apiVersion: aicr.run/v1alpha2
    metadata: {version: v0.19.0, appliedOverlays: [base, eks, eks-training, h100-eks-training, h100-eks-ubuntu-training]}
    criteria: {service: eks, accelerator: h100, intent: training, os: ubuntu, platform: any}
    deploymentOrder: [cert-manager, nfd, gpu-operator]
components:
  description: The managed (enabled) components in deployment order.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Component (and Helm release) name.
      type: str
    order:
      description: Position in the deployment order (0-based).
      type: int
    type:
      description: Deployment type (C(Helm) or C(Kustomize)).
      type: str
    chart:
      description: Chart name (empty for manifest-only components).
      type: str
    chart_ref:
      description:
        - The chart reference to pass to Helm. For an OCI repository C(<repository>/<chart>), otherwise the
          chart name (use it with RV(components[].repository) as C(--repo)). Empty for manifest-only components.
      type: str
    repository:
      description: Chart repository URL (C(https://...) or C(oci://...)).
      type: str
    oci:
      description: Whether the repository is an OCI registry.
      type: bool
    version:
      description: Chart version.
      type: str
    namespace:
      description: Target namespace.
      type: str
    values:
      description:
        - Effective Helm values - the component's C(values.yaml), its C(valuesFile), the recipe C(overrides),
          then O(component_overrides) C(values); maps merge recursively and C(null) deletes a key.
        - Secrets (O(sensitive_values)) are C(<hidden>) unless O(show_values=true).
      type: dict
    values_files:
      description: Catalog values files that were merged, in order.
      type: list
      elements: str
    dependencies:
      description: Enabled components that must be deployed first.
      type: list
      elements: str
    external_dependencies:
      description: Declared dependencies that are disabled (assumed to be provided outside the recipe).
      type: list
      elements: str
    pre_manifest_files:
      description: Manifests applied before the chart, relative to the catalog root.
      type: list
      elements: str
    pre_manifest_paths:
      description: Absolute paths of RV(components[].pre_manifest_files).
      type: list
      elements: str
    manifest_files:
      description:
        - Manifests applied after the chart, relative to the catalog root. They are Helm templates rendered
          with C(.Values) holding each component's values under its name (AICR's convention).
      type: list
      elements: str
    manifest_paths:
      description: Absolute paths of RV(components[].manifest_files).
      type: list
      elements: str
    manifest_only:
      description: The component has no chart; its manifests are rendered as a local chart.
      type: bool
    enabled:
      description: Always C(true) here (disabled components are not listed).
      type: bool
    cleanup:
      description: AICR's C(cleanup) flag (uninstall after validation).
      type: bool
recipe_name:
  description: C(accelerator-service[-os]-intent[-platform]) with unstated dimensions omitted.
  returned: success
  type: str
  sample: h100-eks-ubuntu-training
catalog_digest:
  description: sha256 over the catalog's sorted relative paths and file contents.
  returned: success
  type: str
  sample: sha256:85e213936004d93ccb3e53dc1940609fd3686f0cfc09f838d89eaf27d5ac1b34
catalog_root:
  description: Directory the catalog was read from (the unpacked directory for an archive).
  returned: success
  type: str
graph:
  description: The dependency DAG of the managed components as Mermaid C(flowchart) text.
  returned: success
  type: str
values_hidden:
  description:
    - Whether anything of RV(components[].values) or of the recipe's C(componentRefs[].overrides) is C(<hidden>)
      (always V(false) with O(show_values=true)). M(aicr.runtime.gated_release) refuses a recipe for which it is V(true).
  returned: success
  type: bool
  sample: false
snapshot_criteria:
  description: The criteria the snapshot fingerprinted (C(service), C(accelerator), C(os), C(nodes); those it does not show are absent).
  returned: when O(snapshot) is given
  type: dict
  sample: {service: eks, accelerator: h100, os: ubuntu, nodes: 12}
relaxed_dimensions:
  description:
    - Snapshot-derived dimensions that no recipe distinguishes and that were cleared for a second resolution; empty when
      none were. AICR's RecipeResult has no such field, so it is this collection's own, beside RV(recipe).
  returned: when O(snapshot) is given
  type: list
  elements: str
  sample: [os]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import DEFAULT_SENSITIVE_VALUES, Sensitive, override_secrets
from ansible_collections.aicr.runtime.plugins.module_utils._entry.recipe_resolve import resolve_from_options
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.options import RESOLVE_SPEC, SNAPSHOT_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.resolve import shown


def argument_spec():
    return dict(RESOLVE_SPEC, cache_dir=dict(type="path"), show_values=dict(type="bool", default=False),
                sensitive_values=dict(type="list", elements="str", default=list(DEFAULT_SENSITIVE_VALUES)), **SNAPSHOT_SPEC)


def run(params, check_mode=False):
    """The module's result: the resolution, its secrets ``<hidden>`` unless ``show_values``."""
    result = resolve_from_options(params, cache_dir=params.get("cache_dir"), check_mode=check_mode)
    return result if params.get("show_values") else shown(result, params.get("sensitive_values"))


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    # the secrets the user gave stay out of the invocation too - unless asked for values as they are, which no_log
    # values would mask in the result as well
    secrets = () if module.params["show_values"] else override_secrets(Sensitive(module.params["sensitive_values"]), module.params["component_overrides"])
    result = call_engine(module, "recipe_resolve", lambda: run(module.params, check_mode=module.check_mode), requires=["PyYAML"], secrets=secrets)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
