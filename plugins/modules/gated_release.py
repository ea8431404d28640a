#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Over 400 lines: DOCUMENTATION, EXAMPLES and RETURN are about 660 of them; the module itself (argument spec, main) is about 70.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gated_release
short_description: Roll out a resolved AICR recipe in dependency order, concurrently and idempotently
version_added: 0.1.0
description:
  - Deploys the managed components of a recipe resolved by M(aicr.runtime.recipe_resolve) - one Helm release per
    component plus its pre- and post-manifest objects - starting every component the moment its gate opens.
  - "Gates: pre-manifest objects wait for the component's managed dependencies to be Ready; the release waits for those
    dependencies and for its pre-manifest objects; post-manifest objects wait for the release; a manifest-only component's
    objects wait for its dependencies and it is Ready when all its objects are. A dependency that is not managed (skipped,
    disabled, of a type not deployed here, or listed in C(external_dependencies)) counts as satisfied; a dependency that
    names no component of the recipe is refused before anything is done. Nothing already deployed is torn down because a
    sibling is not ready."
  - Readiness is observed from the cluster (a watch on each resource still pending; polling every O(poll_interval)
    where a watch cannot be opened), never assumed - kstatus-like rules per kind
    (Deployment available with updated replicas, StatefulSet/DaemonSet rolled out, Job complete, CRD established,
    custom resources with a C(Ready) condition True, Services/ConfigMaps immediately). A release is Ready when every
    resource of its manifest is.
  - A DAG scheduler runs up to O(concurrency) components at once. A failing component blocks exactly its dependents,
    independent branches continue and the task fails at the end listing the failed and blocked components.
    A re-run resumes - what is already deployed and Ready is not touched.
  - Idempotency - a digest of chart, repository, version and values is recorded as the Helm release label
    C(aicr.io/digest) (C(helm upgrade --labels)); a release whose digest matches is skipped without running helm.
    Manifest objects are compared with a server-side dry-run apply and applied with server-side apply
    (field manager C(aicr-runtime)) only when they differ.
  - "Manifest files are rendered with the real helm template engine (a generated chart), with C(.Values) set to
    C({<component>: values}), C(.Release.Namespace), C(.Release.Service), C(.Chart.Name) and C(.Chart.Version)
    (without a leading C(v)). Object identity is C(<component>-<pre|post>-<kind>-<slug of name>)."
  - A C(coordination.k8s.io/v1) Lease per stack keeps two runs from interleaving; a stale Lease is taken over
    after its duration. The Lease is taken only when something has to change, so a no-op run writes nothing.
  - An inventory ConfigMap C(aicr-runtime-<stack>-inventory) (in O(lease_namespace)) records which release and objects each
    component owns (each with its uid and the digest this stack last wrote); it is the only source of what O(prune) and
    O(state=absent) remove. Labels never make anything this stack's; see O(adopt) and RV(foreign_claims).
author:
  - aicr.runtime maintainers (@aicr-runtime)
extends_documentation_fragment:
  - aicr.runtime.attributes
  - aicr.runtime.kube
  - aicr.runtime.kube.wait
  - aicr.runtime.live_status
  - aicr.runtime.repository_credentials
attributes:
  check_mode:
    support: full
    details: Returns the plan (waves; install, upgrade, unchanged or remove per component and object, with the reason); nothing is changed.
  diff_mode:
    support: full
    details: Returns the Helm values before and after for every release that would change.
  idempotent:
    support: full
    details: A second run with the same recipe reports C(changed=false), runs no C(helm upgrade) and makes no mutating API call.
requirements:
  - kubernetes (Python package)
  - helm 3.13 or later, or helm 4, on the controller/target that runs the module
options:
  recipe:
    description:
      - The registered result of M(aicr.runtime.recipe_resolve) (a dict with C(components), C(recipe_name) and
        C(catalog_root)), or just its C(components) list.
      - Each component has C(name), C(chart), C(repository) (http(s) URL or C(oci://)), C(version), C(namespace),
        C(values), C(dependencies), C(pre_manifest_paths)/C(manifest_paths) (or catalog-relative
        C(pre_manifest_files)/C(manifest_files)) and C(manifest_only).
      - A result whose secret values recipe_resolve hid (RV(aicr.runtime.recipe_resolve#module:values_hidden), its default
        unless O(aicr.runtime.recipe_resolve#module:show_values)) is refused; O(resolve) returns no values at all.
      - Exactly one of O(recipe) and O(resolve) is required.
    type: raw
  resolve:
    description:
      - Resolve the recipe in this module, with the engine and the options of M(aicr.runtime.recipe_resolve),
        instead of passing a registered result in O(recipe). The rollout is the same; the module returns what it
        resolved in RV(resolved).
      - One module process per cluster instead of two, and the resolved recipe (all components' values) is not
        registered and templated back into this task's arguments - for large inventories that is about a quarter
        of the control node's CPU per cluster (see C(docs/modules/gated_release.md)).
      - The parsed-catalog cache is kept in O(cache_dir), as O(aicr.runtime.recipe_resolve#module:cache_dir) keeps it.
      - Exactly one of O(recipe) and O(resolve) is required.
    type: dict
    suboptions:
      catalog:
        description: The AICR recipe catalog, a C(recipes/) directory or a C(.tar.gz) of one, as O(aicr.runtime.recipe_resolve#module:catalog).
        type: path
        required: true
      criteria:
        description:
          - Recipe criteria, a mapping of C(service), C(accelerator), C(intent), C(os), C(platform) and C(nodes), as
            O(aicr.runtime.recipe_resolve#module:criteria).
        type: raw
        default: {}
      profile:
        description: Configuration profile selection C(name=value), as O(aicr.runtime.recipe_resolve#module:profile).
        type: str
      skip_components:
        description:
          - Components to leave out of the recipe, as O(aicr.runtime.recipe_resolve#module:skip_components).
          - Unlike the top-level O(skip_components), they are disabled in the recipe itself, as AICR disables components.
        type: list
        elements: str
        default: []
      component_overrides:
        description:
          - Per-component changes applied at resolution, as O(aicr.runtime.recipe_resolve#module:component_overrides)
            (C(version), C(namespace), C(values), C(enabled)).
        type: dict
        default: {}
      use_cache:
        description: Persist and reuse the parsed catalog metadata in O(cache_dir).
        type: bool
        default: true
      snapshot:
        description:
          - Resolve against a snapshot of the cluster, as O(aicr.runtime.recipe_resolve#module:snapshot) does - an AICR
            C(Snapshot) mapping, the registered result of M(aicr.runtime.cluster_facts), or the path of a Snapshot file.
          - Overlays whose constraints the snapshot fails are left out of the rollout (RV(resolved.excluded_overlays)).
        type: raw
      node_scheduling:
        description:
          - "Node selectors, tolerations, node count, workload gate and selector written into the components' values at the
            registry's C(nodeScheduling) paths, as C(aicr bundle) writes them, as O(aicr.runtime.recipe_resolve#module:node_scheduling);
            AICR's default tolerations C([{operator: Exists}]) are written when it is not given."
          - "For example C({system: {node_selector: {nodeGroup: system}}, accelerated: {tolerations: ['nvidia.com/gpu=present:NoSchedule']}})."
        type: raw
  catalog:
    description:
      - Directory that catalog-relative manifest file names are relative to, when the recipe gives no absolute paths.
      - Not with O(resolve), whose catalog is O(resolve.catalog).
    type: path
  stack:
    description:
      - Name of this deployment on the cluster; it names the Lease, labels every release and object, and scopes O(prune).
      - Defaults to the recipe name.
      - A DNS-1123 label (lowercase letters, digits and C(-), starting and ending with a letter or digit, at most 63
        characters), so that the label value, the Lease and the inventory ConfigMap derived from it are this stack's alone
        (a derived name past 63 characters is cut and ends in a hash of the whole stack name); any other value, the recipe
        name included when it is the default, fails before the cluster is contacted. O(status_stack) obeys the same rule.
    type: str
  state:
    description:
      - C(present) deploys; C(absent) removes every component (objects and releases) in reverse dependency order.
    type: str
    choices: [present, absent]
    default: present
  prune:
    description:
      - Remove components this stack installed earlier that the recipe no longer has (or that are now disabled),
        and objects a component no longer renders. Components listed in O(skip_components) are kept.
    type: bool
    default: false
  helm_binary:
    description:
      - The helm executable (helm 3.13+ or helm 4); flags are adapted to its major version.
      - helm runs with C(GOGC=off) and C(GOMEMLIMIT=256MiB) (garbage collection only near that soft limit; a helm
        process lives well under a second) unless the environment sets C(GOGC) or C(GOMEMLIMIT).
    type: str
    default: helm
  helm_home:
    description:
      - Directory for helm's cache, config and data (C(HELM_CACHE_HOME) and friends). Defaults to a temporary directory per run.
    type: path
  repository_mirrors:
    description:
      - Map of upstream repository URL (C(https://...) or C(oci://...)) to a mirror. Matching is exact or by a
        C(/)-bounded prefix (the longest wins), so C(oci://ghcr.io) mirrors every C(oci://ghcr.io/...) source.
      - A value is a URL (C(http(s)://), C(oci://), or a local directory holding C(<chart>) folders or archives),
        or a dict with C(url), C(plain_http) (OCI registries without TLS) and C(insecure_skip_tls_verify).
      - The release digest uses the upstream repository, so switching mirrors does not upgrade anything.
      - A URL with a user name or password in it (C(https://user:pass@host)) is refused, shown redacted; use
        O(repository_credentials), which match the mirror's URL (the repository helm contacts).
      - A mirror cannot weaken a credentialed repository - C(plain_http) or C(insecure_skip_tls_verify) on a mirror whose
        URL has an O(repository_credentials) entry without that setting is refused before anything is contacted. An
        C(http://) mirror, or one with C(plain_http), is warned about once per run (charts travel in clear text).
    type: dict
    default: {}
  skip_components:
    description:
      - Components not to deploy; they count as satisfied dependencies.
    type: list
    elements: str
    default: []
  component_overrides:
    description:
      - Per-component changes keyed by name - C(chart), C(repository), C(version), C(namespace), C(enabled), and
        C(values) (deep-merged into the resolved values; C(null) deletes a key).
    type: dict
    default: {}
  skip_deployment_order:
    description:
      - Start every component at once, ignoring dependencies.
    type: bool
    default: false
  concurrency:
    description:
      - How many components may be deploying at the same time (and how many charts are pulled at once for the values
        check, O(validate_values)).
      - From 1 to 64; 0 or a negative number is refused (never taken as the default).
    type: int
    default: 4
  early_start:
    description:
      - Start a component's C(helm upgrade --install) while its dependencies are still becoming Ready, held by a
        post-renderer that lets helm write only once the component's gate opens (its dependencies Ready and checked).
        helm's own start, discovery and rendering then leave the critical path; what is written, and when, is the same.
      - A component starts early only when nothing helm reads before its post-renderer can change in between - its
        chart is local (a directory, or a remote chart pulled to check its values, O(validate_values)) with no
        C(crds/) and no C(lookup) call, it has no pre-manifest objects, and no dependency still becoming Ready adds
        API types (CRDs, APIServices). Others start at their gate.
      - At most O(concurrency) helms wait at their gates. A helm whose gate does not open (a dependency failed, the run
        ended) writes nothing.
      - Set C(false) for charts whose templates read the cluster in other ways (for example through a subchart the
        collection cannot see).
    type: bool
    default: true
  validate_values:
    description:
      - Check every component's values before anything is deployed, so that a rollout either starts with all of them valid
        or does not start at all (nothing installed, no Lease taken).
      - With the parameters, before the cluster is contacted - each component's values against its JSON Schema in
        O(values_schemas) (for example generated by M(aicr.runtime.values_schema)).
      - Then, once the survey knows which releases will be installed or upgraded and before the first change - the chart
        of each is fetched (see O(chart_cache); through the mirrors and O(repository_credentials); all at once, up to
        O(concurrency); a local chart is read where it is), and the chart's default values merged with the component's
        values are validated against the chart's own C(values.schema.json) when it ships one. A chart that cannot be
        pulled or a value that violates its schema refuses the whole rollout - every refused component is C(Failed)
        naming the value's path and the rule (never the value), the others are not started, RV(errors) lists each. The
        release is then installed from the archive checked, without pulling it again.
      - A release whose digest matches what is deployed is not installed, so it is not checked again. A chart without a
        C(values.schema.json) is checked only against O(values_schemas).
      - Check mode pulls and checks the same charts, so the plan shows the refusal the real run would give (nothing is
        written to the cluster).
      - V(false) checks neither; helm then refuses bad values only when it installs that component, after its
        dependencies were installed.
    type: bool
    default: true
  values_schemas:
    description:
      - JSON Schema per component name (for example produced by the values_schema module).
    type: dict
    default: {}
  atomic:
    description:
      - Roll a failed install/upgrade back (helm 3 C(--atomic), helm 4 C(--rollback-on-failure); both make helm wait).
    type: bool
    default: false
  clear_pending:
    description:
      - What to do with a release whose latest revision is C(pending-install), C(pending-upgrade) or C(pending-rollback)
        (a helm operation in progress, or one whose helm process was killed).
      - V(false) (the default) fails that component, naming the revision, and leaves it alone, since it may be someone
        else's helm operation that is still running.
      - V(true) deletes the pending revision's record once it is older than O(timeout), its age measured with the API
        server's clock (never this host's), so helm can proceed; a younger one still fails the component.
    type: bool
    default: false
  adopt:
    description:
      - Take over (upgrade and relabel) releases and objects of the recipe that belong to another stack, to nobody, or that
        carry this stack's label without being in its inventory.
      - This stack's are what its inventory ConfigMap lists (written only by the collection's field manager
        C(aicr-runtime); one another manager wrote is not trusted, with a warning, and taken as no inventory). A listed
        release is upgraded while its latest revision is still what this stack recorded (the rule for removal below, since
        C(helm upgrade) deletes what the stored manifest has and the new one lacks); a listed object is changed while it
        carries the stack label C(aicr.io/stack) and C(aicr-runtime) holds fields of it. Ownership is read
        again right before each C(helm upgrade), C(helm uninstall) and delete, not only when the run surveys the cluster.
      - With V(false) (the default) a component whose release or object belongs to someone else fails with a message
        naming the owner, and nothing of it is changed.
      - With V(true) they are upgraded and relabelled, and then recorded in the inventory as this stack's own (so a later
        prune or O(state=absent) removes them). O(adopt) never widens what prune and O(state=absent) remove.
      - Prune and O(state=absent) remove only what the inventory lists and the cluster still holds as this stack recorded
        it - a release whose latest revision carries this stack's label and the recorded C(aicr.io/digest) and is the
        recorded release Secret (uid) or a newer revision; an object with the recorded uid, this stack's label and the
        C(aicr-runtime) field manager. Anything else is left alone with a warning. A listed release that now carries
        another stack's label was adopted by that stack; this stack forgets it (warning C(... released to stack B ...)),
        never uninstalls it, and its prune succeeds. A release or object labelled for this stack that the inventory does
        not list is reported in RV(foreign_claims), never removed.
      - An inventory written before uids and digests were recorded is read; its entries are trusted for what they name
        and checked live by label (and field manager) as before; each gets its record the next time it is installed or
        applied.
    type: bool
    default: false
  sensitive_values:
    description:
      - Which Helm values are secret. Each entry is a key name, matching a key whose words (split at C(_), C(-), C(.) and
        camelCase humps) end with its words, in any case, or that is the name without separators (V(password) matches
        C(adminPassword), C(db_password), C(DBPassword), C(PASSWORD); not C(tokenFile); V(auth) not C(author) or C(oauth)),
        or a dotted path of keys from the top of a component's values (V(auth.users.*.credential); C(*) is any one key).
      - Everything under a sensitive key (but a boolean or null as its own value) is shown as C(<hidden>) in the diff
        (C(<changed>) after, when it changed), for
        the release's deployed values (read from its Secret) and the new ones alike, and its strings (4 characters or
        longer) given in O(recipe) or O(component_overrides) are masked in all of the task's output (no_log values).
      - V(auth) hides a string or a number only (C(auth=user:pass)), not a mapping of settings (C(auth.enabled)). A URL
        with userinfo in any value (C(postgres://app:pw@db/x)) shows its password as C(<hidden>), whatever its key.
      - A bare C(key) that names something rather than holds a secret is not hidden by the default V(key) - the
        C(key) of a toleration, of a label or field selector requirement (C(matchExpressions), C(matchFields)), of a
        C(*KeyRef) and of a C(KeyToPath) item; give a dotted path (V(tolerations.key)) to hide one of those anyway.
      - Validation errors never quote a value, whatever this option says; they name the path and the schema rule.
    type: list
    elements: str
    default: [password, passwd, token, secret, apiKey, key, credentials, auth, dsn, connectionString]
  lease_namespace:
    description:
      - Namespace of the stack Lease and of the inventory ConfigMap; created (a plain create) when missing, if the API server
        says this identity could use Leases in it (a SelfSubjectAccessReview) - otherwise the run stops before any change,
        saying to create it and bind the Role C(aicr-runtime:lease) there first. A run that created it and then installed
        nothing removes it again (with the inventory it created), when it holds nothing else and the identity may.
      - Keep it a namespace only the collection's identities may write in (see the RBAC guide), since the inventory is what
        prune and O(state=absent) remove (see O(adopt)). An inventory ConfigMap another field manager wrote is not trusted.
      - A DNS-1123 label (lowercase letters, digits and C(-), at most 63 characters), checked before the cluster is contacted.
    type: str
    default: aicr-system
  lease_duration:
    description:
      - Seconds after which a Lease that was not renewed is considered stale and may be taken over, by the API server's
        clock; from 10 to 3600 (0 or anything outside that range is refused, never taken as the default).
      - The Lease is renewed every third of this. A renewal the server refuses, a Lease another run took over, or
        renewals failing for this long stop the run before its next change; the task fails saying why, with what the run
        did in RV(components) and RV(actions), and the stack's inventory is left as the other run may have written it.
    type: int
    default: 60
  holder_message:
    description:
      - Text stored with the Lease, shown to a concurrent run that finds the stack busy.
    type: str
  render_cache:
    description:
      - Keep rendered manifests in O(cache_dir), keyed by a digest of the manifest files, values, namespace, chart,
        version and helm binary, so a re-run with nothing changed runs no C(helm template).
      - The helm version is kept there too, keyed by the executable's path, size, modification time and inode, so a
        run does not start helm just to ask its version again.
    type: bool
    default: true
  cache_dir:
    description:
      - Cache directory. Defaults to C($AICR_RUNTIME_CACHE_DIR), else C($XDG_CACHE_HOME/aicr-runtime), else C(~/.cache/aicr-runtime).
      - It must be a directory only this user can write (created C(0700) when missing); a given one (or
        C($AICR_RUNTIME_CACHE_DIR)) that is group- or world-writable, a symlink or another user's is refused, the
        built-in default in that state is not used.
      - The compiled code of the collection's own modules is kept under the default directory, never under this one,
        since a module's imports run before its options are read.
    type: path
  snapshot:
    description:
      - The cluster's facts for the readiness pre-flight - an AICR Snapshot mapping, the result of
        M(aicr.runtime.cluster_facts), or the path of a Snapshot file. With O(resolve), O(resolve.snapshot) is used when
        this is not given.
    type: raw
  preflight:
    description:
      - The readiness pre-flight - the recipe's top-level C(constraints) evaluated on the cluster's facts with AICR's
        evaluator before anything is changed (also in check mode). Any constraint not met (or that cannot be evaluated)
        fails the task listing each with expected and actual; no Lease is taken, nothing is written.
      - V(auto) runs it when a snapshot is given (O(snapshot) or O(resolve.snapshot)); V(live) reads the facts from the
        cluster as M(aicr.runtime.cluster_facts) does when no snapshot is given (the identity needs get/list on
        nodes); V(never) never runs it. A constraint whose measurement the facts lack is skipped with a note (as AICR's
        C(validate) does).
    type: str
    choices: [auto, live, never]
    default: auto
  health_checks:
    description:
      - Run each component's health check once it is Ready, and let its dependents start only when it passes - the
        catalog's C(checks/<component>/health-check.yaml) (a Chainsaw Test, hydrated into the recipe's
        C(healthCheckAsserts)), or a component's own C(health_check_asserts) in a hand-written O(recipe).
      - Checks are read-only (GET and LIST as the run's identity) and retried until they pass or their timeout.
        A check that uses what cannot be evaluated faithfully fails the task before any change (never a silent pass).
      - V(false) runs none.
    type: bool
    default: true
  health_check_timeout:
    description:
      - Seconds a component's health check may take, more than 0 (0, a negative number or NaN is refused). Default - the
        check's own C(spec.timeouts.assert) (30 s without one). Always capped by the component's O(timeout) and
        O(overall_timeout).
    type: float
  health_check_skip:
    description:
      - Components whose health check is not run (reported C(Skipped)).
    type: list
    elements: str
    default: []
  on_failure:
    description:
      - What happens to a release whose gate fails - it is not Ready within its O(timeout), or its health check fails.
      - C(hold) leaves it as it is (its new revision stays, its dependents stay blocked).
      - C(rollback) rolls a release I(upgraded) in this run back with C(helm rollback) to its last known good revision - the
        latest revision that passed its gate in a run of the stack, as the stack's inventory records it (C(lastKnownGood)) -
        then the components upgraded in this run that depend on it (the recipe's dependencies; with
        O(skip_deployment_order) they may have been upgraded meanwhile), in reverse dependency order, while the run still
        holds the stack's Lease. The task still fails, naming the failed component.
      - As Flux's C(upgrade.remediation), only upgrades are rolled back - a release installed in this run has no earlier
        revision and is left as it is (never uninstalled).
      - A rollback is refused (and reported) when no last known good revision is recorded yet (one is recorded each time a
        component passes its gate after an install or upgrade) or when it would change one of the chart's
        CustomResourceDefinitions (in the release manifest or the chart's C(crds/)) in a way the breaking-change rules of
        M(aicr.runtime.crd_publish) call breaking, or remove one.
      - Each rollback (C(helm rollback) and the wait until the release is Ready again) gets the component's O(timeout) within
        what remains of O(overall_timeout); with nothing left it is not started (C(failed), "out of time").
      - Check mode rolls nothing back; RV(actions) says, per component to be upgraded, the revision a failed gate would go
        back to.
    type: str
    choices: [hold, rollback]
    default: hold
  status_stack:
    description:
      - Write live per-component progress to the status of this stack - a C(ClusterStack) name (O(status_backend=crd)) or
        the name of a stack kept in a ConfigMap (O(status_backend=configmap)).
      - Every component transition (C(Deploying), C(Ready), C(Unchanged), C(Failed), C(Blocked), C(Removed)) is merged into
        C(status.components) and recorded in C(status.history) through the status subresource, re-reading on a 409
        conflict. Transitions are coalesced - at most one write every 0.5 seconds, plus a final one before the module
        returns - and a component the status already shows Ready that is only verified (release unchanged) is not
        marked C(Deploying), so a no-op run writes nothing.
      - A status write that fails never fails the rollout; it is reported as a warning (after three failures in a row
        live status is given up). A stack that cannot be read disables live status with a warning.
      - Never used in check mode.
    type: str
  drift:
    description:
      - Drift - a live object that no longer matches what the stack last applied. Read for every object of every
        unchanged release (its stored manifest, as C(helm get manifest) prints it) and for every manifest object that
        renders what the stack last applied, by a server-side dry-run apply with the field manager C(aicr-runtime) -
        only fields we set can differ (server defaults and other managers' own fields never do). See the Day 2 guide.
      - V(ignore) (the default, as before this option) reads no drift; manifest objects that differ are applied again.
      - V(report) names, per component in RV(components[].drift), each drifted object with the JSON pointers that
        differ and the manager that last wrote each (from C(managedFields)), and each deleted object as C(missing); it
        writes nothing and fails nothing (a drifted manifest object is not applied again either).
      - V(correct) reports the same and re-applies only the drifted objects (server-side apply, field manager
        C(aicr-runtime); force takes only the fields the manifest sets, never an ignored one), each listed in
        RV(actions) as C(correct drift of ...); never a C(helm upgrade) for an edited field. Check mode lists what it
        would correct; with C(--diff) the drifted fields are shown live (before) and as last applied (after), a
        Secret's values hidden.
      - A release that is installed or upgraded in the run is not read for drift (helm applies it anyway).
    type: str
    choices: [ignore, report, correct]
    default: ignore
  drift_ignore:
    description:
      - Fields that are never drift, as JSON pointers per kind (C(*) matches any one segment; a pointer covers its
        subtree), for example O(drift_ignore) C(Deployment) - C(/spec/template/metadata/annotations). Added to the defaults - a
        webhook configuration's C(/webhooks/*/clientConfig/caBundle), a CRD's conversion webhook C(caBundle) and an
        APIService's C(/spec/caBundle).
      - C(/spec/replicas) of a Deployment, StatefulSet or ReplicaSet is never drift while a manager other than
        C(helm) and C(aicr-runtime) owns it (an HorizontalPodAutoscaler, C(kubectl scale)).
      - Ignored fields are left out of the body a correction applies, so they are never forced back.
    type: dict
    default: {}
  chart_crds:
    description:
      - Who installs and upgrades the CustomResourceDefinitions of a chart's C(crds/) directory.
      - V(helm) - helm, as helm does - installs them with the release the first time and never upgrades them.
      - V(managed) - this module creates and upgrades them before the release's C(helm upgrade) and tells helm
        C(--skip-crds). Before the first change of the run (and in check mode), the chart of every release to install or
        upgrade is pulled and each CRD of its C(crds/) (and of the C(crds/) of the subcharts helm installs - not of one
        its C(condition) or C(tags) disable) is compared with the live one by the breaking-change rules of
        M(aicr.runtime.crd_publish); a breaking change (a removed field, a
        changed type, a new required field...) refuses the rollout, naming the CRD, the rule and the field, unless
        O(allow_breaking_crd_changes) names the CRD or the component. A live CRD labelled for another stack
        (C(aicr.io/stack)), written by another field manager than C(helm) and C(aicr-runtime), or not installed by this
        stack's release is refused unless O(adopt). At the component's gate each CRD is applied as
        M(aicr.runtime.crd_publish) applies one (server-side apply, field manager C(aicr-runtime), labelled with the
        stack and component) and waited for until Established. CRDs are never deleted.
      - V(managed) needs C(patch) on the chart's CRDs (and C(create) for new ones) for the run's identity.
      - Check mode lists each CRD it would create or update in RV(chart_crds) and RV(actions); diff mode shows each
        CRD's spec before and after.
    type: str
    choices: [helm, managed]
    default: helm
  allow_breaking_crd_changes:
    description:
      - With O(chart_crds=managed) - the CRD names (C(widgets.example.aicr.io)) or component names whose chart CRDs may
        change in a breaking way (custom resources stored under the old schema may stop validating).
    type: list
    elements: str
    default: []
  chart_cache:
    description:
      - Charts of HTTP(S) repositories are fetched without a helm process - the repository's C(index.yaml) downloaded
        once per run and shared by all its charts, then each archive by the URL the index gives, with the repository's
        O(repository_credentials) (user name and password only to the repository's own host, its CA, client
        certificate and TLS settings as helm uses them) - and every archive's sha256 must be the index's C(digest) - a
        changed archive is refused in one line naming the chart and both digests. The archive checked is the one
        installed. Charts of OCI registries, versions given as a range and whatever the index cannot answer exactly
        are pulled by helm, as before.
      - With V(true), the archives are also kept under C(charts/sha256/) in O(cache_dir), keyed by their digest, so a
        later run downloads only the index; an entry is used only when its sha256 is the index's digest (a corrupt one
        is downloaded again). Entries are written atomically (concurrent runs are safe); the least recently used are
        removed past C($AICR_RUNTIME_CHART_CACHE_MAX_MB) MiB (default 512).
      - V(false) keeps no archive between runs (each run downloads every chart it needs once).
    type: bool
    default: true
  history_max:
    description:
      - How many revisions helm keeps per release (C(helm upgrade --install --history-max), and C(helm rollback
        --history-max) for O(on_failure=rollback)); older revisions' release Secrets are deleted. V(0) keeps every revision.
      - At least V(2) with O(on_failure=rollback) (or V(0)) - the last known good revision must still exist to roll back to;
        a negative number or V(1) with O(on_failure=rollback) is refused before the cluster is contacted.
    type: int
    default: 10
notes:
  - Every parameter and the recipe's shape are checked in one pass before the cluster is contacted - types, ranges, names,
    component overrides, and dependencies (one that names no component of the recipe is refused; what the recipe does not
    deploy goes in a component's C(external_dependencies)). Every problem found is listed in RV(errors); the message is
    the first one's, naming the field, the value (never a component's values) and what is allowed.
  - The task fails when any component failed or was blocked; the result still lists every component.
  - A no-op run performs only reads and server-side dry-run applies.
  - SIGTERM (AWX's cancel, ansible-playbook stopped) runs the cleanup an error runs - helm children stopped, temporary
    files and helm homes removed, this run's Lease released - and the task fails with a one-line message saying
    C(cancelled (SIGTERM\)), what was done before, what was stopped and that nothing else was started.
seealso:
  - module: aicr.runtime.recipe_resolve
"""

EXAMPLES = r"""
- name: Resolve the recipe, its values as they are (secrets included, so the result is not shown)
  aicr.runtime.recipe_resolve:
    catalog: /opt/aicr/recipes
    criteria: {service: kind, accelerator: h100, intent: training}
    show_values: true
  no_log: true
  register: resolved

- name: Roll it out
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
    kubeconfig: ~/.kube/config
    context: kind-gpu
    concurrency: 4
    timeout: 600
  register: rollout

- name: Resolve and roll out in one task (one module process per cluster)
  aicr.runtime.gated_release:
    resolve:
      catalog: /opt/aicr/recipes
      criteria: {service: kind, accelerator: h100, intent: training}
      profile: gpuStack=operator-managed
    kubeconfig: ~/.kube/config
  register: rollout

- name: Roll out from an air-gapped mirror with helm 4, replacing one chart
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
    helm_binary: /usr/local/bin/helm4
    repository_mirrors:
      https://helm.ngc.nvidia.com/nvidia: http://charts.mirror.internal/nvidia
      oci://ghcr.io: {url: "oci://registry.mirror.internal:5000/ghcr.io", plain_http: true}
    component_overrides:
      nodewright-operator:
        chart: skyhook-operator
        version: v0.15.1

- name: Roll out from a private repository and a private OCI registry (credentials only in private files)
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
    repository_mirrors:
      https://helm.ngc.nvidia.com/nvidia: https://charts.internal/nvidia
    repository_credentials:
      - url: https://charts.internal/nvidia
        username: "{{ charts_user }}"
        password: "{{ charts_password }}"
        ca_file: /etc/pki/internal-ca.pem
        cert_file: /etc/pki/aicr-client.pem
        key_file: /etc/pki/aicr-client.key
      - url: oci://registry.internal:5000
        username: robot
        password: "{{ registry_token }}"
        ca_file: /etc/pki/internal-ca.pem

- name: Show the plan only
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
  check_mode: true
  diff: true
  register: plan

- name: Roll out and show each component's progress in the ClusterStack's status (kubectl get clusterstack gpu -w)
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
    stack: gpu
    status_stack: gpu

- name: Remove everything this stack deployed
  aicr.runtime.gated_release:
    recipe: "{{ resolved }}"
    state: absent
"""

RETURN = r"""
preflight:
  description: The readiness pre-flight - each constraint with its outcome (C(passed), C(failed), C(skipped), C(error)), expected and actual.
  returned: when the pre-flight ran (see O(preflight))
  type: dict
  sample:
    passed: false
    source: snapshot
    failed: [OS.release.VERSION_ID]
    skipped: []
    constraints:
      - {name: OS.release.VERSION_ID, expected: "24.04", actual: "22.04", outcome: failed, message: "expected 24.04, got 22.04"}
components:
  description: One entry per component, in deployment order (then removed leftovers).
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: "Component name.", type: str}
    kind: {description: "C(release) (Helm chart) or C(objects) (manifest-only).", type: str}
    phase: {description: "C(Pending) (check mode), C(Blocked), C(Deploying), C(Ready), C(Failed), C(Unchanged) or C(Removed).", type: str}
    blocked_by: {description: "The failed components that blocked this one.", type: list, elements: str}
    chart: {description: "Chart name.", type: str}
    version: {description: "Chart version.", type: str}
    revision: {description: "Helm release revision after the run (or deployed, in check mode).", type: int}
    namespace: {description: "Namespace.", type: str}
    objects:
      description: Manifest objects with C(id), C(apiVersion), C(kind), C(name), C(namespace), C(wave), C(action), C(reason).
      type: list
      elements: dict
    started: {description: "UTC time the component's gate opened.", type: str}
    duration: {description: "Seconds from start until Ready/Failed.", type: float}
    message: {description: "What happened, or why it failed (naming the resource that is not ready).", type: str}
    action: {description: "Planned release action: C(install), C(upgrade), C(unchanged) or C(remove).", type: str}
    reason: {description: "Why that action.", type: str}
    dependencies: {description: "The managed dependencies gating this component.", type: list, elements: str}
    changed: {description: "Whether this component changed anything.", type: bool}
    early_start:
      description: C(true) when its helm was started early and waited at its gate (O(early_start)).
      returned: when it was
      type: bool
    rollback:
      description:
        - With O(on_failure=rollback), what was decided for this component - C(status) C(rolled_back), C(refused), C(failed)
          (helm rollback failed) or C(left) (installed in this run), C(from) and C(to) revisions, C(revision) (the new
          revision the rollback wrote), C(reason) (why it was rolled back) and C(message).
      returned: when its gate failed, or it depends on a component rolled back, with O(on_failure=rollback)
      type: dict
    last_known_good:
      description: The revision of the release that last passed its gate (the inventory's C(lastKnownGood)).
      returned: when one is recorded
      type: int
    drift:
      description:
        - With O(drift=report) or O(drift=correct) - each drifted object of the component - C(apiVersion), C(kind),
          C(name), C(namespace), C(state) (C(drifted), C(missing), or C(unknown) when the dry-run apply failed, with
          C(message)) and C(fields) - C(path) (a JSON pointer) and C(manager) (who last wrote it; C(null) for a field
          removed); C(object) names a manifest object's identity. Empty when nothing drifted.
      returned: with O(drift=report) or O(drift=correct)
      type: list
      elements: dict
    health:
      description:
        - The component's health check - C(status) C(Passed), C(Failed), C(Skipped) (none, O(health_checks=false) or
          O(health_check_skip)) or C(NotRun) (check mode, or the component did not get that far), C(message), C(check),
          C(operations), C(duration); for a failure also C(step), C(operation), C(resource), C(expression),
          C(expected) and C(actual).
      returned: with O(state=present)
      type: dict
    chart_crds:
      description:
        - The CRDs of the component's chart the stack has applied (O(chart_crds=managed)), as its inventory records them - this
          run's and earlier runs'. A record, not something to remove - prune and O(state=absent) never delete a CRD.
      returned: when any is recorded
      type: list
      elements: str
  sample:
    - name: example-operator
      kind: release
      phase: Ready
      blocked_by: []
      chart: example-operator
      version: 1.0.0
      revision: 1
      namespace: example-system
      objects: [{id: example-operator-post-widget-demo, kind: Widget, name: demo, action: create}]
      started: "2026-11-29T14:00:01.12Z"
      duration: 1.42
      message: deployed (3 resources)
resolved:
  description:
    - What O(resolve) resolved - the recipe's name, the catalog it came from and the AICR result's criteria, applied
      overlays and deployment order (the full result is what M(aicr.runtime.recipe_resolve) returns).
  returned: when O(resolve) is given
  type: dict
  contains:
    recipe_name: {description: "Recipe name derived from the criteria.", type: str}
    catalog_digest: {description: "sha256 of the catalog, as RV(aicr.runtime.recipe_resolve#module:catalog_digest).", type: str}
    catalog_root: {description: "Directory the catalog was read from.", type: str}
    criteria: {description: "The criteria as AICR normalised them (unstated dimensions are C(any)).", type: dict}
    applied_overlays: {description: "Overlays merged over C(base), in order.", type: list, elements: str}
    deployment_order: {description: "Enabled components in deployment order.", type: list, elements: str}
    excluded_overlays:
      description: With O(resolve.snapshot), the overlays whose constraints the snapshot failed (AICR's C(excludedOverlays)).
      returned: when the snapshot excluded an overlay
      type: list
      elements: dict
    constraint_warnings:
      description: With O(resolve.snapshot), the failing constraints with expected and actual values (AICR's C(constraintWarnings)).
      returned: when a constraint failed
      type: list
      elements: dict
  sample:
    recipe_name: h100-kind-training
    catalog_digest: 3f1c0e2a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e
    catalog_root: /opt/aicr/recipes
    criteria: {service: kind, accelerator: h100, intent: training, os: any, platform: any}
    applied_overlays: [base, kind, kind-training, h100-kind-training]
    deployment_order: [example-crds, example-config, example-monitoring, example-jobs, example-operator, example-agent]
summary:
  description:
    - Recipe name, stack, component count, components that reached Ready in order, skipped, failed, blocked, phase counts.
    - C(health_checks) counts the components per health check status (O(state=present)).
  returned: always
  type: dict
  sample:
    recipe_name: h100-kind-training
    component_count: 12
    deployed_components: [cert-manager, prometheus-operator-crds]
    failed: []
    blocked: []
waves:
  description: The plan - dependency levels in order, each with its components' action, reason and object action counts.
  returned: always
  type: list
  elements: dict
  sample:
    - wave: 1
      components: [{name: example-crds, action: install, reason: release example-crds not found in namespace example-system, objects: {}}]
foreign_claims:
  description:
    - Helm releases and objects labelled for this stack that its inventory does not vouch for - not listed in it, or no
      longer what this stack recorded (another digest, uid or revision). They are never upgraded nor removed (a release
      only with O(adopt) upgraded and taken over); each is also a warning starting with C(foreign claim:) naming it.
    - Releases are looked for in the namespaces the recipe and the inventory name (never cluster-wide); objects among
      those the recipe renders.
  returned: always
  type: list
  elements: dict
  contains:
    kind: {description: "C(release) for a helm release, else the object's Kubernetes kind.", type: str}
    apiVersion: {description: "The object's apiVersion (objects only).", type: str}
    name: {description: "Release or object name.", type: str}
    namespace: {description: "Its namespace (null for a cluster-scoped object).", type: str}
    claims_stack: {description: "The stack label value it carries (this stack's).", type: str}
    reason: {description: "Why it is not taken as this stack's.", type: str}
    message: {description: "The warning given for it (C(foreign claim: ...)).", type: str}
  sample:
    - kind: release
      name: evil
      namespace: tenant-a
      claims_stack: gpu
      reason: labelled for stack gpu but not in its inventory
      message: "foreign claim: release tenant-a/evil is labelled for stack gpu (component -) but is not in its inventory; it is never removed"
rollbacks:
  description: With O(on_failure=rollback), every component's RV(components[].rollback) entry, in the order they were decided.
  returned: with O(on_failure=rollback)
  type: list
  elements: dict
  sample:
    - {component: example-operator, status: rolled_back, from: 3, to: 2, revision: 4, reason: "its gate failed: ...",
       message: "rolled back from revision 3 to 2 (now revision 4)"}
actions:
  description: What was done (or, in check mode, what would be done), in order.
  returned: always
  type: list
  elements: str
diff:
  description: Helm values before and after for each release that changes (diff mode).
  returned: when diff mode is on
  type: list
  elements: dict
helm_version:
  description: Major version of the helm binary used.
  returned: always
  type: int
errors:
  description:
    - Every problem found with the input, when the task fails on it - by the validation pass over the parameters (each
      C(field), C(message) and, where it is not secret, C(value) and C(allowed)) or by the values check against the
      charts before the first change (each C(field), C(component) and C(message)).
  returned: when the task fails on bad input or values
  type: list
  elements: dict
  sample:
    - field: values
      component: example-operator
      message: "values: component example-operator: 1 value(s) violate the chart's values.schema.json; first: values.replicaCount: violates type integer"
live_status:
  description: What the live status writer did - stack, backend, transitions seen, status writes made, 409 conflicts retried.
  returned: when O(status_stack) is set, not in check mode, and the stack could be read
  type: dict
  sample: {stack: gpu, backend: crd, transitions: 12, writes: 7, conflicts: 0}
timeline:
  description:
    - The rollout as a Mermaid C(gantt) chart - per component a section with its wait for its dependencies (C(done)), its
      install or upgrade until Ready, and its health check (C(active)); the critical path (from the component that ended
      last back through the dependency that ended last) is tagged C(crit) and named in a C(%% critical path) comment.
      Components blocked by a failure are milestones at the failure. Render it in any Markdown viewer that knows Mermaid.
    - In check mode nothing runs, so the chart says so (C(%% nothing ran)).
  returned: always
  type: str
  sample: |
    gantt
        title rollout of stack gpu
        dateFormat x
        axisFormat %H:%M:%S
        todayMarker off
        %% critical path: example-crds -> example-operator (4.4s)
        section example-crds
        install :crit, c0_run, 1796047200000, 1796047201200
        section example-operator
        wait for example-crds :done, c1_wait, 1796047200000, 1796047201200
        install :crit, c1_run, 1796047201200, 1796047203400
        health check :crit, active, c1_check, 1796047203400, 1796047204400
chart_crds:
  description:
    - With O(chart_crds=managed) - each chart CRD checked and applied (or, in check mode, that would be) - its component,
      name, action (V(create), V(update), V(unchanged)), whether a breaking change was allowed and the compatibility summary.
  returned: when O(chart_crds=managed) and O(state=present)
  type: list
  elements: dict
  sample: [{component: example-crds, name: widgets.example.aicr.io, action: update, breaking: false,
            summary: "0 breaking change(s), 0 warning(s)"}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

# Before the collection's other imports: from the module's payload they then compile once, their code cached (see _common/zipimports.py).
zipimports.install()

from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import secret_params
from ansible_collections.aicr.runtime.plugins.module_utils._release.spec import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_one_of=[["recipe", "resolve"]], mutually_exclusive=[["recipe", "resolve"], ["catalog", "resolve"]])
    result = call_engine(module, "gated_release", lambda: execute(module.params, check_mode=module.check_mode, diff=module._diff),
                         requires=["kubernetes", "PyYAML"], secrets=secret_params(module.params))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
