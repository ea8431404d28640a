"""gated_release module: argument spec, check/diff propagation, exit/fail payloads.

The engine is covered in tests/unit/plugins/module_utils/_release and, end to end, by
tests/integration/test_gated_release.py; here it is replaced to observe what the module passes and returns.
"""

import json

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.modules import gated_release

from modules_testlib import run_main  # pylint: disable=import-error

RECIPE = {"recipe_name": "demo", "components": [{"name": "a", "chart": "a", "repository": "https://x", "version": "1", "namespace": "n", "values": {}}]}


def run_module(capsys, monkeypatch, args, outcome):
    """``run_main`` of gated_release with its engine replaced: ``(exit code, result, what the engine was called with)``."""
    seen = {}

    def fake_execute(params, check_mode=False, diff=False):
        seen.update(params=dict(params), check_mode=check_mode, diff=diff)
        if isinstance(outcome, Exception):
            raise outcome
        return dict(outcome)

    monkeypatch.setattr(gated_release, "execute", fake_execute)
    code, out = run_main(gated_release, capsys, args)
    return code, out, seen


OK = {"changed": True, "components": [{"name": "a", "phase": "Ready"}], "waves": [], "actions": ["install a"], "summary": {}, "helm_version": 3}


def test_defaults_and_success(capsys, monkeypatch):
    code, out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "kubeconfig": {"users": [{"user": {"token": "s3cr3t-t0ken"}}]}}, OK)
    assert code == 0 and out["changed"] is True and out["components"][0]["phase"] == "Ready"
    params = seen["params"]
    assert params["concurrency"] == 4 and params["state"] == "present" and params["helm_binary"] == "helm"
    assert params["timeout"] == 600 and params["overall_timeout"] == 3600 and params["poll_interval"] == 0.5
    assert seen["check_mode"] is False and seen["diff"] is False
    assert "s3cr3t-t0ken" not in json.dumps(out), "the kubeconfig must never be returned"


def test_check_and_diff_mode_are_passed(capsys, monkeypatch):
    _code, _out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "_ansible_check_mode": True, "_ansible_diff": True}, OK)
    assert seen["check_mode"] is True and seen["diff"] is True


def test_failed_components_fail_the_task_with_the_full_result(capsys, monkeypatch):
    failed = dict(OK, failed_message="gated_release: 1 of 1 components did not converge; failed: a (boom)")
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": RECIPE}, failed)
    assert code == 1 and out["failed"] is True
    assert out["msg"] == "gated_release: 1 of 1 components did not converge; failed: a (boom)"
    assert out["components"] == OK["components"]
    assert "failed_message" not in out


def test_engine_error_is_one_line(capsys, monkeypatch):
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": RECIPE}, AicrError("state: 'x' is not allowed", field="state"))
    assert code == 1 and out["msg"] == "state: 'x' is not allowed" and out["field"] == "state"
    assert "exception" not in out


def test_argspec_rejects_bad_state(capsys, monkeypatch):
    code, out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "state": "gone"}, OK)
    assert code == 1 and "state" in out["msg"] and not seen


def test_unexpected_error_has_no_raw_traceback_in_msg(capsys, monkeypatch):
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": RECIPE}, KeyError("x"))
    assert code == 1 and out["msg"] == "gated_release: unexpected KeyError: 'x'"


def test_status_options_are_passed_and_warnings_reach_the_user(capsys, monkeypatch):
    outcome = dict(OK, warnings=["live status of stack gpu: a write failed (retried): boom"],
                   live_status={"stack": "gpu", "backend": "configmap", "transitions": 2, "writes": 1, "conflicts": 0})
    warned = []
    monkeypatch.setattr(gated_release.AnsibleModule, "warn", lambda self, text: warned.append(text))
    code, out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "status_stack": "gpu", "status_backend": "configmap",
                                                       "status_namespace": "ops"}, outcome)
    assert code == 0 and out["live_status"]["writes"] == 1
    assert seen["params"]["status_stack"] == "gpu" and seen["params"]["status_backend"] == "configmap" and seen["params"]["status_namespace"] == "ops"
    assert warned == ["live status of stack gpu: a write failed (retried): boom"] and "failed_message" not in out
    _code, _out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE}, OK)
    assert seen["params"]["status_stack"] is None and seen["params"]["status_backend"] == "crd" and seen["params"]["status_namespace"] == "aicr-system"
    code, out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "status_backend": "etcd"}, OK)
    assert code == 1 and "status_backend" in out["msg"] and not seen


def test_recipe_or_resolve_exactly_one(capsys, monkeypatch):
    code, out, seen = run_module(capsys, monkeypatch, {}, OK)
    assert code == 1 and "one of the following is required: recipe, resolve" in out["msg"] and not seen
    code, out, seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "resolve": {"catalog": "/c"}}, OK)
    assert code == 1 and "mutually exclusive: recipe|resolve" in out["msg"] and not seen
    code, out, seen = run_module(capsys, monkeypatch, {"resolve": {"catalog": "/c"}, "catalog": "/d"}, OK)
    assert code == 1 and "mutually exclusive: catalog|resolve" in out["msg"] and not seen


def test_resolve_options_are_coerced_like_recipe_resolve(capsys, monkeypatch):
    # survey answers arrive as text: skip_components "a,b" is a list, as recipe_resolve has it; criteria is raw - the
    # recipe engine reads and checks it for both modules (nodes "4" is a node count there, an unknown key is refused)
    args = {"resolve": {"catalog": "/c", "criteria": {"service": "kind", "nodes": "4"}, "skip_components": "a,b"}}
    code, _out, seen = run_module(capsys, monkeypatch, args, OK)
    assert code == 0
    resolve = seen["params"]["resolve"]
    assert resolve["criteria"] == {"service": "kind", "nodes": "4"}
    assert resolve["skip_components"] == ["a", "b"] and resolve["use_cache"] is True and resolve["component_overrides"] == {}


def test_a_dict_kubeconfig_masks_only_its_secrets(capsys, monkeypatch):
    """Issue 15: a dict kubeconfig was no_log as a whole, so Ansible masked every string of it wherever it appeared
    ("kind": "********Map"). Only its token, password and key data are no_log values now."""
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "default",
                  "clusters": [{"name": "default", "cluster": {"server": "https://127.0.0.1:6443"}}],
                  "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
                  "users": [{"name": "default", "user": {"token": "s3cr3t-t0ken", "password": "hunter2-pw",
                                                         "client-key-data": "S0VZREFUQQ=="}}]}
    outcome = dict(OK, objects=[{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "cfg"}])
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": RECIPE, "kubeconfig": kubeconfig}, outcome)
    assert code == 0
    text = json.dumps(out)
    assert "s3cr3t-t0ken" not in text and "hunter2-pw" not in text and "S0VZREFUQQ==" not in text
    assert out["objects"][0] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "cfg"}, "results are not mangled"
    shown = out["invocation"]["module_args"]["kubeconfig"]
    assert shown["kind"] == "Config" and shown["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"


def test_values_under_sensitive_paths_are_masked_in_all_output(capsys, monkeypatch):
    """Secret values given in the recipe or the overrides never reach the output (``invocation`` is shown with -v), even
    where the engine would quote them; other values stay readable."""
    recipe = {"recipe_name": "demo", "components": [dict(RECIPE["components"][0], values={
        "auth": {"adminPassword": "pa55-w0rd-1", "user": "admin-user"}, "openaiApiKey": "sk-live-abcdef"})]}
    overrides = {"a": {"values": {"db": {"credentials": {"token": "tok-override-9"}}}}}
    leaky = dict(OK, actions=["install a with pa55-w0rd-1 and sk-live-abcdef and tok-override-9"])
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": recipe, "component_overrides": overrides}, leaky)
    assert code == 0
    text = json.dumps(out)
    for secret in ("pa55-w0rd-1", "sk-live-abcdef", "tok-override-9"):
        assert secret not in text
    assert "admin-user" in text, "values not under a sensitive key are not masked"
    # with the user's own list, only those keys are secret
    code, out, _seen = run_module(capsys, monkeypatch, {"recipe": recipe, "sensitive_values": ["auth.user"]}, leaky)
    text = json.dumps(out)
    assert "admin-user" not in text and "sk-live-abcdef" in text
