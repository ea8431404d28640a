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
    # CoHDI composable-dra-driver pkg/client/client.go:312-320: status a string, message a string
    ('{"status": "404", "detail": {"code": "E02001", "message": "machine not found"}}', "application/json", "E02001: machine not found"),
    # CoHDI composable-resource-operator internal/cdi/fti/fm/api/common.go:36-40: message raw JSON (client.go:60-72)
    ('{"status": 400, "detail": {"code": "E40001", "message": {"field": "res_num"}, "data": {}}}', "application/json",
     'E40001: {"field": "res_num"}'),
    # no dangling ": " when a part is missing
    ('{"status": 409, "detail": {"code": "insufficient_resources", "message": "", "data": {}}}', "application/json", "insufficient_resources"),
    ('{"status": 409, "detail": {"message": "no free gpu"}}', "application/json", "no free gpu"),
    ('{"error": "insufficient_resources"}', "application/json", "insufficient_resources"),
    ('{"error": "no such machine"}', "", "no such machine"),
    ('{"error": {"code": "Base.1.8.GeneralError"}}', "application/json", "Base.1.8.GeneralError"),
])
def test_error_bodies_are_described(body, ctype, expected):
    assert describe_body(body, ctype) == expected
    assert not describe_body(body, ctype).endswith(": ") and ": :" not in describe_body(body, ctype)


@pytest.mark.parametrize("kind, text, code", [
    ("fti", "HTTP 409: E40900: no room", "E40900"),
    ("fti_dra", "HTTP 409: E40900: no room", "E40900"),
    ("fti_raw", 'HTTP 409: E40900: {"reason": "no room"}', "E40900"),
    ("error_text", "HTTP 409: no room", None),
])
def test_error_answers_of_every_shape_name_code_and_message(fab, transport, kind, text, code):
    fab.control.fault(op="attach", action="error", status=409, body=kind, message="no room")
    with pytest.raises(FabricHTTPError) as info:
        transport.request("PATCH", machine_path(fab) + "/update", params={"tenant_uuid": fab.tenant_id}, json_body={}, what="attach")
    assert info.value.msg == "attach: " + text and info.value.code == code and info.value.status == 409


def test_token_request_sends_the_form_cro_sends(fab, transport):
    """composable-resource-operator internal/cdi/fti/token.go:118-127 (response_type "id_token token", scope openid)."""
    transport.request("GET", machine_path(fab), params={"tenant_uuid": fab.tenant_id})
    assert fab.control.requests(op="token")[-1]["form_keys"] == sorted(
        ["client_id", "client_secret", "username", "password", "scope", "response_type", "grant_type"])


def test_http_endpoints_are_refused_unless_allowed():
    with pytest.raises(AicrError) as info:
        Transport("http://fabric.example:8080")
    assert "is plain http" in info.value.msg and "allow_http=true" in info.value.msg and info.value.details["field"] == "endpoint"
    allowed = Transport("http://fabric.example:8080", allow_http=True)
    assert allowed.base_url == "http://fabric.example:8080"
    assert allowed.warnings and "unencrypted" in allowed.warnings[0]
    assert Transport("fabric.example:8443").warnings == []  # host:port means https, as CoHDI's clients prefix it


def test_trust_env_uses_the_environment_ca_and_proxies(fab, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", fab.sim.ca_path)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    plain = Transport(fab.sim.endpoint, timeout=2)
    assert plain.verify is True  # the environment is ignored by default
    with pytest.raises(AicrError) as info:
        plain.request("GET", "/redfish/v1", authenticate=False)
    assert "TLS verification failed" in info.value.msg
    trusting = Transport(fab.sim.endpoint, timeout=2, trust_env=True)
    assert trusting.verify == fab.sim.ca_path
    with pytest.raises(FabricHTTPError) as info:  # TLS verified with the environment's CA; the service wants credentials
        trusting.request("GET", "/redfish/v1", authenticate=False)
    assert info.value.status == 401
    assert Transport(fab.sim.endpoint, trust_env=True, validate_certs=False).verify is False


def test_trust_env_without_environment_uses_the_system_store(monkeypatch):
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import system_ca_bundle

    found = system_ca_bundle()
    assert Transport("fabric.example", trust_env=True).verify == (found or True)


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


@pytest.mark.parametrize("status, kind", [(500, "response"), (502, "transport"), (503, "transport"), (504, "transport")])
def test_a_gateways_answer_to_a_mutation_is_an_unknown_outcome_of_the_transport_kind(fab, transport, status, kind):
    # 502/503/504 come from a proxy in front of the manager, which may still be applying the change: the caller re-reads until
    # it shows or the settle timeout (kind transport), never just once; a 500 is the manager's own answer (kind response)
    fab.control.fault(op="detach", action="error", status=status, body="html")
    with pytest.raises(AmbiguousOutcome) as info:
        transport.request("DELETE", machine_path(fab) + "/update", params={"tenant_uuid": fab.tenant_id}, json_body={})
    assert info.value.kind == kind and info.value.status == status
    assert len(fab.control.requests(op="detach")) == 1
