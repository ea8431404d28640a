"""recipe_resolve module: argument handling, exit/fail payloads (engine covered in module_utils tests)."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.modules import recipe_resolve

from modules_testlib import run_main  # pylint: disable=import-error


@pytest.fixture
def catalog_dir(shared_dir):
    return str(shared_dir / "aicr" / "catalog")


def test_resolves_real_recipe(capsys, catalog_dir, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {
        "catalog": catalog_dir, "cache_dir": str(tmp_path),
        "criteria": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    })
    assert code == 0
    assert out["changed"] is False
    assert out["recipe"]["kind"] == "RecipeResult"
    assert out["recipe_name"] == "h100-eks-ubuntu-training"
    assert [c["name"] for c in out["components"]] == out["recipe"]["deploymentOrder"]
    assert out["catalog_digest"].startswith("sha256:")


def test_check_mode_same_result(capsys, catalog_dir, tmp_path):
    args = {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": {"service": "kind", "intent": "training", "accelerator": "h100"}}
    _code, normal = run_main(recipe_resolve, capsys, args)
    _code, checked = run_main(recipe_resolve, capsys, dict(args, _ansible_check_mode=True))
    assert checked["changed"] is False
    assert checked["recipe"] == normal["recipe"]


def test_bad_criteria_fails_with_one_line(capsys, catalog_dir, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": {"service": "nope"}})
    assert code == 1 and out["failed"] is True
    assert out["msg"].startswith("criteria.service: invalid service type 'nope' (valid: aks, bcm, eks, gke, kind, lke, metal3, ocp, oke)")
    assert out["field"] == "criteria.service"
    assert "exception" not in out


def test_missing_catalog(capsys, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {"catalog": str(tmp_path / "none")})
    assert code == 1
    assert out["msg"] == "catalog: %s does not exist (give a recipes/ directory or a .tar.gz of one)" % (tmp_path / "none")


def test_unknown_criteria_key_refused_naming_it(capsys, catalog_dir):
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "criteria": {"gpu": "h100"}})
    assert code == 1 and out["msg"].startswith("criteria: gpu is not known; ") and out["errors"][0]["field"] == "criteria.gpu"


@pytest.mark.parametrize("criteria", ["kind", "service=kind", '{"service": "kind"}', ["service=kind"]])
def test_criteria_that_is_no_mapping_is_refused_naming_criteria(capsys, catalog_dir, tmp_path, criteria):
    """Ansible's dict type used to parse a string itself (key=value, JSON) or refuse it in its own words, naming no field (issue 36)."""
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": criteria})
    assert code == 1 and out["msg"] == "criteria: a %s is not allowed; use a mapping" % type(criteria).__name__
    assert out["field"] == "criteria" and "exception" not in out


def test_a_node_count_given_as_text_is_a_node_count(capsys, catalog_dir, tmp_path):
    """A survey answers with text: nodes "4" resolves as 4, as it did when Ansible converted it."""
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path),
                                                  "criteria": {"service": "kind", "intent": "training", "accelerator": "h100", "nodes": "4"}})
    assert code == 0 and out["recipe"]["criteria"]["nodes"] == 4


def test_overrides_and_skip(capsys, catalog_dir, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {
        "catalog": catalog_dir, "cache_dir": str(tmp_path),
        "criteria": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
        "skip_components": ["nvsentinel"],
        "component_overrides": {"gpu-operator": {"version": "v1.2.3", "values": {"driver": {"version": "x"}}}},
    })
    assert code == 0
    names = [c["name"] for c in out["components"]]
    assert "nvsentinel" not in names
    gpu = [c for c in out["components"] if c["name"] == "gpu-operator"][0]
    assert gpu["version"] == "v1.2.3" and gpu["values"]["driver"]["version"] == "x"


def test_check_mode_does_not_write_the_cache(capsys, catalog_dir, tmp_path):
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
    catalog_mod.clear_process_cache()
    code, _result = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path / "c"), "_ansible_check_mode": True,
                                                      "criteria": {"service": "eks", "intent": "training"}})
    assert code == 0
    assert not (tmp_path / "c" / "parsed").exists()


def test_snapshot_option_excludes_an_overlay_the_cluster_fails(capsys, catalog_dir, tmp_path):
    """A kernel under the os-ubuntu mixin's floor: the ubuntu leaf is excluded and the task fails naming why."""
    snapshot = {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.35.1-eks-113cf36"}},
                                     {"subtype": "node", "data": {"provider": "eks"}}]},
        {"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                                    {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.5.0-1024-aws"}}]},
        {"type": "NodeTopology", "subtypes": [{"subtype": "label", "data": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|gpu-0"}}]}]}
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": {"intent": "training"},
                                                  "snapshot": snapshot})
    assert code == 1 and "exception" not in out
    assert {"name": "h100-eks-ubuntu-training", "reason": "mixin-constraint-failed"} in out["excludedOverlays"]
    warning = [w for w in out["constraintWarnings"] if w["overlay"] == "h100-eks-ubuntu-training"][0]
    assert warning == {"overlay": "h100-eks-ubuntu-training", "constraint": "OS.sysctl./proc/sys/kernel/osrelease", "expected": ">= 6.8",
                       "actual": "6.5.0-1024-aws", "reason": "mixin-constraint-failed: expected >= 6.8, got 6.5.0-1024-aws"}
    snapshot["measurements"][1]["subtypes"][1]["data"]["/proc/sys/kernel/osrelease"] = "6.8.0-1028-aws"
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": {"intent": "training"},
                                                  "snapshot": snapshot})
    assert code == 0 and out["recipe_name"] == "h100-eks-ubuntu-training"
    assert out["snapshot_criteria"] == {"service": "eks", "accelerator": "h100", "os": "ubuntu"} and out["relaxed_dimensions"] == []
    assert "excludedOverlays" not in out["recipe"]["metadata"]


# issue 35: recipe_resolve's result is stored by Ansible and AWX (job events); its secrets are <hidden> unless asked.
SECRET_OVERRIDES = {"gpu-operator": {"values": {"driver": {"version": "x", "repoConfig": {"password": "hunter2-s3cret"}},
                                                "proxy": {"url": "http://ops:pr0xy-pass@proxy.internal:3128"}}}}
EKS = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}


def test_secret_values_are_hidden_by_default_everywhere_in_the_result(capsys, catalog_dir, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": EKS, "component_overrides": SECRET_OVERRIDES})
    assert code == 0
    text = json.dumps(out)
    assert "hunter2-s3cret" not in text and "pr0xy-pass" not in text, "neither in the components nor in the invocation"
    gpu = [c for c in out["components"] if c["name"] == "gpu-operator"][0]
    assert gpu["values"]["driver"]["version"] == "x" and gpu["values"]["driver"]["repoConfig"] == {"password": "<hidden>"}
    assert gpu["values"]["proxy"]["url"] == "http://ops:<hidden>@proxy.internal:3128"
    assert out["values_hidden"] is True


def test_show_values_returns_them_as_they_are(capsys, catalog_dir, tmp_path):
    code, out = run_main(recipe_resolve, capsys, {"catalog": catalog_dir, "cache_dir": str(tmp_path), "criteria": EKS, "component_overrides": SECRET_OVERRIDES,
                                                  "show_values": True})
    assert code == 0
    gpu = [c for c in out["components"] if c["name"] == "gpu-operator"][0]
    assert gpu["values"]["driver"]["repoConfig"]["password"] == "hunter2-s3cret"
    assert gpu["values"]["proxy"]["url"] == "http://ops:pr0xy-pass@proxy.internal:3128"


def test_the_recipes_own_overrides_are_masked_too(tmp_path):
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe.resolve import shown
    result = {"recipe": {"componentRefs": [{"name": "db", "overrides": {"auth": {"rootPassword": "r00t-pw", "enabled": True}}}, {"name": "x"}]},
              "components": [{"name": "db", "values": {"auth": {"rootPassword": "r00t-pw", "enabled": True}, "replicas": 1}}]}
    out = shown(result)
    assert "r00t-pw" not in json.dumps(out) and out["values_hidden"] is True
    assert out["components"][0]["values"] == {"auth": {"rootPassword": "<hidden>", "enabled": True}, "replicas": 1}
    assert result["components"][0]["values"]["auth"]["rootPassword"] == "r00t-pw", "the engine's result is not changed"
    assert shown({"recipe": {}, "components": [{"name": "a", "values": {"replicas": 2}}]})["values_hidden"] is False
