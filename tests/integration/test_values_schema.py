"""values_schema module and lookup, driven through ansible-playbook against the installed collection."""

import json

import yaml


def _run(run_playbook, shared_dir, tmp_path, check=False, diff=False):
    chart = shared_dir / "values-corpus" / "podinfo"
    changed = tmp_path / "changed.yaml"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    values.pop("replicaCount")
    values["ui"]["color"] = 42
    changed.write_text(yaml.safe_dump(values))
    return run_playbook("values_schema_generate.yml", check=check, diff=diff, extravars={
        "chart": str(chart), "chart_name": "podinfo", "out_dir": str(tmp_path), "changed_values": str(changed),
        "good_values": {"replicaCount": 3, "ui": {"color": "#123456"}},
        "bad_values": {"replicaCount": "three"}, "bad_set": ["ui.logo=1"],
    })


def test_values_schema_playbook(run_playbook, shared_dir, tmp_path):
    run = _run(run_playbook, shared_dir, tmp_path)
    assert run.rc == 0, run.stdout[-4000:]
    assert "Traceback" not in run.stdout
    assert run.result("Write the JSON Schema")["changed"] is True
    schema = json.loads((tmp_path / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    crd = yaml.safe_load((tmp_path / "crd.yaml").read_text())
    assert crd["metadata"]["name"] == "podinfos.podinfo.bundles.aicr.io"
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["version"]["enum"] == ["1.0.0", "1.1.0"]
    good = run.result("Validate good values")
    assert good["valid"] is True and good["errors"] == [] and good["changed"] is False
    bad = run.result("Validate bad values")
    assert "Validate bad values" in run.failed_tasks, bad
    assert sorted((e["path"], e["rule"]) for e in bad["errors"]) == [("replicaCount", "type"), ("ui.logo", "type")]
    assert bad["msg"].startswith("values do not validate: 2 violation(s): ")
    compare = run.result("Compare with a changed chart")
    assert "Compare with a changed chart" in run.failed_tasks and compare["breaking"] is True
    errors = set((f["rule"], f["path"]) for f in compare["findings"] if f["severity"] == "error")
    assert ("existingFieldRemoval", "^.spec.values.replicaCount") in errors
    assert ("type", "^.spec.values.ui.color") in errors
    assert compare["msg"].startswith("breaking changes from podinfos.podinfo.bundles.aicr.io: ")
    report = run.result("Report")
    assert int(report["msg"]["properties"]) == len(schema["properties"])

    # a second run changes nothing
    again = _run(run_playbook, shared_dir, tmp_path)
    assert again.result("Write the JSON Schema")["changed"] is False
    assert again.result("Write the CRD")["changed"] is False


def test_values_schema_check_mode_writes_nothing(run_playbook, shared_dir, tmp_path):
    run = _run(run_playbook, shared_dir, tmp_path, check=True, diff=True)
    result = run.result("Write the JSON Schema")
    assert result["changed"] is True
    assert "diff" in result or "diff" in json.dumps(result)
    assert not (tmp_path / "values.schema.json").exists()
