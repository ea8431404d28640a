"""The engine entry point: outputs, values merging, dest idempotence/check mode/diff, CRD loading."""

import json

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import structural

from schema_helpers import run_engine


def first(params, check_mode=False):
    """The result of engine.run, without the failure message."""
    return run_engine(params, check_mode=check_mode)[0]


@pytest.fixture
def chart_dir(shared_dir):
    return str(shared_dir / "values-corpus" / "nvidia-device-plugin")


def test_json_schema_and_crd(chart_dir):
    result, failure = run_engine({"chart": chart_dir})
    assert failure is None and result["changed"] is False
    assert result["schema"]["$schema"].endswith("2020-12/schema")
    assert result["chart"]["name"] == "nvidia-device-plugin"
    result = first({"chart": chart_dir, "output": "crd", "versions": ["0.17.0", "0.18.0"]})
    assert structural.check_crd(result["crd"]) == []
    assert result["crd"]["metadata"]["name"] == "nvidiadeviceplugins.nvidia-device-plugin.bundles.aicr.io"
    assert result["dropped"] == []


def test_values_files_only_and_name(tmp_path):
    base = tmp_path / "demo" / "values.yaml"
    base.parent.mkdir()
    base.write_text("a: 1\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("b: x\na: 2.5\n")
    result = first({"values_files": [str(base), str(extra)], "output": "crd"})
    values = result["crd"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]
    assert values["properties"] == {"a": {"type": "number"}, "b": {"type": "string"}}
    assert result["crd"]["spec"]["names"]["kind"] == "Demo"


def test_validate_merges_files_values_and_set(chart_dir, tmp_path):
    site = tmp_path / "site.yaml"
    site.write_text("allowDefaultNamespace: maybe\nfailOnInitError: anything-goes\n")
    result, failure = run_engine({"chart": chart_dir, "output": "validate", "values_files": [str(site)],
                                  "values": {"nodeSelector": {"a": "b"}}, "set": ["fullnameOverride=3"], "fail_on_error": False})
    assert failure is None and result["valid"] is False
    assert sorted((e["path"], e["rule"], e["value"]) for e in result["errors"]) == [("allowDefaultNamespace", "type", "maybe"),
                                                                                    ("fullnameOverride", "type", 3)]
    result, failure = run_engine({"chart": chart_dir, "output": "validate", "set": ["fullnameOverride=3"]})
    assert failure == "values do not validate: 1 violation(s): fullnameOverride: 3 is not of type 'string'"
    result, failure = run_engine({"chart": chart_dir, "output": "validate", "set_string": ["fullnameOverride=3"]})
    assert failure is None and result["valid"] is True and result["changed"] is False


def test_validate_against_shipped_schema(shared_dir):
    chart = shared_dir / "values-corpus" / "prometheus-ipmi-exporter"
    result, failure = run_engine({"chart": str(chart), "output": "validate", "schema": str(chart / "values.schema.json")})
    assert failure is None and result["errors"] == []
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "validate", "values": {"a": 1}})
    assert exc.value.msg == ("schema: required with output=validate when no chart is given (a chart's schema is generated); allowed: a JSON Schema "
                             "mapping or file")


def test_dest_is_idempotent_with_check_mode_and_diff(chart_dir, tmp_path):
    dest = tmp_path / "values.schema.json"
    params = {"chart": chart_dir, "draft": "draft-07", "dest": str(dest)}
    result = first(params, check_mode=True)
    assert result["changed"] is True and not dest.exists()
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"])["$schema"].startswith("http://json-schema.org/draft-07")
    result = first(params)
    assert result["changed"] is True and result["actions"][0].startswith("write %s (" % dest)
    assert json.loads(dest.read_text()) == result["schema"]
    result = first(params)
    assert result["changed"] is False and "diff" not in result and result["actions"] == []
    result = first(dict(params, draft="2020-12"), check_mode=True)
    assert result["changed"] is True and "draft-07" in result["diff"]["before"] and "2020-12" in result["diff"]["after"]
    crd_dest = tmp_path / "crd.yaml"
    run_engine({"chart": chart_dir, "output": "crd", "dest": str(crd_dest)})
    assert yaml.safe_load(crd_dest.read_text())["kind"] == "CustomResourceDefinition"


def test_compare_files_and_generated(shared_dir, tmp_path):
    original = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-original" / "values.yaml")
    updated = str(shared_dir / "values-corpus" / "juiceshop-helmetica-pair-updated" / "values.yaml")
    old = first({"values_files": [original], "output": "crd", "name": "juiceshop", "dest": str(tmp_path / "old.yaml")})
    result, failure = run_engine({"values_files": [updated], "output": "compare", "name": "juiceshop", "old_crd": str(tmp_path / "old.yaml")})
    assert result["breaking"] is True and result["old_found"] is True
    assert failure.startswith("breaking changes from juiceshops.juiceshop.bundles.aicr.io: 5 breaking change(s), 0 warning(s): ")
    result, failure = run_engine({"output": "compare", "old_crd": old["crd"], "new_crd": old["crd"]})
    assert failure is None and result["findings"] == [] and result["breaking"] is False
    result, failure = run_engine({"values_files": [updated], "output": "compare", "name": "juiceshop", "old_crd": old["crd"],
                                  "severities": {"type": "warn", "existingFieldRemoval": "warn"}})
    assert failure is None and set(f["severity"] for f in result["findings"]) == {"warn"}


def test_bad_inputs(tmp_path):
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "yaml"})
    assert exc.value.msg == "output: 'yaml' is not allowed; use one of json_schema, crd, validate, compare"
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "crd"})
    assert exc.value.msg == "chart: a chart or at least one values file is required to generate a CRD (output=crd)"
    with pytest.raises(AicrError) as exc:
        run_engine({"values_files": [str(tmp_path / "none.yaml")]})
    assert exc.value.msg == "values_files: file %s does not exist" % (tmp_path / "none.yaml")
    (tmp_path / "cm.yaml").write_text("kind: ConfigMap\n")
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "compare", "old_crd": str(tmp_path / "cm.yaml"), "new_crd": {}})
    assert exc.value.msg == "old_crd: %s holds no CustomResourceDefinition" % (tmp_path / "cm.yaml")
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "compare", "old_crd": "not-a-name", "new_crd": {}})
    assert exc.value.msg == "old_crd: 'not-a-name' is neither a file nor a CRD name (<plural>.<group>)"
    (tmp_path / "d").mkdir()
    (tmp_path / "v.yaml").write_text("a: 1\n")
    with pytest.raises(AicrError) as exc:
        run_engine({"values_files": [str(tmp_path / "v.yaml")], "dest": str(tmp_path / "d")})
    assert exc.value.msg == "dest: %s is a directory; allowed: a file path" % (tmp_path / "d")


def test_live_crd_name_without_cluster(tmp_path):
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                  "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
                  "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}], "users": [{"name": "x", "user": {}}]}
    with pytest.raises(AicrError) as exc:
        run_engine({"output": "compare", "old_crd": "things.example.com", "new_crd": {"kind": "CustomResourceDefinition"}, "kubeconfig": kubeconfig})
    assert exc.value.msg.startswith("old_crd: cannot reach the cluster to read CRD things.example.com (")


def test_versions_discovered_from_repository_index(chart_dir, tmp_path):
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries:\n  nvidia-device-plugin:\n  - version: 0.18.0\n  - version: 0.17.1\n")
    result = first({"chart": chart_dir, "output": "crd", "repository": "file://%s" % tmp_path, "discover_versions": True})
    spec = result["crd"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["version"]["enum"] == ["0.18.0", "0.17.1"]
    result = first({"chart": chart_dir, "output": "crd", "versions": ["1.0.0"], "discover_versions": True})
    assert result["crd"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["version"]["enum"] == ["1.0.0"]
