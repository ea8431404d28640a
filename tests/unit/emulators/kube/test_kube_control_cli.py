"""Faults, delays, audit, restart/reset/persistence, and the command-line contract."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from kube_testlib import api_client, client, raw, wait_for

from aicr_emulators.kube.pytest_fixture import EmulatorError, start_emulator


@pytest.fixture
def kube(tmp_path):
    with start_emulator(tmp_path, in_process=True) as handle:
        yield handle


def test_faults_answer_errors_for_the_next_n_matching_requests(kube):
    kube.control.add_fault(code=503, count=2, verbs=["create"], path="/configmaps$", retry_after=3)
    path = "/api/v1/namespaces/default/configmaps"
    status, headers, body = raw(kube, "POST", path, {"metadata": {"name": "f1"}})
    assert status == 503 and headers["Retry-After"] == "3" and body["reason"] == "ServiceUnavailable"
    assert body["details"]["retryAfterSeconds"] == 3
    assert raw(kube, "GET", path)[0] == 200  # verb filter: reads are not affected
    assert raw(kube, "POST", path, {"metadata": {"name": "f1"}})[0] == 503
    assert raw(kube, "POST", path, {"metadata": {"name": "f1"}})[0] == 201  # count exhausted
    kube.control.add_fault(code=429, count=1, verbs=["mutating"])
    status, headers, body = raw(kube, "DELETE", path + "/f1")
    assert status == 429 and headers["Retry-After"] == "1" and body["reason"] == "TooManyRequests"
    kube.control.add_fault(code=500, count=1, message="boom")
    status, _h, body = raw(kube, "GET", "/api/v1/namespaces")
    assert status == 500 and body["message"] == "boom"
    assert kube.control.request("GET", "faults")["items"] == []
    with pytest.raises(EmulatorError):
        kube.control.add_fault(code=200)


def test_python_client_sees_fault_as_api_exception(kube):
    core = client.CoreV1Api(api_client(kube))
    kube.control.add_fault(code=500, count=1, verbs=["list"])
    with pytest.raises(client.ApiException) as err:
        core.list_namespace()
    assert err.value.status == 500
    assert core.list_namespace().items


def test_delays_slow_matching_requests(kube):
    kube.control.add_delay(0.4, count=1, verbs=["get"], path="/namespaces/default$")
    started = time.time()
    assert raw(kube, "GET", "/api/v1/namespaces/default")[0] == 200
    assert time.time() - started >= 0.4
    kube.control.clear_delays()
    assert kube.control.request("GET", "delays")["items"] == []


def test_audit_records_requests_and_filters_mutations(kube):
    core = client.CoreV1Api(api_client(kube))
    mark = kube.control.audit_mark()
    core.list_namespace()
    core.read_namespace("default")
    assert kube.control.audit(since=mark, mutating=True) == []
    core.create_namespaced_config_map("default", {"metadata": {"name": "audited"}})
    core.patch_namespaced_config_map("audited", "default", {"data": {"a": "b"}})
    entries = kube.control.audit(since=mark)
    assert [e["verb"] for e in entries] == ["list", "get", "create", "patch"]
    mutating = kube.control.audit(since=mark, mutating=True)
    assert [(e["verb"], e["resource"], e["name"], e["code"]) for e in mutating] == [
        ("create", "configmaps", "", 201), ("patch", "configmaps", "audited", 200)]
    assert all(e["userAgent"].startswith("OpenAPI-Generator") and e["path"] for e in mutating)
    assert [e["verb"] for e in kube.control.audit(since=mark, verb="get,list")] == ["list", "get"]
    assert len(kube.control.audit(since=mark, path="/namespaces/default/configmaps")) == 2
    assert "token" not in json.dumps(kube.control.audit()).lower().replace('"auth": "token"', "")


def test_a_request_is_audited_before_its_answer_arrives(kube, monkeypatch):
    # A test takes an audit mark right after a response and expects that request before the mark. Slow
    # audit writes (0.2 s here) must delay the answer, never move the entry after the mark.
    record = kube.emulator.record

    def slow_record(entry):
        time.sleep(0.2)
        record(entry)

    monkeypatch.setattr(kube.emulator, "record", slow_record)
    status, _headers, _body = raw(kube, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "bad name"}})
    assert status == 422
    entries = kube.control.audit(mutating=True, path="/namespaces/default/configmaps")
    assert [(e["verb"], e["code"]) for e in entries][-1:] == [("create", 422)]


def test_restart_keeps_or_drops_state(kube):
    core = client.CoreV1Api(api_client(kube))
    core.create_namespace({"metadata": {"name": "survivor"}})
    kube.control.restart(keep_state=True)
    core = client.CoreV1Api(api_client(kube))
    assert core.read_namespace("survivor").status.phase == "Active"
    kube.control.restart(keep_state=False)
    core = client.CoreV1Api(api_client(kube))
    with pytest.raises(client.ApiException):
        core.read_namespace("survivor")
    assert core.read_namespace("default")


def test_restart_ends_open_watches(kube):
    import urllib.request  # pylint: disable=import-outside-toplevel
    req = urllib.request.Request(kube.url + "/api/v1/namespaces?watch=true&resourceVersion=1&timeoutSeconds=30")
    with urllib.request.urlopen(req, timeout=10) as resp:
        started = time.time()
        kube.control.request("POST", "restart", {"keepState": True})
        resp.read()  # the stream ends instead of hanging until the timeout
    assert time.time() - started < 10

    def healthy():
        try:
            return kube.control.health()["ok"]
        except (OSError, EmulatorError):
            return False
    wait_for(healthy)


def test_reset_restores_the_initial_cluster(kube):
    core = client.CoreV1Api(api_client(kube))
    core.create_namespace({"metadata": {"name": "temp"}})
    kube.control.add_fault(code=500, count=5, verbs=["delete"])
    kube.control.reset()
    assert kube.control.request("GET", "faults")["items"] == []
    assert sorted(n.metadata.name for n in core.list_namespace().items) == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    assert len(core.list_node().items) == 3


def test_state_file_persists_across_processes(tmp_path):
    state = str(tmp_path / "state.json")
    with start_emulator(tmp_path / "one", state_file=state) as first:
        client.CoreV1Api(api_client(first)).create_namespace({"metadata": {"name": "persisted"}})
    assert os.path.exists(state)
    with start_emulator(tmp_path / "two", state_file=state) as second:
        core = client.CoreV1Api(api_client(second))
        assert core.read_namespace("persisted").metadata.uid
        # resourceVersions keep growing after a restore
        created = core.create_namespaced_config_map("persisted", {"metadata": {"name": "after"}})
        assert int(created.metadata.resource_version) > 10


def test_cli_contract_ready_line_kubeconfig_and_sigterm(tmp_path):
    kubeconfig = tmp_path / "kc" / "config"
    proc = subprocess.Popen([sys.executable, "-m", "aicr_emulators.kube.cli", "--port", "0", "--kubeconfig",
                             str(kubeconfig), "--nodes", "2", "--node-labels", "pool=gpu", "--gpus-per-node", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("ready http://127.0.0.1:")
        url = line.split()[1]
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        token = config["users"][0]["user"]["token"]
        assert len(token) >= 32 and oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        api = client.CoreV1Api(api_client(type("H", (), {"kubeconfig": str(kubeconfig)})))
        nodes = api.list_node().items
        assert len(nodes) == 2 and all(n.metadata.labels["pool"] == "gpu" for n in nodes)
        assert nodes[0].status.capacity["nvidia.com/gpu"] == "4"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and out == "" and token not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_require_token_refuses_anonymous(tmp_path):
    with start_emulator(tmp_path, require_token=True) as kube:
        assert raw(kube, "GET", "/api/v1/namespaces", token=False)[0] == 401
        assert raw(kube, "GET", "/api/v1/namespaces")[0] == 200
        assert raw(kube, "GET", "/healthz", token=False)[0] == 200


@pytest.mark.parametrize("in_process", [False, True])
def test_start_emulator_rejects_unknown_options(tmp_path, in_process):
    with pytest.raises(EmulatorError):
        start_emulator(tmp_path, in_process=in_process, no_such_option=1)


def test_state_is_saved_periodically_so_a_killed_emulator_keeps_it(tmp_path):
    state = tmp_path / "state.json"
    first = start_emulator(tmp_path / "one", state_file=str(state))
    try:
        client.CoreV1Api(api_client(first)).create_namespace({"metadata": {"name": "saved-while-running"}})
        wait_for(lambda: state.exists() and "saved-while-running" in state.read_text())
    finally:
        first.process.kill()  # no SIGTERM: nothing is written at exit
        first.process.wait()
    with start_emulator(tmp_path / "two", state_file=str(state)) as second:
        assert client.CoreV1Api(api_client(second)).read_namespace("saved-while-running").status.phase == "Active"


def test_error_answers_leave_keep_alive_connections_usable(kube):
    import http.client  # pylint: disable=import-outside-toplevel
    from urllib.parse import urlsplit  # pylint: disable=import-outside-toplevel
    parts = urlsplit(kube.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    body = json.dumps({"metadata": {"name": "ka"}})
    kube.control.add_fault(code=503, count=1, verbs=["create"])
    for expected in (503, 201, 404):  # a fault and a 404 answered before the body was looked at
        path = "/api/v1/namespaces/default/configmaps" if expected != 404 else "/api/v1/namespaces/default/nothings"
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == expected
    conn.request("GET", "/api/v1/namespaces/default/configmaps/ka")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["metadata"]["name"] == "ka"
    conn.close()
