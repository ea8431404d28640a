"""A fault-injecting TLS proxy in front of the real kube-apiserver (tests only, 127.0.0.1 only).

    proxy = FaultProxy(plane).start()
    kubeconfig = proxy.kubeconfig_for(plane.identity_kubeconfig("release"))  # same identity, via the proxy
    proxy.add_fault(code=503, count=2, verbs=["get"], user_agent="aicr-runtime")
    proxy.add_fault(code=429, count=1, verbs=["list"], retry_after=1)
    proxy.add_delay(3, count=1, verbs=["update"], path="clusterstacks/gpu/status$")
    proxy.add_cut(count=1, verbs=["watch"], after_bytes=200)   # the connection dies mid-answer
    proxy.stop()

The proxy terminates TLS with a certificate of the lab's CA, so clients verify it as they verify
the API server. A client presenting a lab client certificate is forwarded upstream *with that same
certificate* (the proxy holds the lab's identities' keys), a bearer token is forwarded as sent, so
the API server authenticates and authorises exactly the identity the client used; RBAC, admission
and the audit log stay real. Faults are answered by the proxy itself, in the API server's Status
shape. Rules match on verb, path (regex), user agent (regex); the first matching rule with count
left applies. ``requests`` lists what went through (method, path, verb, user agent, fault).
"""

import hashlib
import json
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse

import yaml

from aicr_lab.controlplane.cluster import write_kubeconfig

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired",
           422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable",
           504: "Timeout"}
PHRASES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict", 410: "Gone",
           422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}
MUTATING = frozenset(("create", "update", "patch", "delete", "deletecollection"))


def request_verb(method, target):
    """The Kubernetes verb of an HTTP request (get/list/watch/create/update/patch/delete/deletecollection)."""
    parsed = urllib.parse.urlsplit(target)
    query = urllib.parse.parse_qs(parsed.query)
    segments = [s for s in parsed.path.split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]
    elif segments[:1] == ["apis"]:
        rest = segments[3:]
    else:
        return method.lower()
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        named = len(rest) >= 4
    else:
        named = len(rest) >= 2
    if method == "GET":
        if query.get("watch", [""])[0] in ("true", "1"):
            return "watch"
        return "get" if named else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete" if named else "deletecollection"}.get(method, method.lower())


class Rule:  # pylint: disable=too-many-instance-attributes,too-few-public-methods
    """One fault: answer ``code``, delay by ``seconds``, or cut the connection."""

    def __init__(self, action, count=None, verbs=None, path=None, user_agent=None, code=500, retry_after=None, message=None,
                 seconds=0.0, after_bytes=None):
        self.action = action
        self.count = count
        self.verbs = set(verbs or ())
        self.path = re.compile(path) if path else None
        self.user_agent = re.compile(user_agent) if user_agent else None
        self.code = code
        self.retry_after = retry_after
        self.message = message
        self.seconds = seconds
        self.after_bytes = after_bytes

    def matches(self, verb, path, user_agent):
        if self.count is not None and self.count <= 0:
            return False
        if self.verbs and verb not in self.verbs and not ("mutating" in self.verbs and verb in MUTATING):
            return False
        if self.path and not self.path.search(path):
            return False
        if self.user_agent and not self.user_agent.search(user_agent or ""):
            return False
        return True


class _Connection:
    """One client connection and, lazily, its upstream connection."""

    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.reader = client.makefile("rb")
        self.upstream = None
        self.upstream_reader = None
        self.identity = None

    def close(self):
        for sock in (self.client, self.upstream):
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass

    def serve(self):
        der = self.client.getpeercert(binary_form=True)
        if der:
            self.identity = self.proxy.identities.get(hashlib.sha256(der).hexdigest())
        while not self.proxy.stopped.is_set():
            request_line = self.reader.readline(65537)
            if not request_line or not request_line.strip():
                return
            method, target, _version = request_line.decode("latin-1").split(" ", 2)
            headers = _read_headers(self.reader)
            body = _read_body(self.reader, headers)
            user_agent = _header(headers, "user-agent") or ""
            verb = request_verb(method, target)
            path = urllib.parse.urlsplit(target).path
            rule = self.proxy.take_rule(verb, path, user_agent)
            self.proxy.record(method, target, verb, user_agent, rule)
            if rule is not None and rule.seconds:
                time.sleep(rule.seconds)
            if rule is not None and rule.action == "respond":
                self._send_status(rule)
                continue
            if rule is not None and rule.action == "cut" and rule.after_bytes is None:
                return
            if not self._forward(method, target, headers, body, rule):
                return

    def _send_status(self, rule):
        message = rule.message or "injected by the lab's fault proxy"
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                  "reason": REASONS.get(rule.code, "InternalError"), "code": rule.code}
        extra = []
        if rule.code == 429 or rule.retry_after is not None:
            retry = int(rule.retry_after or 0)
            status["details"] = {"retryAfterSeconds": retry}
            extra.append("Retry-After: %d" % retry)
        data = json.dumps(status).encode()
        head = ["HTTP/1.1 %d %s" % (rule.code, PHRASES.get(rule.code, "Error")), "Content-Type: application/json",
                "Content-Length: %d" % len(data)] + extra
        self.client.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)

    def _connect_upstream(self):
        context = ssl.create_default_context(cafile=self.proxy.ca_file)
        context.set_alpn_protocols(["http/1.1"])
        if self.identity:
            context.load_cert_chain(*self.identity)
        raw = socket.create_connection((self.proxy.upstream_host, self.proxy.upstream_port), timeout=None)
        self.upstream = context.wrap_socket(raw, server_hostname=self.proxy.upstream_host)
        self.upstream_reader = self.upstream.makefile("rb")

    def _forward(self, method, target, headers, body, rule):  # pylint: disable=too-many-arguments
        if self.upstream is None:
            self._connect_upstream()
        out = [(k, v) for k, v in headers if k.lower() not in ("transfer-encoding", "content-length")]
        if body or method in ("POST", "PUT", "PATCH"):
            out.append(("Content-Length", str(len(body))))
        head = "%s %s HTTP/1.1\r\n" % (method, target) + "".join("%s: %s\r\n" % kv for kv in out) + "\r\n"
        self.upstream.sendall(head.encode("latin-1") + body)
        status_line = self.upstream_reader.readline(65537)
        if not status_line:
            return False
        response_headers = _read_headers(self.upstream_reader)
        self.client.sendall(status_line + b"".join(("%s: %s\r\n" % kv).encode("latin-1") for kv in response_headers) + b"\r\n")
        budget = [rule.after_bytes] if rule is not None and rule.action == "cut" else [None]
        if method == "HEAD" or status_line.split(b" ")[1][:1] in (b"1",) or status_line.split(b" ")[1] in (b"204", b"304"):
            return True
        if (_header(response_headers, "transfer-encoding") or "").lower() == "chunked":
            return self._relay_chunked(budget)
        length = _header(response_headers, "content-length")
        if length is not None:
            return self._relay(int(length), budget)
        self._relay(None, budget)
        return False

    def _send(self, data, budget):
        """Send to the client; False once the cut rule's byte budget is spent (the connection is then cut)."""
        if budget[0] is not None:
            if len(data) >= budget[0]:
                self.client.sendall(data[:budget[0]])
                return False
            budget[0] -= len(data)
        self.client.sendall(data)
        return True

    def _relay(self, length, budget):
        remaining = length
        while remaining is None or remaining > 0:
            chunk = self.upstream_reader.read1(65536 if remaining is None else min(65536, remaining))
            if not chunk:
                return False
            if remaining is not None:
                remaining -= len(chunk)
            if not self._send(chunk, budget):
                return False
        return True

    def _relay_chunked(self, budget):
        while True:
            size_line = self.upstream_reader.readline(65537)
            if not size_line:
                return False
            size = int(size_line.split(b";")[0].strip(), 16)
            data = self.upstream_reader.read(size + 2) if size else b""
            if size == 0:
                trailer = b""
                while True:
                    line = self.upstream_reader.readline(65537)
                    trailer += line
                    if line in (b"\r\n", b"\n", b""):
                        break
                return self._send(size_line + trailer, budget)
            if not self._send(size_line + data, budget):
                return False


def _read_headers(reader):
    headers = []
    while True:
        line = reader.readline(65537)
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, _colon, value = line.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))


def _header(headers, name):
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _read_body(reader, headers):
    if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
        body = b""
        while True:
            size = int(reader.readline(65537).split(b";")[0].strip(), 16)
            if size == 0:
                _read_headers(reader)
                return body
            body += reader.read(size)
            reader.read(2)
    length = _header(headers, "content-length")
    return reader.read(int(length)) if length else b""


class FaultProxy:  # pylint: disable=too-many-instance-attributes
    """The proxy for one control plane; ``url`` once started."""

    def __init__(self, plane, directory=None):
        self.plane = plane
        self.upstream_host = "127.0.0.1"
        self.upstream_port = plane.ports["kube-apiserver"]
        self.ca_file = plane.ca_file
        self.directory = str(directory or os.path.join(str(plane.dir), "proxy"))
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        cert, key = plane.authority.issue("fault-proxy", "aicr lab fault proxy", server_names=("127.0.0.1", "localhost"), server=True)
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cert, key)
        self.server_context.verify_mode = ssl.CERT_OPTIONAL
        self.server_context.load_verify_locations(self.ca_file)
        self.server_context.set_alpn_protocols(["http/1.1"])
        self.identities = plane.client_certificates()
        self.rules = []
        self.requests = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.listener = None
        self.connections = set()
        self.port = None

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def start(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, name="aicr-fault-proxy", daemon=True).start()
        return self

    def stop(self):
        self.stopped.set()
        if self.listener is not None:
            self.listener.close()
        with self.lock:
            connections = list(self.connections)
        for connection in connections:
            connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _accept(self):
        while not self.stopped.is_set():
            try:
                raw, _addr = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(raw,), daemon=True).start()

    def _handle(self, raw):
        try:
            client = self.server_context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        connection = _Connection(self, client)
        with self.lock:
            self.connections.add(connection)
        try:
            connection.serve()
        except (OSError, ValueError, IndexError, ssl.SSLError):
            pass  # a client or the server went away mid-request: the connection just ends
        finally:
            connection.close()
            with self.lock:
                self.connections.discard(connection)

    # --- rules -------------------------------------------------------------------------------

    def _add(self, rule):
        with self.lock:
            self.rules.append(rule)
        return rule

    # pylint: disable=too-many-arguments
    def add_fault(self, code=500, count=1, verbs=None, path=None, user_agent=None, retry_after=None, message=None):
        """Answer the next ``count`` matching requests (all, with ``count=None``) with an API Status of ``code``."""
        return self._add(Rule("respond", count, verbs, path, user_agent, code=code, retry_after=retry_after, message=message))

    def add_delay(self, seconds, count=None, verbs=None, path=None, user_agent=None):
        """Hold matching requests ``seconds`` before forwarding them."""
        return self._add(Rule("delay", count, verbs, path, user_agent, seconds=seconds))

    def add_cut(self, count=1, verbs=None, path=None, user_agent=None, after_bytes=None):
        """Cut the connection of matching requests: before forwarding, or after ``after_bytes`` of the answer."""
        return self._add(Rule("cut", count, verbs, path, user_agent, after_bytes=after_bytes))

    def clear(self):
        with self.lock:
            self.rules = []

    def take_rule(self, verb, path, user_agent):
        with self.lock:
            for rule in self.rules:
                if rule.matches(verb, path, user_agent):
                    if rule.count is not None:
                        rule.count -= 1
                    return rule
        return None

    def record(self, method, target, verb, user_agent, rule):  # pylint: disable=too-many-arguments
        with self.lock:
            self.requests.append({"method": method, "target": target, "verb": verb, "userAgent": user_agent,
                                  "fault": None if rule is None else rule.action if rule.action != "respond" else rule.code})

    def kubeconfig_for(self, kubeconfig, path=None):
        """A copy of ``kubeconfig`` (a path) whose cluster is this proxy."""
        with open(kubeconfig, "r", encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        path = path or os.path.join(self.directory, "via-proxy-%s" % os.path.basename(kubeconfig))
        return write_kubeconfig(path, self.url, self.ca_file, user, namespace=context.get("namespace", "default"))
