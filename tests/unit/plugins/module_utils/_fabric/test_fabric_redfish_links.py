"""Links the fabric names never take the credentials to another host.

The Redfish client follows the ``@odata.id`` links of the service's answers (CompositionService, Systems, ResourceBlocks, their
members and parts) and the action targets a system advertises. The transport joins the endpoint and a path as text, so a link
``@evil/redfish/v1/x`` made ``https://bmc:8443@evil/redfish/v1/x`` - host ``evil``, with the Basic credentials. Every link is now
resolved against the endpoint and refused in one line when it leaves its scheme, host and port; the transport refuses any path
that would. With a recording session in place of requests': nothing is ever sent anywhere but the endpoint.
"""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.redfish import RedfishBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric import transport as fabric_transport
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import BasicAuth, Transport

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    from urlparse import urlsplit

ENDPOINT = "https://bmc.example:8443"


class Raw:
    def __init__(self, status, body):
        self.status_code = status
        self.text = json.dumps(body) if body is not None else ""
        self.headers = {"Content-Type": "application/json"}


class RecordingSession:
    """requests.Session's ``request`` only: answers by URL path from ``pages``, records every URL and its Authorization."""

    def __init__(self, pages):
        self.pages = pages
        self.sent = []

    def request(self, method, url, headers=None, **_kwargs):
        self.sent.append((method, url, (headers or {}).get("Authorization")))
        parts = urlsplit(url)
        if (parts.hostname, parts.port) != ("bmc.example", 8443) or "@" in parts.netloc:
            return Raw(200, {})  # another host: what matters is that it was asked at all (the test fails on it)
        return Raw(200, self.pages.get(parts.path, {}))


def redfish(pages):
    transport = Transport(ENDPOINT, auth=BasicAuth("admin", "s3cret"), read_retries=0)
    session = RecordingSession(pages)
    transport._session = lambda: session  # pylint: disable=protected-access
    return RedfishBackend(transport), session


def root(composition="/redfish/v1/CompositionService", systems="/redfish/v1/Systems"):
    return {"/redfish/v1": {"CompositionService": {"@odata.id": composition}, "Systems": {"@odata.id": systems}},
            "/redfish/v1/CompositionService": {"ResourceBlocks": {"@odata.id": "/redfish/v1/CompositionService/ResourceBlocks"}}}


def only_the_endpoint_was_asked(session):
    hosts = set(urlsplit(url).netloc for _method, url, _auth in session.sent)
    assert hosts == {"bmc.example:8443"}, session.sent


@pytest.mark.parametrize("link", [
    "@evil.example/redfish/v1/Systems/x",  # relative: resolved on the endpoint, never as a userinfo
    "/redfish/v1/Systems/x",
    "https://BMC.example:8443/redfish/v1/Systems/x",
])
def test_a_link_on_the_endpoint_is_followed_there(link):
    pages = root()
    pages["/redfish/v1/Systems/s1"] = {"Links": {"ResourceBlocks": [{"@odata.id": link}]}}
    backend, session = redfish(pages)
    with pytest.raises(AicrError):  # the page is empty (no Id): what matters is where it was asked
        backend.read_machine("s1")
    only_the_endpoint_was_asked(session)


@pytest.mark.parametrize("link", [
    "//evil.example/redfish/v1/Systems/x",
    "https://evil.example/redfish/v1/Systems/x",
    "https://bmc.example:9443/redfish/v1/Systems/x",
    "http://bmc.example:8443/redfish/v1/Systems/x",
    "https://admin@bmc.example:8443/redfish/v1/Systems/x",
])
def test_a_block_link_to_another_host_is_refused_in_one_line(link):
    pages = root()
    pages["/redfish/v1/Systems/s1"] = {"Links": {"ResourceBlocks": [{"@odata.id": link}]}}
    backend, session = redfish(pages)
    with pytest.raises(AicrError) as raised:
        backend.read_machine("s1")
    assert "leaves the endpoint %s; not followed (the credentials go to the endpoint only)" % ENDPOINT in raised.value.msg
    assert link in raised.value.msg and "\n" not in raised.value.msg and "s3cret" not in raised.value.msg
    only_the_endpoint_was_asked(session)


@pytest.mark.parametrize("field", ["composition", "systems"])
def test_a_service_root_link_to_another_host_is_refused(field):
    backend, session = redfish(root(**{field: "https://evil.example/redfish/v1/x"}))
    with pytest.raises(AicrError) as raised:
        backend.read_machine("s1")
    assert "https://evil.example/redfish/v1/x, which leaves the endpoint" in raised.value.msg
    only_the_endpoint_was_asked(session)


def test_an_advertised_action_target_on_another_host_is_refused():
    pages = root()
    pages["/redfish/v1/Systems/s1"] = {"Links": {"ResourceBlocks": []}, "Actions": {
        "#ComputerSystem.RemoveResourceBlock": {"target": "@evil.example:443/redfish/v1/Systems/s1/Actions/ComputerSystem.RemoveResourceBlock"},
        "#ComputerSystem.AddResourceBlock": {"target": "https://evil.example/add"}}}
    backend, session = redfish(pages)
    assert backend.read_machine("s1") == []

    class Block:
        res_uuid = "b1"
        ref = "/redfish/v1/CompositionService/ResourceBlocks/b1"

    backend.detach("s1", Block(), [])  # the relative target is a path on the endpoint
    assert session.sent[-1][1] == ENDPOINT + "/@evil.example:443/redfish/v1/Systems/s1/Actions/ComputerSystem.RemoveResourceBlock"
    with pytest.raises(AicrError) as raised:
        backend._action_target("s1", "#ComputerSystem.AddResourceBlock")  # pylint: disable=protected-access
    assert "https://evil.example/add, which leaves the endpoint" in raised.value.msg
    only_the_endpoint_was_asked(session)


@pytest.mark.parametrize("path", ["@evil.example/redfish/v1/x", "//evil.example/x", "redfish/v1", "https://evil.example/x", None])
def test_the_transport_never_sends_a_path_that_leaves_the_endpoint(path):
    transport = Transport(ENDPOINT, auth=BasicAuth("admin", "s3cret"))
    session = RecordingSession({})
    transport._session = lambda: session  # pylint: disable=protected-access
    with pytest.raises(AicrError) as raised:
        transport.request("GET", path, what="probe")
    assert raised.value.msg.startswith("probe: the path") and "not sent" in raised.value.msg
    assert session.sent == []


@pytest.mark.parametrize("base, link, path", [
    (ENDPOINT, "/redfish/v1/Systems", "/redfish/v1/Systems"),
    (ENDPOINT, "Systems/1", "/Systems/1"),
    (ENDPOINT, "https://bmc.example:8443/redfish/v1?x=1", "/redfish/v1?x=1"),
    ("https://bmc.example", "https://bmc.example:443/redfish/v1", "/redfish/v1"),
    ("https://gw.example/bmc1", "https://gw.example/bmc1/redfish/v1/Systems", "/redfish/v1/Systems"),
])
def test_resolve_link_gives_the_path_on_the_endpoint(base, link, path):
    assert fabric_transport.resolve_link(base, link, "probe") == path


@pytest.mark.parametrize("link", ["", None, 7, "/redfish/v1\r\nHost: evil", "\\\\evil.example\\x", "https://bmc.example:x/"])
def test_resolve_link_refuses_what_is_not_a_path(link):
    with pytest.raises(AicrError) as raised:
        fabric_transport.resolve_link(ENDPOINT, link, "probe")
    assert raised.value.msg.startswith("probe: the fabric named the link")


def test_an_endpoint_with_user_information_is_refused_without_echoing_it():
    with pytest.raises(AicrError) as raised:
        Transport("https://admin:hunter2@bmc.example:8443")
    assert raised.value.msg.startswith("endpoint: a URL with user information") and "hunter2" not in raised.value.msg


def test_the_endpoints_own_prefix_resolves_to_its_root():
    assert fabric_transport.resolve_link("https://gw.example/bmc1", "/bmc1", "probe") == "/"
