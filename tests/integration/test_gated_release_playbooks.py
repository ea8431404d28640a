"""gated_release end to end: ansible-playbook -> installed collection -> real helm 3/4 -> the lab's real control plane,
the collection running as the least-privilege identity ``release`` (the shipped ClusterRoles aicr-runtime:release and
aicr-runtime:example-charts), each test in a namespace of its own.

* the example catalog's recipe converges (through the cluster_runtime role); a re-run reports
  changed=false, runs no helm at all (no helm user agent in the API server's audit log) and makes no
  mutating API call (server-side dry-run applies are the only non-GET requests);
* check mode is the plan and mutates nothing;
* a component that never becomes ready (its pods carry the lab's never-ready annotation) fails with the
  resource named, blocks exactly its dependents; after the cause is fixed a re-run finishes the rollout;
* state=absent removes everything in reverse dependency order;
* transient 503/429 answers (a fault proxy in front of the API server) are retried;
* an identity without the shipped roles fails with one line naming what it was refused;
* the real h100-kind-training recipe on the real charts (HTTP repositories + local OCI registry via
  repository_mirrors) converges with all 12 components Ready in dependency order.
"""

import datetime
import json
import re
import subprocess
from pathlib import Path

import pytest

from aicr_lab.charts.pytest_fixture import push_shared_oci, shared_http_dir, start_chart_repo, start_registry
from aicr_lab.controlplane.stages import NEVER_READY

from lab_support import audit_mutations, example_catalog

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
H100_KIND_TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}
HELMS = ["helm3", "helm4"]
IDENTITY = "release"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def _parse(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")


def assert_gate_order(result):
    """No component started before each of its dependencies had become Ready."""
    comps = dict((c["name"], c) for c in result["components"])
    for comp in comps.values():
        for dep in comp["dependencies"]:
            ready_at = _parse(comps[dep]["started"]) + datetime.timedelta(seconds=comps[dep]["duration"])
            assert _parse(comp["started"]) >= ready_at - datetime.timedelta(milliseconds=20), (comp["name"], dep)


def mutations(kube, since, identity=IDENTITY):
    """Mutating API calls the collection (as ``identity``) made after ``since``, excluding server-side dry runs."""
    return audit_mutations(kube, since, identity)


def helm_calls(kube, since, identity=IDENTITY):
    """Requests helm made after ``since`` (a hook watch opened by an earlier run is logged when it closes: ignored)."""
    return [e for e in kube.audit(since=since, user=kube.user(identity)) if "helm" in e.get("userAgent", "").lower() and e.get("verb") != "watch"]


def kubectl_json(kube, *argv):
    """kubectl as the lab's admin: inspection only."""
    argv = list(argv)
    if "-o" not in argv:
        argv += ["-o", "json"]
    out = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.fixture
def catalog(kube, tmp_path):
    """The example catalog, every component in this test's namespace."""
    return example_catalog(tmp_path, kube.namespace)


def example_vars(kube, catalog, example_repo, helm, identity=IDENTITY, **extra):
    params = {"catalog": str(catalog), "criteria": H100_KIND_TRAINING, "kubeconfig": kube.kubeconfig_for(identity), "helm_binary": str(BIN / helm),
              "mirrors": {EXAMPLE_REPO: example_repo.url}, "lease_namespace": kube.namespace, "stack": kube.namespace}
    params.update(extra)
    return params


@pytest.mark.parametrize("helm", HELMS)
def test_example_recipe_converges_through_the_role_and_rerun_is_a_noop(run_playbook, kube, catalog, example_repo, helm):
    # The stack keeps its default name (the recipe's): the releases' label says so. Its Lease and inventory live in the
    # test's namespace, so nothing of it outlives the test.
    role_vars = {"cluster_runtime_catalog": str(catalog), "cluster_runtime_criteria": H100_KIND_TRAINING,
                 "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY), "cluster_runtime_helm_binary": str(BIN / helm),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_lease_namespace": kube.namespace,
                 "cluster_runtime_validate_values": helm == "helm4"}  # the optional values_schema step, once
    run = run_playbook("release_role.yml", extravars=role_vars)
    assert run.rc == 0, run.stdout[-5000:]
    if helm == "helm4":
        # the check's results carry the values as they are: not shown (no_log, issue 35); what it found is reported
        checks = run.result("Validate each chart component's values with values_schema")
        assert checks.get("censored") and "results" not in checks
        report = run.result("Report the values check (charts checked, values that do not match their chart's schema)")["msg"]
        assert sorted(report[0].split(": ", 1)[1].split(", ")) == ["example-agent", "example-crds", "example-jobs", "example-monitoring", "example-operator"]
        assert len(report) == 1, "every chart's values match"
    res = run.result("Resolve the cluster's recipe and deploy its components in dependency order")
    assert res["changed"] is True
    phases = dict((c["name"], c["phase"]) for c in res["components"])
    assert phases == dict((n, "Ready") for n in ["example-crds", "example-config", "example-monitoring", "example-operator", "example-agent", "example-jobs"])
    assert_gate_order(res)
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-config"]["kind"] == "objects" and comps["example-config"]["objects"][0]["kind"] == "ConfigMap"
    assert [o["kind"] for o in comps["example-operator"]["objects"]] == ["Widget"]
    assert res["summary"]["recipe_name"] == "h100-kind-training" and res["summary"]["component_count"] == 6
    assert res["resolved"]["recipe_name"] == "h100-kind-training" and res["resolved"]["applied_overlays"][-1] == "h100-kind-training"
    assert "COMPONENT" in run.stdout and "example-operator" in run.stdout  # the outcome table
    releases = kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm,status=deployed")["items"]
    assert sorted(r["metadata"]["labels"]["aicr.io/component"] for r in releases) == sorted(n for n in phases if n != "example-config")
    assert all(r["metadata"]["labels"]["aicr.io/stack"] == "h100-kind-training" and len(r["metadata"]["labels"]["aicr.io/digest"]) == 48
               for r in releases)
    widget = kubectl_json(kube, "get", "widgets.example.aicr.io", "-n", kube.namespace, "--show-managed-fields")["items"][0]
    assert widget["metadata"]["labels"]["aicr.io/component"] == "example-operator"
    assert any(m["manager"] == "aicr-runtime" and m["operation"] == "Apply" for m in widget["metadata"]["managedFields"])
    # what Ready meant: the real controllers report every workload available
    deployment = kubectl_json(kube, "get", "deployment", "example-operator", "-n", kube.namespace)
    assert deployment["status"].get("availableReplicas") == deployment["spec"]["replicas"] == 1

    mark = kube.audit_mark()
    again = run_playbook("release_role.yml", extravars=role_vars)
    assert again.rc == 0, again.stdout[-5000:]
    res2 = again.result("Resolve the cluster's recipe and deploy its components in dependency order")
    assert res2["changed"] is False
    assert set(c["phase"] for c in res2["components"]) == {"Unchanged"}
    assert [c["revision"] for c in res2["components"]] == [c["revision"] for c in res["components"]]
    assert kube.audit(since=mark, user=kube.user(IDENTITY)), "the re-run did talk to the cluster as the release identity"
    assert mutations(kube, mark) == []
    assert helm_calls(kube, mark) == [], "a no-op run must not run helm (no helm upgrade)"


@pytest.mark.parametrize("helm", HELMS)
def test_check_mode_plan_mutates_nothing(run_playbook, kube, catalog, example_repo, helm):
    mark = kube.audit_mark()
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm), check=True, diff=True)
    assert run.rc == 0, run.stdout[-5000:]
    res = run.result("Roll out")
    assert res["changed"] is True
    assert [w["wave"] for w in res["waves"]] == [1, 2, 3]
    first = dict((c["name"], c) for c in res["waves"][0]["components"])
    assert first["example-crds"]["action"] == "install"
    assert any(a.startswith("would install example-operator") for a in res["actions"])
    assert all(c["phase"] == "Pending" for c in res["components"])
    assert kube.audit(since=mark, user=kube.user(IDENTITY)), "the plan read the cluster as the release identity"
    assert mutations(kube, mark) == []
    assert res["diff"][0]["before"] == ""


@pytest.mark.parametrize("check", [True, False], ids=["check", "real"])
def test_bad_values_are_refused_against_the_chart_before_anything_is_installed(run_playbook, kube, catalog, example_repo, check):
    """Issue 36: through the role, ``replicaCount: lots`` showed a clean plan in --check; the real run installed four
    components, then helm refused example-operator and example-agent was blocked. example-operator's chart ships a
    values.schema.json (replicaCount: integer): the role now has gated_release check every chart's values before the
    first change (cluster_runtime_enforce_values, the default) - the plan shows the refusal and nothing is installed."""
    role_vars = {"cluster_runtime_catalog": str(catalog), "cluster_runtime_criteria": H100_KIND_TRAINING,
                 "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY), "cluster_runtime_helm_binary": str(BIN / "helm4"),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_lease_namespace": kube.namespace,
                 "cluster_runtime_recipe_overrides": {"example-operator": {"values": {"replicaCount": "lots"}}}}
    mark = kube.audit_mark()
    run = run_playbook("release_role.yml", extravars=role_vars, check=check)
    assert run.rc != 0, run.stdout[-3000:]
    res = run.result("Resolve the cluster's recipe and deploy its components in dependency order")
    refusal = ("values: component example-operator: 1 value(s) violate the chart's values.schema.json; first: values.replicaCount: "
               "violates type integer")
    assert res["msg"] == "gated_release: 1 of 6 components refused before anything was installed (nothing was changed): example-operator (%s)" % refusal
    assert res["errors"] == [{"field": "values", "component": "example-operator", "message": refusal}]
    phases = dict((c["name"], c["phase"]) for c in res["components"])
    assert phases.pop("example-operator") == "Failed" and set(phases.values()) == {"Pending"}, phases
    assert "lots" not in json.dumps(dict((k, v) for k, v in res.items() if k != "invocation")), "the value itself is never shown (values may be secret)"
    assert "refused before anything was installed" in run.stdout and "COMPONENT" in run.stdout, "the outcome table is printed"
    assert mutations(kube, mark) == [], "no Lease, no namespace, no release, no object: nothing was written"
    assert kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm")["items"] == []


@pytest.mark.parametrize("helm", ["helm4"])
def test_failure_blocks_dependents_names_the_resource_and_rerun_finishes(run_playbook, kube, catalog, example_repo, helm):
    # The operator's pods run but never become Ready (a kwok stage the pod annotation selects); the real Deployment
    # controller then never reports it available.
    never_ready = {"example-operator": {"values": {"podAnnotations": {NEVER_READY: "true"}}}}
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm, timeout=15, overrides=never_ready))
    assert run.rc != 0
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-operator"]["phase"] == "Failed"
    assert "timed out waiting for release example-operator: Deployment %s/example-operator not ready" % kube.namespace in comps["example-operator"]["message"]
    assert comps["example-agent"]["phase"] == "Blocked" and comps["example-agent"]["blocked_by"] == ["example-operator"]
    for name in ("example-crds", "example-config", "example-monitoring", "example-jobs"):
        assert comps[name]["phase"] == "Ready", (name, comps[name]["message"])
    assert "failed: example-operator" in res["msg"] and "blocked: example-agent (by example-operator)" in res["msg"]
    assert kubectl_json(kube, "get", "daemonsets", "-n", kube.namespace)["items"] == [], "the blocked agent was not installed"

    # The cause fixed (no never-ready pods any more): the re-run finishes the rollout.
    again = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm))
    assert again.rc == 0, again.stdout[-5000:]
    phases = dict((c["name"], c["phase"]) for c in again.result("Roll out")["components"])
    assert phases["example-operator"] in ("Ready", "Unchanged") and phases["example-agent"] == "Ready"
    assert phases["example-crds"] == phases["example-monitoring"] == "Unchanged"


@pytest.mark.parametrize("helm", ["helm3"])
def test_absent_removes_in_reverse_order(run_playbook, kube, catalog, example_repo, helm):
    assert run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm)).rc == 0
    mark = kube.audit_mark()
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm, state="absent"))
    assert run.rc == 0, run.stdout[-5000:]
    res = run.result("Roll out")
    assert res["changed"] is True and set(c["phase"] for c in res["components"]) == {"Removed"}
    comps = dict((c["name"], c) for c in res["components"])
    removed_at = dict((n, _parse(c["started"])) for n, c in comps.items())
    assert removed_at["example-agent"] <= removed_at["example-operator"] <= removed_at["example-crds"]
    deleted = kube.audit(since=mark, verb="delete", user=kube.user(IDENTITY), namespace=kube.namespace, resource="secrets", code=200)
    assert deleted, "releases were uninstalled (helm deleted their release Secrets)"
    assert kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm")["items"] == []
    again = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, helm, state="absent"))
    assert again.result("Roll out")["changed"] is False


# -- the real recipe on the real charts -------------------------------------------------------------------
#
# Third-party charts bring ClusterRoles, CRDs, webhooks and cluster-scoped custom resources, which no shipped role
# grants: docs/rbac.md tells whoever deploys them to compose a ClusterRole per recipe from what its charts render.
# These tests do exactly that (compose_recipe_role) and run gated_release as ``release`` with that role added. They
# use a control plane of their own: twelve operators' cluster-scoped objects (webhooks among them) must not outlive
# the test in the session's shared cluster.

@pytest.fixture(scope="module")
def real_charts(tmp_path_factory, shared_dir):
    http = start_chart_repo(tmp_path_factory.mktemp("shared-http"), charts=[shared_http_dir(shared_dir)], url_prefix="")
    registry = start_registry(tmp_path_factory.mktemp("oci"))
    push_shared_oci(registry, shared_dir / "charts-repo" / "oci", helm=str(BIN / "helm"))
    yield http, registry
    registry.stop()
    http.stop()


def real_mirrors(http, registry, shared_dir):
    import yaml  # pylint: disable=import-outside-toplevel
    index = yaml.safe_load((shared_dir / "charts-repo" / "MIRRORS.yaml").read_text())
    mirrors = {}
    for entry in index["http"]:
        if entry.get("slug"):
            mirrors[entry["upstream"]] = "%s/%s" % (http.base_url, entry["slug"])
    for entry in index["oci"]:
        mirrors[entry["upstream"]] = {"url": "%s/%s" % (registry.url, entry["upstream"][len("oci://"):]), "plain_http": True}
    return mirrors


# The stand-in for nodewright (see the test's docstring). Its admission webhooks (failurePolicy Fail) are turned off:
# a real API server calls them for every Skyhook, and nothing serves them in the lab (kwok runs no containers).
# The real catalog's health checks assert what the operators do once they run (gpu-operator's ClusterPolicy reaching
# state ready, nvsentinel's and kai-scheduler's own resources...); kwok runs no containers, so no operator reconciles
# anything in the lab and those checks cannot pass here. These tests assert readiness (kstatus) on the real charts; the
# checks themselves are evaluated on the real catalog in tests/unit/.../_release/test_health_catalog_checks.py and
# against the lab in tests/integration/test_gates.py.
REAL_HEALTH_CHECKS = False
NODEWRIGHT_STAND_IN = {"chart": "skyhook-operator", "version": "v0.15.1", "values": {"webhook": {"enable": False}}}
RECIPE_ROLE = "aicr-lab:recipe-charts"
WRITE_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]


def _served_resources(kube):
    """``{(group, kind): (resource, namespaced)}`` of what the API server serves now (discovery, as admin)."""
    served = {}
    lists = [("", kube.rest.get("/api/v1"))]
    for group in kube.rest.get("/apis")["groups"]:
        lists.append((group["name"], kube.rest.get("/apis/%s" % group["preferredVersion"]["groupVersion"])))
    for group, listing in lists:
        for res in listing["resources"]:
            if "/" not in res["name"]:
                served[(group, res["kind"])] = (res["name"], res["namespaced"])
    return served


def _rendered(run_playbook, params, tmp_path):
    """Every object the recipe's components render (helm template of each chart through the mirrors, CRDs and hooks
    included; the manifest-only components' files), as (apiVersion, kind, name) of each document."""
    import yaml  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source, normalize_mirrors  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._common.deps import Loader  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes as deep_merge  # pylint: disable=import-outside-toplevel

    resolved = run_playbook("recipe_resolve.yml", extravars={"catalog": params["catalog"], "criteria": params["criteria"],
                                                             "skip_components": params.get("recipe_skip", [])})
    assert resolved.rc == 0, resolved.stdout[-3000:]
    docs = []
    mirrors = normalize_mirrors(params["mirrors"])
    for comp in resolved.result("Resolve")["components"]:
        if comp["name"] in params.get("skip", []):
            continue
        override = params.get("overrides", {}).get(comp["name"], {})
        comp = dict(comp, **{k: v for k, v in override.items() if k in ("chart", "version")})
        comp["values"] = deep_merge(comp.get("values") or {}, override.get("values") or {})
        texts = []
        if comp.get("chart") and not comp.get("manifest_only"):
            ref, repo, flags, _where = chart_source(comp["chart"], comp.get("repository"), mirrors)
            values = tmp_path / ("%s.values.json" % comp["name"])
            values.write_text(json.dumps(comp.get("values") or {}))
            argv = [params["helm_binary"], "template", comp["name"], ref, "--namespace", comp["namespace"], "--include-crds",
                    "--values", str(values)] + (["--repo", repo] if repo else []) + (["--version", str(comp["version"])] if comp.get("version") else [])
            out = subprocess.run(argv + flags, capture_output=True, text=True, check=False)
            assert out.returncode == 0, out.stderr[-2000:]
            texts.append(out.stdout)
        texts.extend(Path(path).read_text() for path in comp.get("manifest_paths") or [])
        for text in texts:
            for line_block in re.split(r"^---\s*$", text, flags=re.M):
                api = re.search(r"^apiVersion:\s*['\"]?([^'\"\s]+)", line_block, flags=re.M)
                kind = re.search(r"^kind:\s*['\"]?([^'\"\s]+)", line_block, flags=re.M)
                if api and kind:
                    doc = {}
                    if kind.group(1) == "CustomResourceDefinition":
                        doc = yaml.load(line_block, Loader=Loader)  # nosec - helm's output; the collection's loader (YAML 1.1 '=')
                    docs.append((api.group(1), kind.group(1), doc))
    return docs


def compose_recipe_role(kube, run_playbook, params, tmp_path):
    """The ClusterRole docs/rbac.md asks for, composed from what the recipe's charts render: every kind they create
    (read for the readiness gates, written for helm), the CRDs they ship by name, and bind/escalate so the charts'
    own RBAC can be created. Bound to the release identity next to its shipped roles. Returns the role's rules."""
    served = _served_resources(kube)
    custom = {}
    crd_names = set()
    kinds = set()
    for api_version, kind, doc in _rendered(run_playbook, params, tmp_path):
        group = api_version.split("/")[0] if "/" in api_version else ""
        kinds.add((group, kind))
        if kind == "CustomResourceDefinition" and doc:
            crd_names.add(doc["metadata"]["name"])
            custom[(doc["spec"]["group"], doc["spec"]["names"]["kind"])] = doc["spec"]["names"]["plural"]
    by_group = {}
    for group, kind in sorted(kinds):
        if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            continue
        resource = custom.get((group, kind)) or served.get((group, kind), (None,))[0]
        assert resource, "kind %s/%s is neither served nor defined by a rendered CRD" % (group, kind)
        by_group.setdefault(group, set()).add(resource)
    rules = [{"apiGroups": [group], "resources": sorted(resources), "verbs": WRITE_VERBS} for group, resources in sorted(by_group.items())]
    rules.append({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["create"]})
    if crd_names:
        rules.append({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "resourceNames": sorted(crd_names),
                      "verbs": ["get", "update", "patch", "delete"]})
    rules.append({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "roles"], "verbs": ["bind", "escalate"]})
    kube.rest.apply("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + RECIPE_ROLE,
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": RECIPE_ROLE}, "rules": rules})
    binding = "aicr-lab:release:recipe-charts"
    kube.rest.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + binding, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RECIPE_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": kube.user(IDENTITY)}]})
    return rules


@pytest.mark.slow
@pytest.mark.parametrize("helm", HELMS)
def test_real_h100_kind_training_converges(run_playbook, tmp_path, shared_dir, real_charts, private_kube, helm):
    """All 12 components Ready in dependency order, as the release identity plus the recipe's composed role.
    nodewright-operator: the recipe pins chart nodewright v0.17.1, which could not be obtained; the shared charts hold
    skyhook-operator v0.15.1 as a stand-in, used via an override."""
    http, registry = real_charts
    kube = private_kube
    params = {"catalog": str(shared_dir / "aicr" / "catalog"), "criteria": H100_KIND_TRAINING, "kubeconfig": kube.kubeconfig_for(IDENTITY),
              "helm_binary": str(BIN / helm), "mirrors": real_mirrors(http, registry, shared_dir), "timeout": 300, "poll_interval": 0.3,
              "overrides": {"nodewright-operator": NODEWRIGHT_STAND_IN}, "health_checks": REAL_HEALTH_CHECKS}
    rules = compose_recipe_role(kube, run_playbook, params, tmp_path)
    assert not any("*" in r.get("resources", []) + r.get("verbs", []) + r.get("apiGroups", []) for r in rules), rules
    run = run_playbook("release_converge.yml", extravars=params)
    assert run.rc == 0, run.stdout[-3000:]
    res = run.result("Roll out")
    assert res["summary"]["component_count"] == 12
    assert set(c["phase"] for c in res["components"]) == {"Ready"}, [(c["name"], c["phase"], c["message"]) for c in res["components"]]
    assert_gate_order(res)
    mark = kube.audit_mark()
    again = run_playbook("release_converge.yml", extravars=params)
    assert again.rc == 0, again.stdout[-6000:]
    assert again.result("Roll out")["changed"] is False
    assert mutations(kube, mark) == []
    assert helm_calls(kube, mark) == []


@pytest.mark.slow
def test_eks_manifest_only_nodewright_customizations_is_applied_as_objects(run_playbook, tmp_path, shared_dir, real_charts, private_kube):
    """h100-eks-ubuntu-training's manifest-only nodewright-customizations: its Skyhook CR is applied (server-side) once the
    (stand-in) nodewright operator's CRD is Ready; the other components are skipped."""
    http, registry = real_charts
    kube = private_kube
    others = ["aws-ebs-csi-driver", "aws-efa", "cert-manager", "nfd", "prometheus-operator-crds", "kube-prometheus-stack", "gpu-operator",
              "k8s-ephemeral-storage-metrics", "kai-scheduler", "nvidia-dra-driver-gpu", "nvsentinel", "prometheus-adapter"]
    params = {"catalog": str(shared_dir / "aicr" / "catalog"), "criteria": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
              "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / "helm"), "mirrors": real_mirrors(http, registry, shared_dir),
              "skip": others, "overrides": {"nodewright-operator": NODEWRIGHT_STAND_IN}, "health_checks": REAL_HEALTH_CHECKS}
    compose_recipe_role(kube, run_playbook, params, tmp_path)
    mark = kube.audit_mark()
    run = run_playbook("release_converge.yml", extravars=params)
    assert run.rc == 0, run.stdout[-4000:]
    comps = dict((c["name"], c) for c in run.result("Roll out")["components"])
    assert set(comps) == {"nodewright-operator", "nodewright-customizations"}
    custom = comps["nodewright-customizations"]
    assert custom["kind"] == "objects" and custom["phase"] == "Ready" and custom["revision"] is None
    assert [(o["kind"], o["id"]) for o in custom["objects"]] == [("Skyhook", "nodewright-customizations-post-skyhook-tuning")]
    applied = [e for e in kube.audit(since=mark, verb="patch", resource="skyhooks", user=kube.user(IDENTITY)) if "dryRun" not in e["query"]]
    assert applied and "fieldManager=aicr-runtime" in applied[0]["query"] and applied[0]["code"] in (200, 201), applied


def test_transient_api_errors_are_retried(run_playbook, kube, catalog, example_repo):
    """503/429 answers to reads (what an apiserver under load gives) do not fail the rollout.

    A fault proxy in front of the real API server answers them (the same identity's certificate is forwarded, so
    everything else is the real server's answer)."""
    with kube.fault_proxy() as proxy:
        proxy.add_fault(code=503, count=3, verbs=["get"], user_agent="aicr-runtime")
        proxy.add_fault(code=429, count=2, verbs=["list"], user_agent="aicr-runtime", retry_after=0)
        params = example_vars(kube, catalog, example_repo, "helm3", kubeconfig=proxy.kubeconfig_for(kube.kubeconfig_for(IDENTITY)))
        run = run_playbook("release_converge.yml", extravars=params)
        faulted = [r for r in proxy.requests if r["fault"] in (429, 503)]
    assert run.rc == 0, run.stdout[-4000:]
    assert set(c["phase"] for c in run.result("Roll out")["components"]) == {"Ready"}
    assert sorted(r["fault"] for r in faulted) == [429, 429, 503, 503, 503], faulted
    assert all("aicr-runtime" in r["userAgent"] for r in faulted)


def test_a_held_stack_lease_stops_a_second_run(run_playbook, kube, catalog, example_repo):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "aicr-runtime-h100-kind-training", "namespace": kube.namespace,
                          "annotations": {"aicr.io/holder-message": "nightly converge"}},
             "spec": {"holderIdentity": "ci@runner-7/4242", "leaseDurationSeconds": 300, "acquireTime": now, "renewTime": now}}
    kube.rest.create("/apis/coordination.k8s.io/v1/namespaces/%s/leases" % kube.namespace, lease)
    mark = kube.audit_mark()
    # The stack keeps its default name (the recipe's), whose Lease another run holds.
    params = example_vars(kube, catalog, example_repo, "helm3")
    del params["stack"]
    run = run_playbook("release_converge.yml", extravars=params)
    assert run.rc != 0
    msg = run.result("Roll out")["msg"]
    assert msg.startswith("lease: stack h100-kind-training is being rolled out by ci@runner-7/4242 (nightly converge)"), msg
    assert mutations(kube, mark) == [], "nothing may be deployed while another run holds the stack"


def test_prune_removes_a_component_the_recipe_no_longer_has(run_playbook, kube, catalog, example_repo):
    assert run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, "helm4")).rc == 0
    params = example_vars(kube, catalog, example_repo, "helm4", recipe_skip=["example-agent"], prune=True)
    run = run_playbook("release_converge.yml", extravars=params)
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-agent"]["phase"] == "Removed" and comps["example-agent"]["action"] == "remove"
    assert all(c["phase"] == "Unchanged" for n, c in comps.items() if n != "example-agent")
    releases = kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm,name=example-agent")["items"]
    assert releases == []
    assert kubectl_json(kube, "get", "daemonsets", "-n", kube.namespace)["items"] == [], "the agent's DaemonSet went with its release"
    again = run_playbook("release_converge.yml", extravars=params)
    assert again.result("Roll out")["changed"] is False


def test_an_identity_without_the_shipped_roles_is_refused_in_one_line(run_playbook, kube, catalog, example_repo):
    """RBAC end to end: the same rollout as ``nobody`` (a user bound to no role) fails on its first API call with one
    line naming the verb, the resource, the namespace and the identity; nothing is written."""
    mark = kube.audit_mark()
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, catalog, example_repo, "helm4", identity="nobody"))
    assert run.rc != 0
    assert run.failed_tasks == ["Roll out"], run.stdout[-4000:]
    res = run.result("Roll out")
    msg = res["msg"]
    assert "\n" not in msg and "Traceback" not in run.stdout, msg
    calls = kube.audit(since=mark, user=kube.user("nobody"))
    # discovery (/api, /apis/<group>/<version>) is open to every authenticated user; every resource request was refused
    denied = [e for e in calls if e["resource"]]
    assert denied and all(e["code"] == 403 and e["authorization"] == "forbid" for e in denied), denied
    first = denied[0]
    assert kube.user("nobody") in msg, msg
    assert re.search(r"\bcannot %s resource \"%s\"" % (first["verb"], first["resource"]), msg), (msg, first)
    assert first["namespace"] == kube.namespace and kube.namespace in msg, (msg, first)
    assert [e for e in denied if e["mutating"] and e["code"] != 403] == []
    assert kubectl_json(kube, "get", "secrets,configmaps,leases", "-n", kube.namespace, "-l", "app.kubernetes.io/managed-by")["items"] == []


def test_a_secret_value_never_appears_in_verbose_output_diff_or_result(run_playbook, kube, catalog, example_repo):
    """Issue 15, item 2: a value under a sensitive key (``apiKey``) - given in component_overrides, and read back from the
    release Secret on the next run - appears nowhere in ansible-playbook's -v output, the diff or the task result; the
    diff shows <hidden>/<changed> instead. A dict kubeconfig does not mangle the result ("********Map")."""
    first, second = "sk-first-0123456789", "sk-second-9876543210"
    params = example_vars(kube, catalog, example_repo, "helm4", overrides={"example-agent": {"values": {"auth": {"apiKey": first, "user": "agent"}}}})
    run = run_playbook("release_converge.yml", extravars=params, envvars={"ANSIBLE_VERBOSITY": "1"})
    assert run.rc == 0, run.stdout[-4000:]
    assert first not in run.stdout and first not in json.dumps(run.result("Roll out"))
    params["overrides"] = {"example-agent": {"values": {"auth": {"apiKey": second, "user": "agent"}}}}
    run = run_playbook("release_converge.yml", extravars=params, envvars={"ANSIBLE_VERBOSITY": "1"}, diff=True)
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Roll out")
    for secret in (first, second):
        assert secret not in run.stdout and secret not in json.dumps(res)
    [diff] = [d for d in res["diff"] if d["before_header"].startswith("example-agent")]
    assert "apiKey: <hidden>" in diff["before"] and "apiKey: <changed>" in diff["after"] and "user: agent" in diff["after"]
    # the secret did reach the cluster (the test would prove nothing otherwise)
    release = kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm,name=example-agent,status=deployed")["items"]
    assert release and release[0]["metadata"]["labels"]["version"] == "2"


def test_a_forged_inventory_entry_naming_an_object_in_kube_system_is_left_alone(run_playbook, kube, catalog, example_repo):
    """Issue 15, item 1, and issue 35: anyone who may write ConfigMaps where the inventory lives could make the next run
    delete any object. A hand-written inventory entry naming a ConfigMap in kube-system is NOT deleted, by prune or by
    state=absent, and the run says so: an inventory edited by another field manager is not trusted at all (nothing is
    removed on its word); one applied under the collection's field manager name (anyone may claim a manager name) is
    read, but the object it names is not the stack's (label, field manager), and the stack's own objects and releases
    still go."""
    target = "forged-%s" % kube.namespace[-8:]
    kube.rest.create("/api/v1/namespaces/kube-system/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": target}, "data": {"keep": "me"}})
    try:
        params = example_vars(kube, catalog, example_repo, "helm4")
        assert run_playbook("release_converge.yml", extravars=params).rc == 0
        path = "/api/v1/namespaces/%s/configmaps/aicr-runtime-%s-inventory" % (kube.namespace, kube.namespace)

        def forge(spoofed):
            inventory = kube.rest.get(path)
            document = json.loads(inventory["data"]["inventory"])
            document["components"]["ghost"] = {"namespace": "kube-system", "release": None, "dependencies": [], "objects": [
                {"id": "ghost-post-configmap-%s" % target, "apiVersion": "v1", "kind": "ConfigMap", "name": target, "namespace": "kube-system",
                 "wave": "post"}]}
            document["order"].append("ghost")
            if spoofed:
                kube.rest.apply(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": inventory["metadata"]["name"]},
                                       "data": {"inventory": json.dumps(document)}}, manager="aicr-runtime")
            else:
                inventory["data"]["inventory"] = json.dumps(document)
                kube.rest.request("PUT", path, body=inventory)

        releases = len(kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm")["items"])
        for spoofed, extra in ((True, {"prune": True}), (False, {"state": "absent"}), (True, {"state": "absent"})):
            forge(spoofed)
            mark = kube.audit_mark()
            run = run_playbook("release_converge.yml", extravars=dict(params, **extra))
            assert run.rc == 0, run.stdout[-4000:]
            assert kube.rest.exists("/api/v1/namespaces/kube-system/configmaps/%s" % target), extra
            if spoofed:
                assert "left ConfigMap kube-system/%s alone" % target in run.stdout and "belongs to nobody" in run.stdout, run.stdout[-4000:]
            else:
                assert "was not written by aicr-runtime" in run.stdout and "not trusted" in run.stdout, run.stdout[-4000:]
                removed = [e["path"] for e in kube.audit(since=mark, user=kube.user(IDENTITY))
                           if e["verb"] == "delete" and e["resource"] != "leases"]  # (the run's own Lease, taken and given back)
                assert removed == [], removed  # nothing removed on its word, not even the stack's own releases
                assert len(kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm")["items"]) == releases
            deletes = [e for e in kube.audit(since=mark, user=kube.user(IDENTITY)) if e["verb"] == "delete" and e["namespace"] == "kube-system"]
            assert deletes == [], deletes
        assert kubectl_json(kube, "get", "secrets", "-n", kube.namespace, "-l", "owner=helm")["items"] == [], "state=absent removed the stack's own"
    finally:
        kube.rest.delete("/api/v1/namespaces/kube-system/configmaps/%s" % target)


def test_cluster_runtime_keeps_secret_values_out_of_every_event_and_passes_clear_pending(run_playbook, kube, catalog, example_repo):
    """issue 35: the role's values check registered recipe_resolve's effective values and looped values_schema over
    them, gated_release's invocation carried resolve.component_overrides' values: all of it in the job events. The
    values still reach helm as they are."""
    secrets = ("role-pw-5e6f7a8b", "role-token-9c0d1e2f")
    role_vars = {"cluster_runtime_catalog": str(catalog), "cluster_runtime_criteria": H100_KIND_TRAINING,
                 "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY), "cluster_runtime_helm_binary": str(BIN / "helm4"),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_lease_namespace": kube.namespace, "cluster_runtime_validate_values": True, "cluster_runtime_clear_pending": True,
                 "cluster_runtime_recipe_overrides": {"example-agent": {"values": {"auth": {"password": secrets[0]}}}},
                 "cluster_runtime_component_overrides": {"example-jobs": {"values": {"apiToken": secrets[1]}}}}
    run = run_playbook("release_role.yml", extravars=role_vars)
    assert run.rc == 0, run.stdout[-5000:]
    leaks = [(e.get("event"), (e.get("event_data") or {}).get("task")) for e in run.events if any(s in json.dumps(e) for s in secrets)]
    assert not leaks and not any(s in run.stdout for s in secrets), leaks
    rollout = run.result("Resolve the cluster's recipe and deploy its components in dependency order")
    assert rollout["invocation"]["module_args"]["clear_pending"] is True
    deployed = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "get", "values", "example-agent", "-n", kube.namespace, "-o", "json"],
                              capture_output=True, text=True, check=True)
    assert json.loads(deployed.stdout)["auth"] == {"password": secrets[0]}, "helm got the value as it is"


def test_node_scheduling_reaches_the_charts_values_in_the_plan(run_playbook, kube, catalog, example_repo):
    """Issue 38: cluster_runtime_node_scheduling goes to gated_release's resolve.node_scheduling and is written at the
    registry's nodeScheduling paths, as aicr bundle writes it; check mode's diff shows the values helm would be given."""
    registry = catalog / "registry.yaml"
    text = registry.read_text()
    for name, scope in (("example-agent", "accelerated"), ("example-operator", "system")):
        head = "  - name: %s\n" % name
        start = text.index(head)
        end = text.index("\n", text.index("defaultNamespace:", start)) + 1
        paths = "    nodeScheduling:\n      %s:\n        nodeSelectorPaths: [nodeSelector]\n        tolerationPaths: [tolerations]\n" % scope
        text = text[:end] + paths + text[end:]
    registry.write_text(text)
    role_vars = {"cluster_runtime_catalog": str(catalog), "cluster_runtime_criteria": H100_KIND_TRAINING,
                 "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY), "cluster_runtime_helm_binary": str(BIN / "helm4"),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_lease_namespace": kube.namespace,
                 "cluster_runtime_node_scheduling": {"accelerated": {"node_selector": {"pool": "gpu"},
                                                                     "tolerations": ["nvidia.com/gpu=present:NoSchedule"]}}}
    mark = kube.audit_mark()
    run = run_playbook("release_role.yml", extravars=role_vars, check=True, diff=True)
    assert run.rc == 0, run.stdout[-5000:]
    res = run.result("Resolve the cluster's recipe and deploy its components in dependency order")
    # the diff shows the values helm is given, per component
    values = dict((d["after_header"].split(" ")[0], d["after"]) for d in res["diff"])
    assert "nodeSelector:\n  pool: gpu\ntolerations:\n- effect: NoSchedule\n  key: nvidia.com/gpu\n  operator: Equal\n  value: present\n" \
        in values["example-agent"], values["example-agent"]
    assert "tolerations:\n- operator: Exists\n" in values["example-operator"] and "pool" not in values["example-operator"]  # AICR's default
    assert "tolerations" not in values["example-jobs"]  # no nodeScheduling in its registry entry
    assert mutations(kube, mark) == []
