"""stack_info module against the Kubernetes API emulator: decisions, catalog selection, operator defaults, no CRD."""

from modules_testlib import run_main

from ansible_collections.aicr.runtime.plugins.module_utils.kube import build_api_client
from ansible_collections.aicr.runtime.plugins.module_utils.stack import crd, store
from ansible_collections.aicr.runtime.plugins.modules import stack_info


def run(capsys, args):
    return run_main(stack_info, capsys, args)


def test_without_the_crd_the_list_is_empty(capsys, kube):
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig})
    assert code == 0 and out["crd_installed"] is False and out["stacks"] == [] and not out["changed"]


def test_decisions_and_catalog_selection(capsys, kube, tmp_path):
    api = store.Api(build_api_client(kube.kubeconfig))
    store.ensure_crd(api, crd.build_crd())
    releases = tmp_path / "releases"
    releases.mkdir()
    for version in ("1.0.0", "1.1.0"):
        (releases / ("catalog-%s.tar.gz" % version)).write_bytes(b"x")

    def create(name, spec):
        api.request("POST", store.stack_path(), body={"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack",
                                                      "metadata": {"name": name}, "spec": spec})
    create("fresh", {"catalog": {"source": str(releases)}})
    create("paused", {"catalog": {"source": str(releases)}, "suspend": True})
    create("done", {"catalog": {"source": str(releases)}, "autoUpdate": False})
    create("badpin", {"catalog": {"source": str(releases), "version": "9.0.0"}})
    writer = store.StatusWriter(store.CrdStore(api), "done")
    writer.apply({"phase": "Ready", "observed_generation": 1, "recipe": {"name": "r", "catalogVersion": "1.0.0"},
                  "reconcile": {"lastReconcileTime": "2999-01-01T00:00:00Z"}})

    code, out = run(capsys, {"kubeconfig": kube.kubeconfig, "auto_update": True, "resync_interval": "10m"})
    assert code == 0 and out["crd_installed"] is True
    stacks = dict((s["name"], s) for s in out["stacks"])
    assert sorted(stacks) == ["badpin", "done", "fresh", "paused"]
    assert stacks["fresh"]["needs_converge"] and stacks["fresh"]["reason"] == "never reconciled (no status.observedGeneration)"
    assert stacks["fresh"]["catalog"]["version"] == "1.1.0" and stacks["fresh"]["catalog"]["auto_update_source"] == "default"
    assert stacks["paused"]["needs_converge"] is False and stacks["paused"]["decision"]["suspended"] is True
    done = stacks["done"]
    assert done["needs_converge"] is False and done["decision"]["resync_seconds"] == 600
    assert done["catalog"]["version"] == "1.0.0" and done["catalog"]["current"] is False
    assert done["catalog"]["auto_update"] is False and done["catalog"]["auto_update_source"] == "spec"
    assert "spec.catalog.version: '9.0.0' is not allowed" in stacks["badpin"]["decision"]["catalog_error"]
    assert sorted(out["converge"]) == ["badpin", "fresh"]

    code, out = run(capsys, {"kubeconfig": kube.kubeconfig, "names": ["done"], "_ansible_check_mode": True})
    assert code == 0 and [s["name"] for s in out["stacks"]] == ["done"]

    current = api.request("GET", store.stack_path("done"))
    api.request("PUT", store.stack_path("done"), body=dict(current, spec=dict(current["spec"], autoUpdate=True)))
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig, "names": ["done"]})
    assert out["stacks"][0]["reason"] == "generation 2 != observedGeneration 1"
    assert out["stacks"][0]["catalog"]["upgrade"] is True and out["stacks"][0]["catalog"]["version"] == "1.1.0"


def test_bad_operator_resync_is_an_error(capsys, kube):
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig, "resync_interval": "soon"})
    assert code == 1 and out["msg"].startswith("resync_interval: 'soon' is not allowed")
