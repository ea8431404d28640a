"""stack_info module against the lab's real kube-apiserver, as the least-privilege ``stack`` identity: decisions, catalog
selection, operator defaults, no CRD."""

import json

from modules_testlib import run_main

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._stack import status, store
from ansible_collections.aicr.runtime.plugins.modules import stack_info


def run(capsys, args):
    return run_main(stack_info, capsys, args)


def test_without_the_crd_the_list_is_empty(capsys, private_kube):
    # a cluster of its own: on the shared one the CRD may be installed by other tests
    code, out = run(capsys, {"kubeconfig": private_kube.kubeconfig_for("stack")})
    assert code == 0 and out["crd_installed"] is False and out["stacks"] == [] and not out["changed"]


def test_decisions_and_catalog_selection(capsys, kube, stacks, tmp_path):
    kubeconfig = kube.kubeconfig_for("stack")
    api = client_for(kubeconfig)
    releases = tmp_path / "releases"
    releases.mkdir()
    for version in ("1.0.0", "1.1.0"):
        (releases / ("catalog-%s.tar.gz" % version)).write_bytes(b"x")

    fresh = stacks.create("fresh", {"catalog": {"source": str(releases)}})
    paused = stacks.create("paused", {"catalog": {"source": str(releases)}, "suspend": True})
    done = stacks.create("done", {"catalog": {"source": str(releases)}, "autoUpdate": False})
    badpin = stacks.create("badpin", {"catalog": {"source": str(releases), "version": "9.0.0"}})
    ours = [badpin, done, fresh, paused]
    writer = status.StatusWriter(store.CrdStore(api), done)
    writer.apply({"phase": "Ready", "observed_generation": 1, "recipe": {"name": "r", "catalogVersion": "1.0.0"},
                  "reconcile": {"lastReconcileTime": "2999-01-01T00:00:00Z"}})

    code, out = run(capsys, {"kubeconfig": kubeconfig, "auto_update": True, "resync_interval": "10m"})
    assert code == 0 and out["crd_installed"] is True
    # the cluster is shared: other tests' ClusterStacks may be listed too; ours must all be there
    listed = dict((s["name"], s) for s in out["stacks"])
    assert set(ours) <= set(listed)
    assert listed[fresh]["needs_converge"] and listed[fresh]["reason"] == "never reconciled (no status.observedGeneration)"
    assert listed[fresh]["catalog"]["version"] == "1.1.0" and listed[fresh]["catalog"]["auto_update_source"] == "default"
    assert listed[paused]["needs_converge"] is False and listed[paused]["decision"]["suspended"] is True
    finished = listed[done]
    assert finished["needs_converge"] is False and finished["decision"]["resync_seconds"] == 600
    assert finished["catalog"]["version"] == "1.0.0" and finished["catalog"]["current"] is False
    assert finished["catalog"]["auto_update"] is False and finished["catalog"]["auto_update_source"] == "spec"
    assert "spec.catalog.version: '9.0.0' is not allowed" in listed[badpin]["decision"]["catalog_error"]
    assert sorted(n for n in out["converge"] if n in ours) == [badpin, fresh]

    code, out = run(capsys, {"kubeconfig": kubeconfig, "names": [done], "_ansible_check_mode": True})
    assert code == 0 and [s["name"] for s in out["stacks"]] == [done]

    stacks.edit_spec(done, {"catalog": {"source": str(releases)}, "autoUpdate": True})  # its owner turns auto-update on
    code, out = run(capsys, {"kubeconfig": kubeconfig, "names": [done]})
    assert out["stacks"][0]["reason"] == "generation 2 != observedGeneration 1"
    # autoUpdate applies only a safe upgrade plan (issue 40); these releases are no catalogs, so there is no plan: held back
    held = out["stacks"][0]["catalog"]
    assert held["upgrade"] is False and held["version"] == "1.0.0" and held["held_back"]["version"] == "1.1.0"
    assert held["held_back"]["verdict"] == "blocked" and held["held_back"]["reasons"][0].startswith("no plan: ")
    assert held["message"].startswith("autoUpdate held back catalog 1.1.0 (upgrade plan: blocked: no plan: ")


def test_bad_operator_resync_is_an_error(capsys, kube):
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig_for("stack"), "resync_interval": "soon"})
    assert code == 1 and out["msg"].startswith("resync_interval: 'soon' is not allowed")


def test_a_forged_configmap_is_a_warning_and_a_foreign_claim_never_a_stack(capsys, kube):
    """Issue #35: a second ConfigMap labelled ``gpu`` was listed as stack ``gpu`` with the forger's spec."""
    import json

    kubeconfig = kube.kubeconfig_for("stack")
    store.ConfigMapStore(client_for(kubeconfig), kube.namespace).ensure_spec("gpu", {"catalog": {"source": "/real"}})
    forged = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "evil", "namespace": kube.namespace, "labels": {"runtime.aicr.io/stack": "gpu"}},
              "data": {"spec": json.dumps({"catalog": {"source": "https://evil.example/c"}}), "status": "{}", "generation": "1"}}
    kube.rest.create("/api/v1/namespaces/%s/configmaps" % kube.namespace, forged)
    code, out = run(capsys, {"kubeconfig": kubeconfig, "backend": "configmap", "namespace": kube.namespace, "names": ["gpu"]})
    assert code == 0 and [(s["name"], s["spec"]) for s in out["stacks"]] == [("gpu", {"catalog": {"source": "/real"}})]
    assert [c["name"] for c in out["foreign_claims"]] == ["evil"] and out["refused"] == []
    warnings = [w["event"]["msg"] if isinstance(w, dict) else w for w in out["warnings"]]  # ansible-core 2.19 sends WarningSummary dicts
    assert warnings == [out["foreign_claims"][0]["message"]] and warnings[0].startswith("foreign claim: ConfigMap %s/evil " % kube.namespace)

    code, out = run(capsys, {"kubeconfig": kubeconfig, "backend": "configmap", "namespace": kube.namespace, "names": ["Gpu"]})
    assert code == 1 and out["msg"].startswith("names[0]: 'Gpu' is not a DNS-1123 label; allowed: ")


SECRET_SPEC = {"catalog": {"source": "/c"}, "componentOverrides": {"db": {"version": "1.2.3", "values": {
    "auth": {"enabled": True, "rootPassword": "r00t-s3cret"}, "dsn": "postgres://app:dsn-s3cret@db/x"}}},
    "repositoryMirrors": {"https://charts.example": "https://ops:mirror-s3cret@mirror.internal/charts"}}


def test_secrets_of_the_spec_are_hidden_unless_show_values(capsys, kube, stacks):
    # issue 35: stack_info's result goes to AWX's job events; a spec's secrets stay out of it by default
    kubeconfig = kube.kubeconfig_for("stack")
    name = stacks.create("secret", SECRET_SPEC)
    code, out = run(capsys, {"kubeconfig": kubeconfig, "names": [name]})
    assert code == 0 and "s3cret" not in json.dumps(out)
    spec = out["stacks"][0]["spec"]
    assert spec["componentOverrides"]["db"] == {"version": "1.2.3", "values": {"auth": {"enabled": True, "rootPassword": "<hidden>"},
                                                                               "dsn": "<hidden>"}}
    assert spec["repositoryMirrors"] == {"https://charts.example": "https://ops:<hidden>@mirror.internal/charts"}
    code, out = run(capsys, {"kubeconfig": kubeconfig, "names": [name], "show_values": True})
    assert code == 0 and out["stacks"][0]["spec"] == SECRET_SPEC
