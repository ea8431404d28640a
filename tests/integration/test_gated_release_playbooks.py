"""gated_release end to end: ansible-playbook -> installed collection -> real helm 3/4 -> Kubernetes API emulator.

* the example catalog's recipe converges (through the cluster_runtime role); a re-run reports
  changed=false, runs no helm at all (no helm user agent in the audit log) and makes no mutating
  API call (server-side dry-run applies are the only non-GET requests);
* check mode is the plan and mutates nothing;
* a component that never becomes ready fails with the resource named, blocks exactly its
  dependents; after the cause is fixed a re-run finishes the rollout;
* state=absent removes everything in reverse dependency order;
* the real h100-kind-training recipe on the real charts (HTTP repositories + local OCI registry via
  repository_mirrors) converges with all 12 components Ready in dependency order.
"""

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from aicr_lab.charts.pytest_fixture import push_shared_oci, shared_http_dir, start_chart_repo, start_registry
from aicr_emulators.kube.pytest_fixture import start_emulator

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_CATALOG = REPO / "examples" / "catalog"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
H100_KIND_TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}
HELMS = ["helm3", "helm4"]

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


@pytest.fixture
def kube(tmp_path):
    # validate_builtins=False: the emulator's built-in CRD schema rejects nested JSONSchemaProps under `items`
    # (strict decoding: unknown field ...items.type), which real apiservers accept.
    handle = start_emulator(tmp_path / "kube", default_ready_after=0.3, validate_builtins=False)
    yield handle
    handle.stop()


def _parse(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")


def assert_gate_order(result):
    """No component started before each of its dependencies had become Ready."""
    comps = dict((c["name"], c) for c in result["components"])
    for comp in comps.values():
        for dep in comp["dependencies"]:
            ready_at = _parse(comps[dep]["started"]) + datetime.timedelta(seconds=comps[dep]["duration"])
            assert _parse(comp["started"]) >= ready_at - datetime.timedelta(milliseconds=20), (comp["name"], dep)


def mutations(kube, since):
    """Mutating API calls after ``since``, excluding server-side dry runs."""
    return [e for e in kube.control.audit(mutating=True, since=since) if "dryRun" not in json.dumps(e)]


def helm_calls(kube, since):
    """Requests helm made after ``since`` (a hook watch opened by an earlier run is logged when it closes: ignored)."""
    return [e for e in kube.control.audit(since=since) if "helm" in json.dumps(e.get("userAgent", "")).lower() and e.get("verb") != "watch"]


def kubectl_json(kube, *argv):
    argv = list(argv)
    if "-o" not in argv:
        argv += ["-o", "json"]
    out = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def example_vars(kube, example_repo, helm, **extra):
    params = {"catalog": str(EXAMPLE_CATALOG), "criteria": H100_KIND_TRAINING, "kubeconfig": kube.kubeconfig, "helm_binary": str(BIN / helm),
              "mirrors": {EXAMPLE_REPO: example_repo.url}}
    params.update(extra)
    return params


@pytest.mark.parametrize("helm", HELMS)
def test_example_recipe_converges_through_the_role_and_rerun_is_a_noop(run_playbook, kube, example_repo, helm):
    role_vars = {"cluster_runtime_catalog": str(EXAMPLE_CATALOG), "cluster_runtime_criteria": H100_KIND_TRAINING,
                 "cluster_runtime_kubeconfig": kube.kubeconfig, "cluster_runtime_helm_binary": str(BIN / helm),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_validate_values": helm == "helm4"}  # the optional values_schema step, once
    run = run_playbook("release_role.yml", extravars=role_vars)
    assert run.rc == 0, run.stdout[-5000:]
    if helm == "helm4":
        checks = run.result("Validate each chart component's values with values_schema")["results"]
        assert sorted(r["item"]["name"] for r in checks) == ["example-agent", "example-crds", "example-jobs", "example-monitoring", "example-operator"]
        assert all(r["valid"] for r in checks)
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
    releases = kubectl_json(kube, "get", "secrets", "-A", "-l", "owner=helm,status=deployed")["items"]
    assert sorted(r["metadata"]["labels"]["aicr.io/component"] for r in releases) == sorted(n for n in phases if n != "example-config")
    assert all(r["metadata"]["labels"]["aicr.io/stack"] == "h100-kind-training" and len(r["metadata"]["labels"]["aicr.io/digest"]) == 48
               for r in releases)
    widget = kubectl_json(kube, "get", "widgets.example.aicr.io", "-n", "aicr-demo", "--show-managed-fields")["items"][0]
    assert widget["metadata"]["labels"]["aicr.io/component"] == "example-operator"
    assert any(m["manager"] == "aicr-runtime" and m["operation"] == "Apply" for m in widget["metadata"]["managedFields"])

    mark = kube.control.audit_mark()
    again = run_playbook("release_role.yml", extravars=role_vars)
    assert again.rc == 0, again.stdout[-5000:]
    res2 = again.result("Resolve the cluster's recipe and deploy its components in dependency order")
    assert res2["changed"] is False
    assert set(c["phase"] for c in res2["components"]) == {"Unchanged"}
    assert [c["revision"] for c in res2["components"]] == [c["revision"] for c in res["components"]]
    assert mutations(kube, mark) == []
    assert helm_calls(kube, mark) == [], "a no-op run must not run helm (no helm upgrade)"


@pytest.mark.parametrize("helm", HELMS)
def test_check_mode_plan_mutates_nothing(run_playbook, kube, example_repo, helm):
    mark = kube.control.audit_mark()
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm), check=True, diff=True)
    assert run.rc == 0, run.stdout[-5000:]
    res = run.result("Roll out")
    assert res["changed"] is True
    assert [w["wave"] for w in res["waves"]] == [1, 2, 3]
    first = dict((c["name"], c) for c in res["waves"][0]["components"])
    assert first["example-crds"]["action"] == "install"
    assert any(a.startswith("would install example-operator") for a in res["actions"])
    assert all(c["phase"] == "Pending" for c in res["components"])
    assert mutations(kube, mark) == []
    assert res["diff"][0]["before"] == ""


@pytest.mark.parametrize("helm", ["helm4"])
def test_failure_blocks_dependents_names_the_resource_and_rerun_finishes(run_playbook, kube, example_repo, helm):
    kube.control.set_readiness(kind="Deployment", name="example-operator*", never_ready=True)
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm, timeout=4))
    assert run.rc != 0
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-operator"]["phase"] == "Failed"
    assert "timed out waiting for release example-operator: Deployment aicr-demo/example-operator not ready" in comps["example-operator"]["message"]
    assert comps["example-agent"]["phase"] == "Blocked" and comps["example-agent"]["blocked_by"] == ["example-operator"]
    for name in ("example-crds", "example-config", "example-monitoring", "example-jobs"):
        assert comps[name]["phase"] == "Ready", (name, comps[name]["message"])
    assert "failed: example-operator" in res["msg"] and "blocked: example-agent (by example-operator)" in res["msg"]

    kube.control.clear_readiness()
    again = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm))
    assert again.rc == 0, again.stdout[-5000:]
    phases = dict((c["name"], c["phase"]) for c in again.result("Roll out")["components"])
    assert phases["example-operator"] in ("Ready", "Unchanged") and phases["example-agent"] == "Ready"
    assert phases["example-crds"] == phases["example-monitoring"] == "Unchanged"


@pytest.mark.parametrize("helm", ["helm3"])
def test_absent_removes_in_reverse_order(run_playbook, kube, example_repo, helm):
    assert run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm)).rc == 0
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm, state="absent"))
    assert run.rc == 0, run.stdout[-5000:]
    res = run.result("Roll out")
    assert res["changed"] is True and set(c["phase"] for c in res["components"]) == {"Removed"}
    comps = dict((c["name"], c) for c in res["components"])
    removed_at = dict((n, _parse(c["started"])) for n, c in comps.items())
    assert removed_at["example-agent"] <= removed_at["example-operator"] <= removed_at["example-crds"]
    secrets = kube.control.audit(since=0, verb="delete")
    assert secrets, "releases were uninstalled"
    again = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, helm, state="absent"))
    assert again.result("Roll out")["changed"] is False


# -- the real recipe on the real charts -------------------------------------------------------------------

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


@pytest.mark.slow
@pytest.mark.parametrize("helm", HELMS)
def test_real_h100_kind_training_converges(run_playbook, tmp_path, shared_dir, real_charts, helm):
    """All 12 components Ready in dependency order. nodewright-operator: the recipe pins chart nodewright v0.17.1,
    which could not be obtained; the shared charts hold skyhook-operator v0.15.1 as a stand-in, used via an override."""
    http, registry = real_charts
    kube = start_emulator(tmp_path / "kube", default_ready_after=0.2, validate_builtins=False)
    try:
        params = {"catalog": str(shared_dir / "aicr" / "catalog"), "criteria": H100_KIND_TRAINING, "kubeconfig": kube.kubeconfig,
                  "helm_binary": str(BIN / helm), "mirrors": real_mirrors(http, registry, shared_dir), "timeout": 300, "poll_interval": 0.3,
                  "overrides": {"nodewright-operator": {"chart": "skyhook-operator", "version": "v0.15.1"}}}
        run = run_playbook("release_converge.yml", extravars=params)
        assert run.rc == 0, run.stdout[-3000:] + "".join(kube.stderr_lines[-40:])
        res = run.result("Roll out")
        assert res["summary"]["component_count"] == 12
        assert set(c["phase"] for c in res["components"]) == {"Ready"}, [(c["name"], c["phase"], c["message"]) for c in res["components"]]
        assert_gate_order(res)
        mark = kube.control.audit_mark()
        again = run_playbook("release_converge.yml", extravars=params)
        assert again.rc == 0, again.stdout[-6000:]
        assert again.result("Roll out")["changed"] is False
        assert mutations(kube, mark) == []
        assert helm_calls(kube, mark) == []
    finally:
        kube.stop()


@pytest.mark.slow
def test_eks_manifest_only_nodewright_customizations_is_applied_as_objects(run_playbook, tmp_path, shared_dir, real_charts):
    """h100-eks-ubuntu-training's manifest-only nodewright-customizations: its Skyhook CR is applied (server-side) once the
    (stand-in) nodewright operator's CRD is Ready; the other components are skipped."""
    http, registry = real_charts
    kube = start_emulator(tmp_path / "kube", default_ready_after=0.2, validate_builtins=False)
    try:
        others = ["aws-ebs-csi-driver", "aws-efa", "cert-manager", "nfd", "prometheus-operator-crds", "kube-prometheus-stack", "gpu-operator",
                  "k8s-ephemeral-storage-metrics", "kai-scheduler", "nvidia-dra-driver-gpu", "nvsentinel", "prometheus-adapter"]
        params = {"catalog": str(shared_dir / "aicr" / "catalog"), "criteria": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
                  "kubeconfig": kube.kubeconfig, "helm_binary": str(BIN / "helm"), "mirrors": real_mirrors(http, registry, shared_dir), "skip": others,
                  "overrides": {"nodewright-operator": {"chart": "skyhook-operator", "version": "v0.15.1"}}}
        run = run_playbook("release_converge.yml", extravars=params)
        assert run.rc == 0, run.stdout[-4000:]
        comps = dict((c["name"], c) for c in run.result("Roll out")["components"])
        assert set(comps) == {"nodewright-operator", "nodewright-customizations"}
        custom = comps["nodewright-customizations"]
        assert custom["kind"] == "objects" and custom["phase"] == "Ready" and custom["revision"] is None
        assert [(o["kind"], o["id"]) for o in custom["objects"]] == [("Skyhook", "nodewright-customizations-post-skyhook-tuning")]
        applied = [e for e in kube.control.audit(verb="patch") if "skyhooks" in e.get("path", "") and "dryRun" not in json.dumps(e)]
        assert applied and "fieldManager=aicr-runtime" in json.dumps(applied[0])
    finally:
        kube.stop()


def test_transient_api_errors_are_retried(run_playbook, kube, example_repo):
    """503/429 answers to reads (what an apiserver under load gives) do not fail the rollout."""
    # Only reads are faulted here: a fault on a request with a body currently leaves the body unread on the emulator's
    # keep-alive connection, so the next request on it gets a 400 (reported to the emulator owners).
    kube.control.add_fault(code=503, count=3, verbs=["get"], user_agent="aicr-runtime")
    kube.control.add_fault(code=429, count=2, verbs=["list"], user_agent="aicr-runtime", retry_after=0)
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, "helm3"))
    assert run.rc == 0, run.stdout[-4000:]
    assert set(c["phase"] for c in run.result("Roll out")["components"]) == {"Ready"}
    codes = [e.get("code") for e in kube.control.audit(since=0) if e.get("code") in (429, 503)]
    assert len(codes) == 5, codes


def test_a_held_stack_lease_stops_a_second_run(run_playbook, kube, example_repo, tmp_path):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "aicr-runtime-h100-kind-training", "namespace": "default", "annotations": {"aicr.io/holder-message": "nightly converge"}},
             "spec": {"holderIdentity": "ci@runner-7/4242", "leaseDurationSeconds": 300, "acquireTime": now, "renewTime": now}}
    path = tmp_path / "lease.json"
    path.write_text(json.dumps(lease))
    subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig, "create", "-f", str(path)], check=True, capture_output=True)
    mark = kube.control.audit_mark()
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, "helm3"))
    assert run.rc != 0
    msg = run.result("Roll out")["msg"]
    assert msg.startswith("lease: stack h100-kind-training is being rolled out by ci@runner-7/4242 (nightly converge)"), msg
    assert mutations(kube, mark) == [], "nothing may be deployed while another run holds the stack"


def test_prune_removes_a_component_the_recipe_no_longer_has(run_playbook, kube, example_repo):
    assert run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, "helm4")).rc == 0
    run = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, "helm4", recipe_skip=["example-agent"], prune=True))
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-agent"]["phase"] == "Removed" and comps["example-agent"]["action"] == "remove"
    assert all(c["phase"] == "Unchanged" for n, c in comps.items() if n != "example-agent")
    releases = kubectl_json(kube, "get", "secrets", "-A", "-l", "owner=helm,name=example-agent")["items"]
    assert releases == []
    again = run_playbook("release_converge.yml", extravars=example_vars(kube, example_repo, "helm4", recipe_skip=["example-agent"], prune=True))
    assert again.result("Roll out")["changed"] is False
