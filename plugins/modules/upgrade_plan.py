#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: upgrade_plan
short_description: Plan moving clusters to a new catalog, with a safe / review / blocked verdict per component
version_added: 0.1.0
description:
  - Resolves each cluster's criteria on the catalog it runs and on O(catalog) (as M(aicr.runtime.recipe_resolve) does,
    without the cluster's own values) and compares every component - chart version change and its semver class
    (C(patch), C(minor), C(major), C(downgrade), C(changed) when not C(MAJOR.MINOR.PATCH)), chart or repository change,
    added and removed components, dependency and order changes, the values paths the cluster overrides that the catalog
    removed or whose default it changed, and health-check changes.
  - "Verdicts, worst wins: C(blocked) - a values key the cluster overrides was removed upstream, or a CRD of the
    component's chart has a breaking change (O(judge_crds)); C(review) - a CRD removed from the chart, a CRD warning, - a major bump,
    a downgrade, a chart or repository change, an added or removed component, changed dependencies, a changed default of
    an overridden key, a changed health check, or a cluster whose recorded catalog digest is not the catalog compared;
    C(safe) - patch and minor bumps with nothing else."
  - The plan names values paths, never values (an overridden value may be a secret).
  - With O(judge_crds) (the default), a component whose chart (name, repository or version) changes has both chart
    versions read - pulled with O(helm_binary) through O(repository_mirrors) and O(repository_credentials) into a
    temporary directory removed afterwards, a local chart (a mirror or repository that is a directory) read where it is
    (C(<chart>-<version>.tgz), C(<chart>-<version>/), else C(<chart>) if its C(Chart.yaml) has that version) - and each
    CRD of their C(crds/) (and subcharts' C(crds/)) is compared by name with the breaking-change rules of
    M(aicr.runtime.crd_publish) - C(crd_breaking) (C(blocked), naming the CRD, rule and field), C(crd_warning) and
    C(crd_removed) (C(review)), C(crd_added), C(crd_fields_added) and C(crd_changed) (noted, C(safe)). A chart that
    cannot be read is named, with why, in RV(plans[].not_judged); the verdict is then made without its CRDs.
  - Changes nothing, on the cluster or elsewhere; no cluster is contacted (chart repositories are, with O(judge_crds)).
author:
  - aicr.runtime contributors (@aicr)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.repository_credentials
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
  - PyYAML
options:
  catalog:
    description:
      - The new catalog - a C(recipes/) directory or a C(.tar.gz)/C(.tgz) of one, as for M(aicr.runtime.recipe_resolve).
    type: path
    required: true
  current:
    description:
      - One cluster's current state, a mapping of C(name) (default C(cluster-1)), C(catalog) (the catalog directory or
        archive it runs; O(current_catalog) wins), C(criteria), C(profile), C(skip_components), C(component_overrides)
        (as M(aicr.runtime.recipe_resolve) takes them; C(enabled=false) skips, C(version) pins), C(components) (what is
        deployed, C([{name, version, revision}]); a deployed version is the one compared) and C(catalog_digest) (the
        digest the cluster records; another digest than the compared catalog's is C(review)).
      - Exactly one of O(current), O(cluster_stack) and O(clusters).
    type: dict
  cluster_stack:
    description:
      - One C(ClusterStack) object (C({metadata, spec, status}), as M(aicr.runtime.stack_info) returns it in
        RV(aicr.runtime.stack_info#module:stacks)); its catalog is the release its status records
        (C(status.recipe.catalogVersion) of C(spec.catalog.source)) unless O(current_catalog) is given.
    type: dict
  clusters:
    description:
      - Many clusters, each a O(current) mapping or a O(cluster_stack) object; names must differ. Clusters with the same
        criteria are resolved once per catalog.
    type: list
    elements: dict
  current_catalog:
    description:
      - The catalog the clusters run, when their state does not name it (or to override what it names).
    type: path
  cache_dir:
    description:
      - Directory for the parsed-catalog cache and unpacked catalog archives (as M(aicr.runtime.recipe_resolve)).
    type: path
  judge_crds:
    description:
      - Compare the CRDs of both chart versions of every component whose chart changes (see above). C(false) - the
        charts are not read and every plan says so in RV(plans[].not_judged).
    type: bool
    default: true
  helm_binary:
    description:
      - The helm executable that pulls remote charts for O(judge_crds) (helm 3.13+ or helm 4).
    type: str
    default: helm
  repository_mirrors:
    description:
      - Map of upstream repository URL to a mirror, as M(aicr.runtime.gated_release) takes it (a URL, a local directory,
        or a dict with C(url), C(plain_http) and C(insecure_skip_tls_verify)), for O(judge_crds).
    type: dict
    default: {}
seealso:
  - module: aicr.runtime.recipe_resolve
  - module: aicr.runtime.stack_info
  - plugin: aicr.runtime.upgrade_plan
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Is moving this cluster to catalog 1.3.0 safe?
  aicr.runtime.upgrade_plan:
    catalog: /opt/aicr/releases/aicr-catalog-1.3.0.tar.gz
    current:
      name: "{{ inventory_hostname }}"
      catalog: /opt/aicr/releases/aicr-catalog-1.2.0.tar.gz
      criteria: "{{ aicr_criteria }}"
      component_overrides: "{{ aicr_component_overrides | default({}) }}"
  register: upgrade

- name: Stop unless it is
  ansible.builtin.assert:
    that: upgrade.verdict == 'safe'
    fail_msg: "{{ upgrade.plans[0].reasons }}"

- name: Plan every ClusterStack of a cluster
  aicr.runtime.stack_info:
  register: stacks

- name: One table per verdict across them
  aicr.runtime.upgrade_plan:
    catalog: /opt/aicr/releases/aicr-catalog-1.3.0.tar.gz
    clusters: "{{ stacks.stacks }}"
  register: fleet_plan

- name: Show the blocked ones
  ansible.builtin.debug:
    msg: "{{ fleet_plan.fleet.blocked.table.splitlines() }}"
"""

RETURN = r"""
verdict:
  description: The worst verdict of every plan - C(safe), C(review) or C(blocked).
  returned: always
  type: str
  sample: blocked
plans:
  description: One plan per cluster, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    cluster: {description: The cluster's name., type: str}
    verdict: {description: "C(safe), C(review) or C(blocked).", type: str}
    reasons: {description: "Why it is not C(safe): one line per finding worse than C(safe).", type: list, elements: str}
    findings: {description: "Findings about the whole cluster (C(catalog_digest_mismatch)): C({code, verdict, message}).", type: list, elements: dict}
    from: {description: C(catalog) and C(digest) of the catalog the cluster runs., type: dict}
    to: {description: C(catalog) and C(digest) of the new catalog., type: dict}
    added: {description: Components only the new catalog has., type: list, elements: str}
    removed: {description: Components only the current catalog has., type: list, elements: str}
    order: {description: "The deployment order C(from) and C(to), and whether it C(changed).", type: dict}
    components:
      description:
        - Every component of either side, the new order first. C(change) is C(added), C(removed), C(changed) or
          C(unchanged); C(version) is C({from, to, class, pinned?}); C(order) C({from, to}); C(values) the overridden
          paths the catalog C(removed) or C(changed) (C({path, change})); C(health_check) C(unchanged), C(none),
          C(added), C(removed) or C(changed); C(findings) C([{code, verdict, message}]); C(verdict); C(crds)
          C({judged, changes, reason}) - C(changes) C([{name, change, breaking, warnings, added_fields}]) (C(change) one of
          C(added), C(removed), C(breaking), C(changed), C(unchanged); C(breaking) and C(warnings) C([{rule, version,
          path, message}])), C(reason) why they were not judged.
      type: list
      elements: dict
    not_judged:
      description: "What the plan did not look at: each component whose charts could not be read (with why), or the charts' CRDs
        with O(judge_crds=false)."
      type: list
      elements: str
  sample:
    - cluster: lab-1
      verdict: blocked
      reasons: ["example-operator values widget.color: the cluster overrides it and the catalog removed it"]
fleet:
  description:
    - One table per verdict (keys C(safe), C(review), C(blocked)) - C(clusters) whose plan has that verdict, C(rows)
      (each component change of that verdict, C({component, change, from, to, class, reasons, clusters})) and C(table)
      (the rows as Markdown).
  returned: always
  type: dict
changed:
  description: Always C(false).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive, override_secrets
from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._helm.repositories import REPOSITORY_CREDENTIALS_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._stack.upgrade import plan_many


def argument_spec():
    return dict(catalog=dict(type="path", required=True), current=dict(type="dict"), cluster_stack=dict(type="dict"),
                clusters=dict(type="list", elements="dict"), current_catalog=dict(type="path"), cache_dir=dict(type="path"),
                judge_crds=dict(type="bool", default=True), helm_binary=dict(type="str", default="helm"),
                repository_mirrors=dict(type="dict", default={}), repository_credentials=REPOSITORY_CREDENTIALS_SPEC)


def run(params):
    crds = dict((k, params.get(k)) for k in ("judge_crds", "helm_binary", "repository_mirrors", "repository_credentials"))
    for field in ("current", "cluster_stack"):
        if params.get(field) is not None:
            return plan_many([params[field]], params["catalog"], params.get("current_catalog"), params.get("cache_dir"), field=field,
                             **crds)
    return plan_many(params.get("clusters"), params["catalog"], params.get("current_catalog"), params.get("cache_dir"), **crds)


def _secrets(params):
    """The values the clusters override that look secret: kept out of the invocation Ansible logs."""
    sensitive = Sensitive()
    found = []
    for entry in [params.get("current"), params.get("cluster_stack")] + list(params.get("clusters") or []):
        if isinstance(entry, dict):
            overrides = entry.get("component_overrides") if "component_overrides" in entry else (entry.get("spec") or {}).get("componentOverrides")
            found.extend(override_secrets(sensitive, overrides if isinstance(overrides, dict) else {}))
    return found


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           mutually_exclusive=[("current", "cluster_stack", "clusters")],
                           required_one_of=[("current", "cluster_stack", "clusters")])
    result = call_engine(module, "upgrade_plan", lambda: run(module.params), requires=["PyYAML"], secrets=_secrets(module.params))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
