#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cluster_facts
short_description: Read what AICR's snapshot measures from the Kubernetes API, in AICR's Snapshot shape
version_added: 0.1.0
description:
  - Reads, through the Kubernetes API only (no pod is started, nothing is changed), the measurements AICR's
    C(aicr snapshot) uses to resolve and validate recipes, and returns them as an AICR v0.19.0 C(Snapshot)
    (C(kind), C(apiVersion) C(aicr.run/v1alpha2), C(measurements)) that can be saved and given to
    C(aicr recipe --snapshot), or to M(aicr.runtime.recipe_resolve) as C(snapshot).
  - "C(K8s.server): C(version), C(platform), C(goVersion) of the API server. C(K8s.node): provider, container runtime,
    kubelet, kernel and OS image of the reported nodes."
  - "C(OS.release): C(ID) and C(VERSION_ID) from Node Feature Discovery's
    C(feature.node.kubernetes.io/system-os_release.*) labels, else from the node's C(osImage) when it is a known
    os-release PRETTY_NAME (Ubuntu, Red Hat Enterprise Linux, Amazon Linux, Container-Optimized OS, Talos).
    C(OS.sysctl./proc/sys/kernel/osrelease): the node's C(kernelVersion)."
  - "C(GPU.device): C(gpu.model) (C(nvidia.com/gpu.product) label), C(gpu-count) (C(nvidia.com/gpu) capacity),
    C(driver) (C(nvidia.com/cuda.driver-version.full) label). C(NodeTopology): the labels and taints of every node,
    encoded as AICR's topology collector does (the folded C(data), C(value|node1,node2) and C(effect|value|nodes), and
    the lossless C(items) beside it); C(NodeTopology.summary.node-count) counts every node."
  - The reported nodes are O(nodes), else those matching O(node_selector), else the GPU nodes, else all nodes.
    A per-node reading is reported only when all reported nodes agree on it; otherwise it is absent and
    RV(conflicts) names the values. Readings that cannot be seen through the API (for example GRUB or kernel
    module settings) are absent, never guessed.
  - With O(from_file) or O(from_configmap) it reads a Snapshot that AICR's own agent (or this module) wrote instead.
    A snapshot this module wrote before as C(aicr.nvidia.com/v1alpha1) is read as C(aicr.run/v1alpha2), with a warning.
  - RV(criteria) is AICR v0.19.0's fingerprint of the snapshot - the service from C(K8s.node.provider), the accelerator
    from the C(nvidia.com/gpu.product) label over the nodes, the OS from C(OS.release.ID), the node count from
    C(NodeTopology.summary.node-count) - which C(aicr recipe --snapshot) and M(aicr.runtime.recipe_resolve) use.
author:
  - aicr.runtime maintainers (@aicr-runtime)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.kube
attributes:
  check_mode:
    support: full
    details: Read-only; check mode returns the same result.
  diff_mode:
    support: none
    details: Nothing is changed, so there is no diff.
  idempotent:
    support: full
    details: Never changes anything.
requirements:
  - kubernetes (Python package), unless O(from_file) is given
  - PyYAML, to read a Snapshot written as YAML
options:
  nodes:
    description:
      - Names of the nodes whose OS, kernel, runtime and GPU readings are reported. Naming a node the cluster does
        not have is an error; a name that is not a DNS-1123 subdomain fails before the cluster is contacted.
    type: list
    elements: str
    default: []
  node_selector:
    description:
      - A label selector (for example C(nvidia.com/gpu.present=true)) choosing the reported nodes; ignored when
        O(nodes) is given. Kubernetes' syntax (C(key), C(!key), C(key=value), C(key!=value), C(key in (a,b)), C(key notin (a,b)),
        comma-separated), checked before the cluster is contacted.
    type: str
  from_file:
    description:
      - Read a Snapshot YAML/JSON file (as written by C(aicr snapshot -o file) or saved from RV(snapshot)) instead
        of the cluster. No cluster connection is made.
    type: path
  from_configmap:
    description:
      - Read the Snapshot AICR's agent stored in a ConfigMap, given as C(namespace/name) or C(cm://namespace/name)
        (key C(snapshot.yaml) or C(snapshot.json)); the namespace a DNS-1123 label, the name a DNS-1123 subdomain.
    type: str
notes:
  - The identity needs C(get) and C(list) on C(nodes); the collection ships the ClusterRole C(aicr-runtime:facts) in
    C(meta/rbac/facts.yaml), for a ClusterRoleBinding.
  - O(from_configmap) needs C(get) on C(configmaps) in that ConfigMap's namespace only; the collection ships the
    ClusterRole C(aicr-runtime:facts-configmap) in C(meta/rbac/facts-configmap.yaml), for a RoleBinding there.
seealso:
  - module: aicr.runtime.recipe_resolve
  - name: AICR snapshot
    description: What AICR's agent measures.
    link: https://github.com/NVIDIA/aicr/tree/main/pkg/snapshotter
"""

EXAMPLES = r"""
- name: Read the cluster
  aicr.runtime.cluster_facts:
  register: facts

- name: Resolve the recipe for this cluster
  aicr.runtime.recipe_resolve:
    catalog: /opt/aicr/recipes
    criteria: {intent: training}
    snapshot: "{{ facts }}"
  register: plan

- name: Save the snapshot for aicr recipe --snapshot
  ansible.builtin.copy:
    content: "{{ facts.snapshot | to_nice_yaml }}"
    dest: /tmp/snapshot.yaml
    mode: "0600"

- name: Only the nodes of one GPU pool
  aicr.runtime.cluster_facts:
    node_selector: nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3

- name: The Snapshot AICR's agent wrote
  aicr.runtime.cluster_facts:
    from_configmap: gpu-operator/aicr-snapshot
"""

RETURN = r"""
snapshot:
  description:
    - The AICR C(Snapshot) - C(kind), C(apiVersion), C(metadata), C(measurements) (each C(type), C(subtypes[]) with
      C(subtype), C(data), C(context)).
  returned: success
  type: dict
  sample:
    kind: Snapshot
    apiVersion: aicr.run/v1alpha2
    measurements:
      - type: K8s
        subtypes: [{subtype: server, data: {version: v1.34.2-eks-113cf36}}]
      - type: OS
        subtypes:
          - {subtype: release, data: {ID: ubuntu, VERSION_ID: "24.04"}}
          - {subtype: sysctl, data: {/proc/sys/kernel/osrelease: 6.8.0-1028-aws}}
criteria:
  description:
    - The recipe criteria AICR v0.19.0 fingerprints from this snapshot (C(service), C(accelerator), C(os), C(nodes); those
      it does not show are absent).
  returned: success
  type: dict
  sample: {service: eks, accelerator: h100, os: ubuntu, nodes: 12}
source:
  description: Where the snapshot came from - C(cluster), C(file) or C(configmap).
  returned: success
  type: str
nodes:
  description: The reported nodes (empty when the snapshot was read from a file or ConfigMap).
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    labels:
      description: Node labels.
      type: dict
    taints:
      description: Node taints (C(key), C(value), C(effect)).
      type: list
      elements: dict
    os_release:
      description: C(ID) and C(VERSION_ID) where known.
      type: dict
    os_release_source:
      description: C(nfd-label) or C(osImage), or null when unknown.
      type: str
    kernel:
      description: C(nodeInfo.kernelVersion).
      type: str
    os_image:
      description: C(nodeInfo.osImage).
      type: str
    operating_system:
      description: C(nodeInfo.operatingSystem).
      type: str
    container_runtime:
      description: C(nodeInfo.containerRuntimeVersion), for example C(containerd://2.0.4).
      type: str
    kubelet:
      description: C(nodeInfo.kubeletVersion).
      type: str
    provider_id:
      description: C(spec.providerID).
      type: str
    gpu_product:
      description: The C(nvidia.com/gpu.product) label.
      type: str
    gpu_count:
      description: The C(nvidia.com/gpu) capacity (null when the node reports none).
      type: int
    gpu_driver:
      description: The driver version from the GPU feature discovery labels.
      type: str
conflicts:
  description: Per-node readings left out of the snapshot because the reported nodes disagree (C(reading), C(values)).
  returned: success
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.facts import collect


def argument_spec():
    spec = dict(
        nodes=dict(type="list", elements="str", default=[]),
        node_selector=dict(type="str"),
        from_file=dict(type="path"),
        from_configmap=dict(type="str"),
    )
    spec.update(KUBE_ARG_SPEC)
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           mutually_exclusive=[("from_file", "from_configmap")])
    requires = [] if module.params["from_file"] else ["kubernetes"]
    module.exit_json(**call_engine(module, "cluster_facts", lambda: collect(module.params), requires=requires))


if __name__ == "__main__":
    main()
