# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""HTTPS transport shared by the fabric backends.

- TLS is verified by default (``ca_path`` names the CA bundle; ``validate_certs=False`` opts out).
- Every request has a timeout. Reads (GET) are retried on timeouts, resets and 5xx; mutations never
  are: a mutation that times out, is reset or answered 5xx raises ``AmbiguousOutcome`` and the caller
  re-reads the machine before deciding anything. A 502/503/504 is a gateway's answer (a proxy or load balancer in
  front of the manager gave up or had no upstream), not the manager's: the manager may still be applying the change,
  so it is the ``transport`` kind (re-read until the change shows or the settle timeout), like a timeout. A mutation
  whose connection was never made (connection refused, the host not resolved, a connect timeout) never left this host:
  it is retried and fails as a read does, never ambiguous.
- Every request stays on the endpoint's scheme, host and port: a path or a link taken from the fabric's answers
  (a Redfish ``@odata.id``, an action target, a task monitor) that would leave it - ``@evil/x`` (userinfo),
  ``//evil/x``, ``https://evil/x`` - is refused (:func:`resolve_link`), so the credentials go nowhere else.
- A 401 invalidates the token and the request is sent once more with a fresh one (a 401 means the
  request was refused, so re-sending a mutation is safe); a second 401 is an error.
- Error bodies may be FTI JSON (either CoHDI client's ``ErrorBody`` shape), ``{"error": text}``, Redfish JSON, HTML,
  plain text or empty; the message says which, as ``code: message`` or whichever part there is (:func:`error_fields`).
- A bare ``host:port`` means ``https://`` (as CoHDI's clients prefix ``FTI_CDI_ENDPOINT``); ``http://`` is refused unless
  ``allow_http`` (then a warning). The environment (proxies, CA bundle variables) is ignored unless ``trust_env``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import re
import ssl
import threading
import time
import traceback
import warnings

try:
    import requests

    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError:
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = traceback.format_exc()

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError, first_line

try:
    from urllib.parse import urljoin, urlsplit
except ImportError:  # Python 2 (the sanity test's compile check only)
    from urlparse import urljoin, urlsplit  # type: ignore

MUTATING = ("POST", "PATCH", "PUT", "DELETE")
# answered by a gateway in front of the fabric, not by the fabric: the request may still be running behind it
GATEWAY_STATUSES = (502, 503, 504)


class FabricHTTPError(AicrError):
    """The fabric answered with an error status (the request was definitely processed or refused)."""

    def __init__(self, msg, status=None, code=None, **details):
        super(FabricHTTPError, self).__init__(msg, status=status, code=code, **details)
        self.status = status
        self.code = code


# AmbiguousOutcome kinds
TRANSPORT = "transport"
RESPONSE = "response"
TASK = "task"


class AmbiguousOutcome(AicrError):
    """A mutation whose effect is unknown: timeout, connection reset, or a 5xx answer.

    ``kind`` is ``transport`` (no answer from the fabric itself - timeout, reset, or a gateway's 502/503/504: the
    fabric may still be working on it), ``response`` (the fabric answered 500 or another 5xx: it is done, one
    re-read tells the truth) or ``task`` (the fabric accepted it as a Redfish task that was still running, or whose
    monitor could not be followed, when the wait for it ended: one re-read, and never sent again).
    """

    def __init__(self, msg, kind, status=None, **details):
        super(AmbiguousOutcome, self).__init__(msg, kind=kind, status=status, **details)
        self.kind = kind
        self.status = status


def _message_text(value):
    """An FTI ``detail.message``: a string, or raw JSON (CRO ``ErrorDetail.Message`` is ``json.RawMessage``)."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return " ".join(value.split())
    try:
        return json.dumps(value, sort_keys=True)[:200]
    except (TypeError, ValueError):
        return str(value)[:200]


def _join(code, message):
    """``code: message``, or whichever of the two there is - never a dangling ``": "``."""
    code = str(code).strip() if code not in (None, "") else ""
    message = message.strip() if message else ""
    if code and message:
        return "%s: %s" % (code, message)
    return code or message


def error_fields(data):
    """(code, message) of a parsed error body, or None when it is none of the known shapes.

    - FTI ``{"status": 404, "detail": {"code", "message", "data"}}``: CoHDI composable-resource-operator
      ``internal/cdi/fti/fm/api/common.go`` ``ErrorBody`` (``status`` int, ``message`` a string or raw JSON);
      composable-dra-driver ``pkg/client/client.go`` ``unsuccessfulResponse`` reads the same keys with ``status`` a
      string and ``message`` a string - both are accepted;
    - ``{"error": "<text>"}`` (other FTI-compatible servers; OAuth2 adds ``error_description``);
    - Redfish ``{"error": {"code", "message", "@Message.ExtendedInfo": [{"MessageId", "Message"}]}}`` (DMTF Redfish
      specification, error responses): the extended messages that say more than ``message`` (often the generic
      ``Base.GeneralError`` text "See ExtendedInfo for more information") follow it, after `` - ``.
    """
    if not isinstance(data, dict):
        return None
    detail = data.get("detail")
    if isinstance(detail, dict) and (detail.get("code") not in (None, "") or detail.get("message") not in (None, "")):
        return detail.get("code") or None, _message_text(detail.get("message"))
    error = data.get("error")
    if isinstance(error, dict) and (error.get("code") or error.get("message") or error.get("@Message.ExtendedInfo")):
        message = _message_text(error.get("message"))
        extended = error.get("@Message.ExtendedInfo")
        more = [_message_text(i.get("Message")) for i in extended if isinstance(i, dict) and i.get("Message")] if isinstance(extended, list) else []
        more = [m for m in more if m and m != message]
        if more:
            message = " - ".join([message] + more) if message else "; ".join(more)
        return error.get("code") or None, message
    if isinstance(error, str) and error.strip():
        description = data.get("error_description")
        return None, _join(error, _message_text(description) if description else "")
    if isinstance(detail, str) and detail.strip():
        return None, _message_text(detail)
    return None


def describe_body(text, content_type=""):
    """A one-line description of an error body: FTI/Redfish JSON, ``{"error": text}``, HTML, plain text or empty."""
    text = (text or "").strip()
    if not text:
        return "empty body"
    if text.startswith("{") or "json" in (content_type or ""):
        try:
            data = bounded.load_json(text, "a fabric answer")
        except (ValueError, AicrError):
            data = None  # described as text instead
        fields = error_fields(data)
        if fields is not None:
            return _join(*fields)[:300] or "empty error object"
    if "<html" in text[:200].lower() or "<!doctype" in text[:200].lower():
        match = re.search(r"<title>(.*?)</title>", text, re.I | re.S)
        inner = match.group(1) if match else re.sub(r"<[^>]+>", " ", text)
        return "HTML page: %s" % " ".join(inner.split())[:160]
    return " ".join(text.splitlines()[0].split())[:200]


def system_ca_bundle():
    """The CA bundle of the environment (``SSL_CERT_FILE``, as CoHDI's Helm chart sets it, or ``REQUESTS_CA_BUNDLE``), else the
    system store OpenSSL was built with; None when there is none (then requests' own bundle is used)."""
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and os.path.isfile(value):
            return value
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and os.path.isfile(candidate):
            return candidate
    if paths.capath and os.path.isdir(paths.capath):
        return paths.capath
    return None


class Response:
    def __init__(self, status, text, content_type, headers=None):
        self.status = status
        self.text = text
        self.content_type = content_type
        self.headers = headers or {}  # requests' headers are case-insensitive; see header()

    def header(self, name):
        """The value of response header ``name`` (any case), or None."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def json(self, what):
        """The parsed JSON body; AicrError naming ``what`` when it is not JSON."""
        try:
            return bounded.load_json(self.text, "%s: response" % what) if self.text else None
        except ValueError:
            raise AicrError("%s: response is not JSON (%s)" % (what, describe_body(self.text, self.content_type)), status=self.status)


class BearerAuth:
    """Authorization from a shared TokenCache."""

    def __init__(self, tokens):
        self.tokens = tokens

    def header(self):
        token = self.tokens.get()
        return "Bearer " + token, token

    def invalidate(self, token):
        self.tokens.invalidate(token)


class BasicAuth:
    """HTTP basic authorization (Redfish services)."""

    can_refresh = False

    def __init__(self, username, password):
        raw = ("%s:%s" % (username or "", password or "")).encode("utf-8")
        self._value = "Basic " + base64.b64encode(raw).decode("ascii")

    def header(self):
        return self._value, None

    def invalidate(self, token):
        return None


class Transport:
    """Thread-safe HTTPS client (one requests.Session per thread) with the retry rules above."""

    def __init__(self, endpoint, ca_path=None, validate_certs=True, timeout=30.0, read_retries=2, retry_backoff=0.25, auth=None, sleep=time.sleep,
                 allow_http=False, trust_env=False):
        if not HAS_REQUESTS:
            raise AicrError("the Python package 'requests' is required for fabric_device", exception=REQUESTS_IMPORT_ERROR)
        if not endpoint or not isinstance(endpoint, str):
            raise AicrError("endpoint: %r is not a host[:port] or https:// URL" % (endpoint,), field="endpoint")
        endpoint = endpoint.strip().rstrip("/")
        if "://" not in endpoint:
            endpoint = "https://" + endpoint  # as CoHDI's clients do: FTI_CDI_ENDPOINT is host:port, https:// is prefixed
        if not endpoint.startswith(("https://", "http://")):
            raise AicrError("endpoint: %s has an unsupported scheme; https:// is required" % endpoint, field="endpoint")
        self.warnings = []
        if endpoint.startswith("http://"):
            if not allow_http:
                raise AicrError("endpoint: %s is plain http; credentials and tokens would travel unencrypted. Use https://, or set allow_http=true "
                                "for a throw-away test fabric" % endpoint, field="endpoint")
            self.warnings.append("endpoint %s: plain http (allow_http=true); credentials and tokens travel unencrypted" % endpoint)
        self.base_url = endpoint
        if "@" in urlsplit(endpoint).netloc:
            # never echoed: what precedes the @ may be a password
            raise AicrError("endpoint: a URL with user information (user@ or user:password@) is not allowed; give the credentials as username and "
                            "password", field="endpoint")
        self._origin = _origin(endpoint)
        if self._origin is None:
            raise AicrError("endpoint: %s is not a host[:port] or https:// URL" % endpoint, field="endpoint")
        if ca_path and not os.path.isfile(ca_path):
            raise AicrError("ca_path: file %s does not exist" % ca_path, field="ca_path")
        self.trust_env = bool(trust_env)
        if not validate_certs:
            self.verify = False
        elif ca_path:
            self.verify = ca_path
        elif self.trust_env:
            self.verify = system_ca_bundle() or True
        else:
            self.verify = True
        if not validate_certs:
            # The user opted out explicitly; urllib3 would otherwise warn on every request.
            try:
                from urllib3.exceptions import InsecureRequestWarning  # pylint: disable=import-outside-toplevel

                warnings.simplefilter("ignore", InsecureRequestWarning)
            except ImportError:
                pass
        self.timeout = float(timeout)
        self.read_retries = int(read_retries)
        self.retry_backoff = float(retry_backoff)
        self.auth = auth
        self._sleep = sleep
        self._local = threading.local()
        self._sessions = []
        self._lock = threading.Lock()
        self.counts = {}

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            # Off by default: REQUESTS_CA_BUNDLE would override ca_path and proxies are not wanted for a local fabric. With
            # trust_env the proxies (HTTPS_PROXY, NO_PROXY) and .netrc of the environment apply, and the CA bundle is
            # SSL_CERT_FILE / REQUESTS_CA_BUNDLE or the system store (system_ca_bundle), unless ca_path names one.
            session.trust_env = self.trust_env
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def _count(self, method):
        with self._lock:
            self.counts[method] = self.counts.get(method, 0) + 1

    def request(self, method, path, params=None, json_body=None, form=None, authenticate=True, what=None):
        """Send one request; returns a Response with status < 400 or raises (see module docstring)."""
        method = method.upper()
        mutating = method in MUTATING and authenticate
        what = what or "%s %s" % (method, path)
        # the endpoint and a path are joined by text: a path that does not start with one "/" (``@evil/x``, ``//evil/x``) would
        # name another host and send it the credentials. Links from the fabric go through resolve_link first; this is the backstop.
        url = self.base_url + path if isinstance(path, str) else None
        if url is None or not path.startswith("/") or path.startswith("//") or _origin(url) != self._origin:
            raise AicrError("%s: the path %r leaves the endpoint %s; not sent (the credentials go to the endpoint only)" % (what, path, self.base_url),
                            path=path)
        attempt = 0
        refreshed = False
        while True:
            attempt += 1
            headers = {"Accept": "application/json"}
            token = None
            if authenticate and self.auth is not None:
                headers["Authorization"], token = self.auth.header()
            self._count(method)
            try:
                raw = self._session().request(method, url, params=params, json=json_body, data=form, headers=headers,
                                              timeout=self.timeout, verify=self.verify, allow_redirects=False)
            except requests.exceptions.SSLError as exc:
                raise AicrError("endpoint %s: TLS verification failed (%s); give ca_path with the fabric's CA or set validate_certs=false"
                                % (self.base_url, _first_line(exc)), field="ca_path")
            except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
                kind = "timed out after %.1fs" % self.timeout if isinstance(exc, requests.exceptions.Timeout) else "connection failed (%s)" % _first_line(exc)
                if mutating and not _never_connected(exc):
                    raise AmbiguousOutcome("%s: %s; the fabric may or may not have applied it" % (what, kind), kind=TRANSPORT)
                if attempt <= self.read_retries:
                    self._sleep(self.retry_backoff * attempt)
                    continue
                raise AicrError("%s: %s (after %d attempts)" % (what, kind, attempt), field="endpoint", endpoint=self.base_url)
            response = Response(raw.status_code, raw.text, raw.headers.get("Content-Type", ""), headers=raw.headers)
            if response.status == 401 and authenticate and not refreshed and token is not None:
                self.auth.invalidate(token)
                refreshed = True
                continue
            if response.status == 401 and authenticate:
                reason = describe_body(response.text, response.content_type)
                raise FabricHTTPError("%s: authentication rejected (HTTP 401: %s); check the credentials" % (what, reason),
                                      status=401)
            if response.status >= 500:
                description = "HTTP %d: %s" % (response.status, describe_body(response.text, response.content_type))
                if mutating:
                    if response.status in GATEWAY_STATUSES:
                        raise AmbiguousOutcome("%s: %s from a gateway; the fabric behind it may still be applying it" % (what, description),
                                               kind=TRANSPORT, status=response.status)
                    raise AmbiguousOutcome("%s: %s; the fabric may or may not have applied it" % (what, description), kind=RESPONSE, status=response.status)
                if attempt <= self.read_retries:
                    self._sleep(self.retry_backoff * attempt)
                    continue
                raise FabricHTTPError("%s: %s (after %d attempts)" % (what, description, attempt), status=response.status)
            if response.status >= 400:
                try:
                    fields = error_fields(bounded.load_json(response.text, "%s: error body" % what)) if response.text else None
                except (ValueError, AicrError):
                    fields = None  # the body is described as text instead
                code = fields[0] if fields else None
                raise FabricHTTPError("%s: HTTP %d: %s" % (what, response.status, describe_body(response.text, response.content_type)),
                                      status=response.status, code=code)
            return response

    def close(self):
        """Close the sessions of every thread that used this transport."""
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
        self._local = threading.local()


def resolve_link(base_url, link, what):
    """``link`` (a path or URL from the fabric's answer: a Redfish ``@odata.id``, an action target) as a path on the endpoint.

    A relative reference is resolved against the endpoint's URL; the result must keep the endpoint's scheme, host and port
    (a userinfo part is refused too: ``https://endpoint@evil/`` names the host ``evil``). The endpoint's own path prefix is
    taken off, since ``Transport.request`` puts it in front. Anything else is refused in one line naming the link.
    """
    if not isinstance(link, str) or not link.strip() or any(c in link for c in "\r\n\\"):
        raise AicrError("%s: the fabric named the link %r, which is not a URL path; not followed" % (what, link), link=link)
    resolved = urljoin(base_url + "/", link)
    if _origin(resolved) is None or _origin(resolved) != _origin(base_url):
        raise AicrError("%s: the fabric named the link %s, which leaves the endpoint %s; not followed (the credentials go to the endpoint only)"
                        % (what, link, base_url), link=link)
    parts = urlsplit(resolved)
    path = parts.path + ("?" + parts.query if parts.query else "")
    prefix = urlsplit(base_url).path.rstrip("/")
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        path = path[len(prefix):] or "/"
    return path


def _origin(url):
    """(scheme, host, port) of ``url`` with the default port filled in; None when it has a userinfo part, no host or a bad port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if "@" in parts.netloc or not parts.hostname or scheme not in ("https", "http"):
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def _never_connected(exc):
    """Whether a requests connection error is one of a connection that was never made (refused, the host not resolved, a
    connect timeout): the request never left this host, so the fabric cannot have applied it."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return reason.__class__.__name__ in ("NewConnectionError", "NameResolutionError")


def _first_line(exc):
    return first_line(exc)[:200] or exc.__class__.__name__
