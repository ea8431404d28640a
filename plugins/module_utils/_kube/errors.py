# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What went wrong talking to the API server, in one line each.

:class:`ClusterError` is every failed request (``status`` the HTTP status, 0 when there was no answer;
``reason`` the API server's own explanation or the transport failure); :class:`NotServed` a kind the
server does not serve (yet). :func:`describe` is ``<status> <reason>`` (or the transport failure), the
form every engine quotes after its own context (``read node x: Kubernetes API answered 403 User ...``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError, first_line


class ClusterError(AicrError):
    """An API call failed; ``status`` is the HTTP status (0 when unreachable), ``reason`` why."""

    def __init__(self, msg, status=0, reason="", **details):
        super(ClusterError, self).__init__(msg, status=status, **details)
        self.status = status
        self.reason = reason or msg


class NotServed(ClusterError):
    """The API server does not serve this apiVersion/kind (yet)."""


# Failures after which the same read may well be answered a moment later: retried (reads, server-side applies) and
# waited through (readiness waits). 0 is no answer at all (refused, reset, timed out) - except a failed TLS handshake.
TRANSIENT_STATUS = (0, 429, 500, 502, 503, 504)
TLS_FAILURE = "TLS: "  # how transport_error begins the reason of a failed TLS handshake


def transient(exc):
    """Whether ``exc`` is a failed request the API server may answer a moment later (no answer, 429, 5xx); a
    :class:`NotServed` or any other error (403, 404, 409, 422...) is an answer. So is a failed TLS handshake (a CA that
    did not sign the server, an expired or refused certificate): trying it again until the deadline gives the same."""
    if not isinstance(exc, ClusterError) or isinstance(exc, NotServed) or exc.status not in TRANSIENT_STATUS:
        return False
    return not (exc.status == 0 and str(exc.reason or "").startswith(TLS_FAILURE))


def never_sent(exc):
    """Whether a failed request certainly did not reach the server (refused connection) or was refused unread (429):
    even a write is safe to send again."""
    return isinstance(exc, ClusterError) and (exc.status == 429 or (exc.status == 0 and exc.reason == "connection refused"))


def describe(exc):
    """``<status> <the API server's reason>``, or the transport failure when there was no answer."""
    if not getattr(exc, "status", 0):
        return getattr(exc, "reason", None) or first_line(exc)
    return "%s %s" % (exc.status, exc.reason)


def _causes(exc):
    """``exc`` and what it wraps (urllib3's ``reason``, an exception given as its first argument, ``__cause__``,
    ``__context__``), outermost first, each once."""
    seen, pending = set(), [exc]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        args = getattr(current, "args", None) or ()
        for inner in (getattr(current, "reason", None), args[0] if args else None, current.__cause__, current.__context__):
            if isinstance(inner, BaseException):
                pending.append(inner)


# OpenSSL's decoration of a message: ``[SSL: CERTIFICATE_VERIFY_FAILED] `` before it, `` (_ssl.c:1006)`` after it
_SSL_PREFIX = re.compile(r"^\[SSL(: [A-Z0-9_]+)?\] ")
_SSL_SUFFIX = re.compile(r"\s*\(_ssl\.c:\d+\).*$")
_TLS_MARKERS = ("certificate verify failed", "certificate has expired", "self-signed certificate", "self signed certificate",
                "unable to get local issuer", "hostname mismatch", "wrong version number", "sslv3 alert", "tlsv1 alert")


def tls_reason(exc):
    """The reason of a failed TLS handshake as OpenSSL gives it, without its decoration, cut at nothing: ``certificate
    verify failed: self-signed certificate in certificate chain``; None when ``exc`` is no TLS failure. One walk of the
    chain: a real handshake's verification message (``ssl.SSLCertVerificationError.verify_message``) wherever it is wins
    over the first text that reads as a TLS failure."""
    found = None
    for current in _causes(exc):
        verify = getattr(current, "verify_message", None)
        if verify:  # ssl.SSLCertVerificationError of a real handshake
            return "certificate verify failed: %s" % verify
        if found is None:
            found = _tls_text(current)
    return found


def _tls_text(current):
    """The TLS failure ``current`` (one exception of a chain) describes in its text, cleaned; None when it describes none."""
    args = getattr(current, "args", None) or ()
    text = first_line(args[1] if len(args) > 1 and isinstance(args[1], str) else current)
    lowered = text.lower()
    for marker in _TLS_MARKERS:
        if marker in lowered:
            return _clean_tls(text[lowered.index(marker):])
    if "SSL" in current.__class__.__name__ and text and not isinstance(args[0] if args else None, BaseException):
        return _clean_tls(text)
    return None


def _clean_tls(text):
    text = _SSL_SUFFIX.sub("", _SSL_PREFIX.sub("", text.strip()))
    return text.rstrip("'\")( ").strip()[:200]


def transport_error(exc):
    """One line for a request that got no HTTP answer: TLS, refused, timed out, name resolution."""
    tls = tls_reason(exc)
    if tls:
        return TLS_FAILURE + tls
    text = ""
    for current in _causes(exc):
        name = current.__class__.__name__
        message = first_line(current)
        if "Refused" in name or "refused" in message.lower():
            text = text or "connection refused"
        elif "Timeout" in name or "timed out" in message.lower():
            text = text or "timed out"
        elif "NameResolution" in name or "Name or service not known" in message:
            text = text or "host name not resolved"
    return text or (first_line(exc)[:200] or exc.__class__.__name__)


def status_message(status, body):
    """The API server's own explanation of a non-2xx answer (a Status' ``message``), one line.

    For 401 and 403 it names who was refused and what: ``User "x" cannot list resource "nodes" …``.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    message = text
    try:
        decoded = json.loads(text)
        if isinstance(decoded, dict):
            message = decoded.get("message") or text
    except ValueError:
        pass
    message = first_line(message).strip()
    if status == 401 and not message.strip(" {}"):
        message = "Unauthorized"
    if status == 401:
        message += " (the API server refused the credentials: expired or unknown client certificate or token?)"
    return message[:400]


# The verb RBAC checks for a request: by method, and whether it names one object
_VERBS = {"GET": ("get", "list"), "DELETE": ("delete", "deletecollection"), "POST": ("create", "create"), "PUT": ("update", "update"),
          "PATCH": ("patch", "patch")}


def request_target(method, path):
    """What RBAC checks for a request (``GET /api/v1/namespaces/x/configmaps/y`` is ``get`` of ``configmaps`` in ``x``):
    ``{verb, resource, group, namespace, name}`` (``resource`` with its subresource: ``clusterstacks/status``); empty for
    a path that names no resource (``/version``, discovery)."""
    parts = [p for p in (path or "").split("?", 1)[0].split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return {}
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return {}
    name = rest[1] if len(rest) > 1 else None
    one, many = _VERBS.get(method.upper(), (method.lower(), method.lower()))
    target = {"verb": one if name else many, "resource": rest[0] + ("/" + rest[2] if len(rest) > 2 else ""), "group": group}
    target.update((k, v) for k, v in (("namespace", namespace), ("name", name)) if v)
    return target


def refused_what(exc):
    """``get leases (coordination.k8s.io)``: the verb and resource a 403 refused, from the request (not from the server's
    wording, which an admission webhook may replace); "" when the request named no resource."""
    target = (getattr(exc, "details", None) or {}).get("request") or {}
    if not target.get("verb"):
        return ""
    return "%s %s%s" % (target["verb"], target["resource"], " (%s)" % target["group"] if target.get("group") else "")


# The shipped roles that grant namespaced objects only where a RoleBinding binds them (meta/rbac/): (kind, name, the
# files that ship and show how to bind it). A 403 on those objects means the binding is missing in that namespace.
LEASE_ROLE = ("Role", "aicr-runtime:lease", "meta/rbac/aicr-system.yaml; examples/rbac/lease-rolebinding.yaml")
STACK_CONFIGMAP_ROLE = ("ClusterRole", "aicr-runtime:stack-configmap", "meta/rbac/stack-configmap.yaml")
FACTS_CONFIGMAP_ROLE = ("ClusterRole", "aicr-runtime:facts-configmap", "meta/rbac/facts-configmap.yaml")


def binding_advice(exc, role, namespace):
    """For a 403 on an object of ``namespace`` that the shipped ``role`` (one of the tuples above) grants: the sentence
    that says which role to bind there, and the same as the structured detail ``rbac`` (for AWX and callers that read
    the failed result). ``("", {})`` for any other failure: that error stands as it is."""
    if getattr(exc, "status", None) != 403:
        return "", {}
    kind, name, files = role
    return ("bind the %s %s in namespace %s with a RoleBinding (%s)" % (kind, name, namespace, files),
            {"rbac": {"kind": kind, "name": name, "namespace": namespace, "files": files.split("; ")}})


def refusal(exc, subject, role, namespace, field, **details):
    """The one message of a 403 on an object the shipped ``role`` grants in ``namespace`` (the option ``field`` names it):
    ``<subject>: this identity may not <verb> <resource> in namespace <namespace> (<field>); bind the Role … in namespace …
    with a RoleBinding (<files>) - <the API server's answer>``, an AicrError with ``rbac``, ``field``, ``status`` 403 and
    ``request`` (what was refused: verb, resource, group, namespace, name). None for any other failure (that error stands
    as it is)."""
    advice, rbac = binding_advice(exc, role, namespace)
    if not advice:
        return None
    what = refused_what(exc) or "use what %s grants" % role[1]
    target = (getattr(exc, "details", None) or {}).get("request")
    return AicrError("%s: this identity may not %s in namespace %s (%s); %s - %s" % (subject, what, namespace, field, advice, getattr(exc, "msg", exc)),
                     field=field, status=403, **dict(details, request=target, **rbac) if target else dict(details, **rbac))
