"""Token cache, JWT parsing, status policy, error-body descriptions and transport rules."""

import base64
import json
import threading

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import classify_op_status, OK, WARNING, CRITICAL, UNKNOWN
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.token import TokenCache, jwt_expiry
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import (
    AmbiguousOutcome, FabricHTTPError, Transport, BearerAuth, describe_body,
)


def jwt(payload):
    def enc(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return "%s.%s.sig" % (enc({"alg": "none"}), enc(payload))


@pytest.mark.parametrize("token, text", [
    ("", "empty or not a string"),
    (None, "empty or not a string"),
    ("abc", "malformed JWT (1 dot-separated parts"),
    ("a.b", "malformed JWT (2 dot-separated parts"),
    ("a.!!!.c", "payload is not base64url JSON"),
    (jwt({"sub": "x"}), "no numeric exp claim"),
    (jwt({"exp": "soon"}), "no numeric exp claim"),
    (jwt({"exp": True}), "no numeric exp claim"),
])
def test_malformed_tokens_are_clear_errors(token, text):
    with pytest.raises(AicrError) as info:
        jwt_expiry(token)
    assert text in info.value.msg
    if token:
        assert token not in info.value.msg


def test_token_is_cached_until_exp_minus_leeway():
    now = [1000.0]
    issued = []

    def fetch():
        issued.append(now[0])
        return jwt({"exp": now[0] + 100})

    cache = TokenCache(fetch, leeway=30, clock=lambda: now[0])
    first = cache.get()
    now[0] += 69
    assert cache.get() == first and cache.fetches == 1
    now[0] += 1  # exp - 30 reached
    cache.get()
    assert cache.fetches == 2


def test_invalidate_only_drops_the_rejected_token():
    tokens = iter([jwt({"exp": 9e9, "n": 1}), jwt({"exp": 9e9, "n": 2})])
    cache = TokenCache(lambda: next(tokens))
    old = cache.get()
    cache.invalidate("something-else")
    assert cache.get() == old
    cache.invalidate(old)
    assert cache.get() != old and cache.fetches == 2


def test_concurrent_callers_share_one_fetch():
    fetched = []

    def fetch():
        fetched.append(1)
        return jwt({"exp": 9e9})

    cache = TokenCache(fetch)
    threads = [threading.Thread(target=cache.get) for _thread in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fetched) == 1


@pytest.mark.parametrize("value, health", [("0", OK), ("0001", OK), ("1003", WARNING), ("2001", CRITICAL), ("", UNKNOWN), (None, UNKNOWN),
                                           ("  ", UNKNOWN), ("x", UNKNOWN), (3, UNKNOWN), (0, OK)])
def test_op_status_policy(value, health):
    got, warning = classify_op_status(value, "machine m device d")
    assert got == health
    assert (warning is None) == (health == OK)
    if warning:
        assert warning.startswith("machine m device d: res_op_status")


@pytest.mark.parametrize("body, ctype, expected", [
    ('{"status": 409, "detail": {"code": "E40901", "message": "no free", "data": {}}}', "application/json", "E40901: no free"),
    ('{"error": {"code": "Base.1.8.ResourceInUse", "message": "busy"}}', "application/json", "Base.1.8.ResourceInUse: busy"),
    ('{"error": "invalid_grant", "error_description": "bad"}', "application/json", "invalid_grant: bad"),
    ("<html><head><title>502 Bad Gateway</title></head><body>x</body></html>", "text/html", "HTML page: 502 Bad Gateway"),
    ("<!DOCTYPE html><body><h1>Oops</h1></body>", "text/html", "HTML page: Oops"),
    ("", "", "empty body"),
    ("Service Unavailable\nmore", "text/plain", "Service Unavailable"),
    ("{not json", "application/json", "{not json"),
])
def test_error_bodies_are_described(body, ctype, expected):
    assert describe_body(body, ctype) == expected


@pytest.fixture
def transport(fab):
    from ansible_collections.aicr.runtime.plugins.module_utils._fabric.token import password_grant_fetcher

    creds = fab.sim.credentials
    transport = Transport(fab.sim.endpoint, ca_path=fab.sim.ca_path, timeout=1.0, read_retries=2, retry_backoff=0.01)
    fetch = password_grant_fetcher(transport, creds["realm"], creds["client_id"], creds["client_secret"], creds["username"], creds["password"])
    transport.auth = BearerAuth(TokenCache(fetch))
    return transport


def machine_path(fab):
    return "/fabric_manager/api/v1/machines/%s" % fab.machines[0]


def test_reads_are_retried_on_5xx_and_timeouts(fab, transport):
    fab.control.fault(op="read", action="error", status=503, body="html")
    fab.control.fault(op="read", action="latency", delay=2.0)
    response = transport.request("GET", machine_path(fab), params={"tenant_uuid": fab.tenant_id})
    assert response.status == 200
    assert len(fab.control.requests(op="read")) == 3


def test_reads_give_up_after_the_retries(fab, transport):
    fab.control.fault(op="read", action="error", status=500, times=None)
    with pytest.raises(FabricHTTPError) as info:
        transport.request("GET", machine_path(fab), params={"tenant_uuid": fab.tenant_id}, what="read machine")
    assert info.value.msg == "read machine: HTTP 500: E50000: simulated failure (after 3 attempts)"


def test_mutations_are_never_retried(fab, transport):
    fab.control.fault(op="detach", action="latency", delay=2.0)
    with pytest.raises(AmbiguousOutcome) as info:
        transport.request("DELETE", machine_path(fab) + "/update", params={"tenant_uuid": fab.tenant_id}, json_body={})
    assert info.value.kind == "transport" and "timed out after 1.0s" in info.value.msg
    assert len(fab.control.requests(op="detach")) == 1


def test_401_refreshes_once_then_fails(fab, transport):
    fab.control.fault(op="read", action="unauthorized")
    assert transport.request("GET", machine_path(fab), params={"tenant_uuid": fab.tenant_id}).status == 200
    assert transport.auth.tokens.fetches == 2
    fab.control.fault(op="read", action="unauthorized", times=2)
    with pytest.raises(FabricHTTPError) as info:
        transport.request("GET", machine_path(fab), params={"tenant_uuid": fab.tenant_id})
    assert info.value.status == 401 and "authentication rejected" in info.value.msg


def test_tls_is_verified(fab):
    transport = Transport(fab.sim.endpoint, timeout=2)
    with pytest.raises(AicrError) as info:
        transport.request("GET", "/redfish/v1", authenticate=False)
    assert "TLS verification failed" in info.value.msg and "ca_path" in info.value.msg
    relaxed = Transport(fab.sim.endpoint, validate_certs=False, timeout=2)
    with pytest.raises(FabricHTTPError) as info:  # TLS passed; the service wants credentials
        relaxed.request("GET", "/redfish/v1", authenticate=False)
    assert info.value.status == 401


@pytest.mark.parametrize("endpoint, text", [(None, "is not a host[:port]"), ("ftp://x", "unsupported scheme")])
def test_bad_endpoints(endpoint, text):
    with pytest.raises(AicrError) as info:
        Transport(endpoint)
    assert text in info.value.msg


def test_missing_ca_file(tmp_path):
    with pytest.raises(AicrError) as info:
        Transport("127.0.0.1:1", ca_path=str(tmp_path / "nope.pem"))
    assert "ca_path: file" in info.value.msg


def test_unreachable_endpoint_is_clear():
    transport = Transport("127.0.0.1:9", timeout=0.5, read_retries=1, retry_backoff=0.01)
    with pytest.raises(AicrError) as info:
        transport.request("GET", "/x", authenticate=False, what="probe")
    assert info.value.msg.startswith("probe: connection failed") and "after 2 attempts" in info.value.msg


def test_wrong_credentials_never_echo_secrets(fab):
    backend = fab.backend(password="hunter2-wrong")
    with pytest.raises(AicrError) as info:
        backend.read_machine(fab.machines[0])
    assert "refused (HTTP 401)" in info.value.msg
    assert "hunter2" not in json.dumps(info.value.to_result())
