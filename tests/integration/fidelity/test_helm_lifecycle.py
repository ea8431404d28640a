"""helm 3.17.3 and 4.3.1 against the lab: the whole release lifecycle on every example chart.

install --create-namespace --wait --wait-for-jobs, upgrade --dry-run=server (changes nothing),
upgrade --wait, history, get values, rollback --wait, uninstall --wait leaving nothing.

helm runs as the least-privilege ``release`` identity, as gated_release does: creating the
namespace, the release Secrets and every object of the example charts is what the shipped roles
``aicr-runtime:release`` and ``aicr-runtime:example-charts`` must grant. kwok makes the pods Ready,
the real controllers turn that into Deployment, DaemonSet and Job status that helm waits on. The
probes read as admin (inspection).
"""

import json

import pytest

from fidelity_clients import wait_until

pytestmark = [pytest.mark.helm, pytest.mark.slow]

RELEASE = "rel"
TIMEOUT = "120s"
# Objects a namespace holds on a real cluster without anyone creating them.
NAMESPACE_DEFAULTS = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}


def get(kubectl, kind, name, namespace, check=True):
    result = kubectl.run("get", kind, name, "-n", namespace, "-o", "json", check=check)
    return json.loads(result.stdout) if result.returncode == 0 else None


def condition(obj, kind):
    for cond in obj.get("status", {}).get("conditions", []):
        if cond["type"] == kind:
            return cond["status"]
    return None


def probe_operator(kubectl, ns, stage):
    deploy = get(kubectl, "deployment", "rel-example-operator", ns)
    want = 2 if stage == "upgraded" else 1
    assert deploy["spec"]["replicas"] == want
    assert deploy["status"].get("availableReplicas") == want and deploy["status"].get("updatedReplicas") == want
    assert condition(deploy, "Available") == "True"
    assert get(kubectl, "service", "rel-example-operator", ns)["spec"]["ports"][0]["port"] == 8080
    assert get(kubectl, "serviceaccount", "rel-example-operator", ns)


def probe_agent(kubectl, ns, stage):
    ds = get(kubectl, "daemonset", "rel-example-agent", ns)
    env = {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["AGENT_MODE"] == ("enforce" if stage == "upgraded" else "observe")
    status = ds["status"]
    assert status["desiredNumberScheduled"] >= 1
    assert status["numberReady"] == status["desiredNumberScheduled"] == status.get("updatedNumberScheduled")


def probe_crds(kubectl, ns, stage):
    crd = get(kubectl, "crd", "widgets.example.aicr.io", "default")
    assert condition(crd, "Established") == "True"
    widget = get(kubectl, "widgets.example.aicr.io", "rel", ns)
    assert widget["spec"] == {"size": 5 if stage == "upgraded" else 3, "color": "green"}


def probe_monitoring(kubectl, ns, stage):
    deploy = get(kubectl, "deployment", "rel-example-exporter", ns)
    want = 2 if stage == "upgraded" else 1
    assert deploy["spec"]["replicas"] == want and deploy["status"].get("availableReplicas") == want
    scrape = get(kubectl, "configmap", "rel-scrape-config", ns)["data"]["scrape.yaml"]
    assert "rel-example-exporter.%s.svc:9400" % ns in scrape


def probe_hooks(kubectl, ns, stage):
    config = get(kubectl, "configmap", "rel-example-hooks", ns)
    assert config["data"]["mode"] == ("strict" if stage == "upgraded" else "standard")
    job = get(kubectl, "job", "rel-example-hooks-check", ns, check=False)
    if stage == "installed":
        # installed with deletePolicy=before-hook-creation: the post-install Job stays, complete
        assert job is not None, "the post-install hook Job was not created"
        assert condition(job, "Complete") == "True" and job["status"].get("succeeded") == 1
    else:
        # the post-upgrade hook ran with the default policy (hook-succeeded): deleted once it succeeded
        assert job is None, "hook-succeeded Job still present: %s" % job.get("status")


CASES = {
    "example-operator": ([], ["--set", "replicaCount=2"], {"replicaCount": 2}, probe_operator),
    "example-agent": ([], ["--set", "env.AGENT_MODE=enforce"], {"env": {"AGENT_MODE": "enforce"}}, probe_agent),
    "example-crds": ([], ["--set", "widget.size=5"], {"widget": {"size": 5}}, probe_crds),
    "example-monitoring": ([], ["--set", "example-exporter.replicaCount=2"], {"example-exporter": {"replicaCount": 2}}, probe_monitoring),
    "example-hooks": (["--set", "hook.deletePolicy=before-hook-creation"], ["--set", "settings.mode=strict"], {"settings": {"mode": "strict"}}, probe_hooks),
}


def history(helm, ns):
    return [(h["revision"], h["status"]) for h in helm.json("history", RELEASE, "-n", ns)]


def namespace_leftovers(kubectl, ns):
    """Every object left in the namespace (of any listable namespaced type) but the namespace defaults."""
    types = kubectl.run("api-resources", "--verbs=list", "--namespaced", "-o", "name").stdout.split()
    types = [t for t in types if t not in ("events", "events.events.k8s.io")]
    items = json.loads(kubectl.run("get", ",".join(types), "-n", ns, "-o", "json").stdout)["items"]
    return sorted((i["kind"], i["metadata"]["name"]) for i in items if (i["kind"], i["metadata"]["name"]) not in NAMESPACE_DEFAULTS)


@pytest.mark.parametrize("chart", sorted(CASES))
@pytest.mark.usefixtures("widgets_crd")
def test_release_lifecycle(helm, kubectl, admin_kubectl, example_repo, new_namespace, chart):
    install_args, upgrade_args, upgrade_values, probe = CASES[chart]
    release_kubectl, kubectl = kubectl, admin_kubectl
    ns = new_namespace("fid-" + chart)
    source = [chart, "--repo", example_repo.url, "--version", "0.1.0", "-n", ns]
    install = ["install", RELEASE] + source + install_args + ["--wait", "--wait-for-jobs", "--timeout", TIMEOUT]

    if helm.name == "helm4":
        # helm 4 makes --create-namespace a server-side apply of the Namespace: `patch` on namespaces, which
        # aicr-runtime:release does not grant. That is why gated_release passes no --create-namespace and
        # creates a missing namespace itself (`create`): do the same here.
        denied = helm.run(*(install + ["--create-namespace"]), check=False)
        assert denied.returncode == 1 and 'cannot patch resource "namespaces"' in denied.stderr, denied.stderr
        assert kubectl.run("get", "namespace", ns, check=False).returncode == 1, "the refused install created the namespace"
        assert kubectl.json("get", "secrets", "-A", "-l", "owner=helm,name=%s" % RELEASE, "--field-selector",
                            "metadata.namespace=%s" % ns)["items"] == [], "the refused install recorded a release"
        release_kubectl.run("create", "namespace", ns)
        helm.run(*install)
    else:
        # helm 3 creates the namespace with `create`, which the release identity has
        helm.run(*(install + ["--create-namespace"]))
    assert kubectl.json("get", "namespace", ns)["status"]["phase"] == "Active"
    assert history(helm, ns) == [(1, "deployed")]
    probe(kubectl, ns, "installed")

    dry = helm.run("upgrade", RELEASE, *(source + upgrade_args + ["--dry-run=server"]))
    assert "STATUS: pending-upgrade" in dry.stdout or "REVISION: 2" in dry.stdout
    assert history(helm, ns) == [(1, "deployed")], "a server dry-run must not record a revision"
    probe(kubectl, ns, "installed")

    helm.run("upgrade", RELEASE, *(source + upgrade_args + ["--wait", "--wait-for-jobs", "--timeout", TIMEOUT]))
    assert history(helm, ns) == [(1, "superseded"), (2, "deployed")]
    probe(kubectl, ns, "upgraded")
    assert helm.json("get", "values", RELEASE, "-n", ns) == upgrade_values
    assert helm.json("get", "values", RELEASE, "-n", ns, "--revision", "1") == (
        {"hook": {"deletePolicy": "before-hook-creation"}} if install_args else None)

    helm.run("rollback", RELEASE, "1", "-n", ns, "--wait", "--timeout", TIMEOUT)
    assert history(helm, ns) == [(1, "superseded"), (2, "superseded"), (3, "deployed")]
    probe(kubectl, ns, "rolled-back")
    releases = helm.json("list", "-n", ns)
    assert [(r["name"], str(r["revision"]), r["status"], r["chart"]) for r in releases] == [(RELEASE, "3", "deployed", chart + "-0.1.0")]

    helm.run("uninstall", RELEASE, "-n", ns, "--wait", "--timeout", TIMEOUT)
    assert helm.json("list", "-n", ns) == []
    assert kubectl.json("get", "secrets", "-n", ns, "-l", "owner=helm")["items"] == [], "release records left behind"
    # helm deletes what it created (background propagation): the garbage collector then removes what those
    # owned (ReplicaSets, pods, ControllerRevisions, EndpointSlices) asynchronously, as on any cluster
    wait_until(lambda: namespace_leftovers(kubectl, ns) == [], 60, "the namespace to hold nothing but its defaults")
    if chart == "example-crds":
        # helm never deletes what it installed from crds/
        assert get(kubectl, "crd", "widgets.example.aicr.io", "default")
