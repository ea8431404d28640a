"""values_schema module and lookup: argument handling, exit/fail payloads, check/diff mode (engine covered in module_utils tests)."""

import json

import pytest

import yaml

from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.doc_fragments import repository_credentials as repository_credentials_fragment
from ansible_collections.aicr.runtime.plugins.lookup import values_schema as values_schema_lookup
from ansible_collections.aicr.runtime.plugins.modules import values_schema

from modules_testlib import run_main  # pylint: disable=import-error


@pytest.fixture
def chart(shared_dir):
    return str(shared_dir / "values-corpus" / "dcgm-exporter")


def test_json_schema_output(capsys, chart):
    code, out = run_main(values_schema, capsys, {"chart": chart})
    assert code == 0 and out["changed"] is False
    assert out["schema"]["type"] == "object" and "image" in out["schema"]["properties"]
    assert out["chart"]["name"] == "dcgm-exporter"


def test_crd_dest_check_diff_idempotent(capsys, chart, tmp_path):
    dest = tmp_path / "crd.yaml"
    args = {"chart": chart, "output": "crd", "dest": str(dest)}
    code, out = run_main(values_schema, capsys, dict(args, _ansible_check_mode=True, _ansible_diff=True))
    assert code == 0 and out["changed"] is True and not dest.exists()
    assert "kind: CustomResourceDefinition" in out["diff"]["after"]
    code, out = run_main(values_schema, capsys, args)
    assert out["changed"] is True and dest.exists() and "diff" not in out
    code, out = run_main(values_schema, capsys, dict(args, _ansible_diff=True))
    assert out["changed"] is False and "diff" not in out


def test_validate_fails_with_every_violation(capsys, chart):
    code, out = run_main(values_schema, capsys, {"chart": chart, "output": "validate", "set": ["image.repository=1", "serviceMonitor.enabled=on"]})
    assert code == 1 and out["failed"] is True
    assert out["msg"].startswith("values do not validate: 2 violation(s): image.repository: 1 is not of type 'string'")
    assert [(e["path"], e["rule"]) for e in out["errors"]] == [("image.repository", "type"), ("serviceMonitor.enabled", "type")]
    assert out["changed"] is False
    code, out = run_main(values_schema, capsys, {"chart": chart, "output": "validate", "set": ["image.repository=1"], "fail_on_error": False})
    assert code == 0 and out["valid"] is False and len(out["errors"]) == 1


def test_compare_requires_old_crd(capsys, chart):
    code, out = run_main(values_schema, capsys, {"chart": chart, "output": "compare"})
    assert code == 1 and out["msg"] == "output is compare but all of the following are missing: old_crd"


def test_engine_error_is_one_line(capsys, tmp_path):
    code, out = run_main(values_schema, capsys, {"chart": str(tmp_path / "missing")})
    assert code == 1
    assert out["msg"].startswith("chart: %s does not exist; allowed: " % (tmp_path / "missing"))
    assert out["field"] == "chart" and "exception" not in out


def test_kubeconfig_secrets_alone_are_no_log(capsys, chart):
    # issue 15: the option itself is not no_log (Ansible would mask every string of a dict kubeconfig wherever it
    # appears, "kind": "********Map"); its token is what becomes a no_log value
    assert values_schema.ARGUMENT_SPEC["kubeconfig"]["no_log"] is False
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "users": [{"name": "fuzz-user", "user": {"token": "s3cr3t-t0ken-value"}}]}
    code, out = run_main(values_schema, capsys, {"chart": chart, "output": "json_schema", "kubeconfig": kubeconfig})
    assert code == 0 and "s3cr3t-t0ken-value" not in json.dumps(out)
    shown = out["invocation"]["module_args"]["kubeconfig"]
    assert shown["kind"] == "Config" and shown["users"][0]["name"] == "fuzz-user"


@pytest.fixture
def lookup():
    """The plugin with its documented options registered, as the plugin loader would do (its doc fragments merged)."""
    name = "aicr.runtime.values_schema"
    doc = yaml.safe_load(values_schema_lookup.DOCUMENTATION)
    assert doc["extends_documentation_fragment"] == ["aicr.runtime.repository_credentials"]
    options = dict(yaml.safe_load(repository_credentials_fragment.ModuleDocFragment.DOCUMENTATION)["options"], **doc["options"])
    C.config.initialize_plugin_configuration_definitions("lookup", name, options)
    plugin = values_schema_lookup.LookupModule(loader=None, templar=None)
    plugin._load_name = name  # pylint: disable=protected-access
    return plugin


def test_lookup_outputs(lookup, chart, shared_dir, tmp_path):
    schema = lookup.run([chart])[0]
    assert schema["properties"]["image"]["type"] == "object"
    errors = lookup.run([chart], output="validate", set=["image.repository=1"])[0]
    assert [e["path"] for e in errors] == ["image.repository"]
    values_file = tmp_path / "values.yaml"
    values_file.write_text("a: 1\n")
    crd = lookup.run([str(values_file)], output="crd", name="demo")[0]
    assert crd["spec"]["names"]["kind"] == "Demo"
    whole = lookup.run([chart], result="all")[0]
    assert set(whole) >= {"schema", "chart", "changed"}
    with pytest.raises(AnsibleLookupError) as exc:
        lookup.run([chart], output="validate", set=["image.repository=1"], fail_on_error=True)
    assert str(exc.value).startswith("values do not validate: 1 violation(s)")
    with pytest.raises(AnsibleLookupError) as exc:
        lookup.run([chart, str(shared_dir / "values-corpus" / "podinfo")])
    assert "more than one chart given" in str(exc.value)
