"""HTTP front end: routing, discovery, OpenAPI, watches, faults, audit and the control API."""

import collections
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import select
import socket
import socketserver
import sys
import threading
import time
import traceback
from urllib.parse import parse_qs, urlsplit

import yaml

from . import protobuf, tables
from .controllers import Controllers, default_nodes
from .registry import Registry, version_priority_key
from .selectors import SelectorError, field_match, label_match, parse_field_selector, parse_label_selector
from .store import ApiError, Context, Store, bad_request, manager_from_user_agent, not_found

try:
    _YAML_LOADER = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _YAML_LOADER = yaml.SafeLoader

PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")
MUTATING = {"create", "update", "patch", "delete", "deletecollection"}
JSON_CT = "application/json"


AGGREGATED_DISCOVERY_GROUP = "apidiscovery.k8s.io"
AGGREGATED_DISCOVERY_KIND = "APIGroupDiscoveryList"
AGGREGATED_DISCOVERY_VERSIONS = ("v2", "v2beta1")  # served versions, preferred first


def aggregated_discovery_content_type(discovery_version):
    return "application/json;g=%s;v=%s;as=%s" % (AGGREGATED_DISCOVERY_GROUP, discovery_version, AGGREGATED_DISCOVERY_KIND)


def parse_accept(accept):
    """[(media type, {param: value}, q)] of an Accept header, most preferred first (stable for equal q)."""
    ranges = []
    for position, part in enumerate(accept.split(",")):
        pieces = [piece.strip() for piece in part.split(";")]
        if not pieces[0]:
            continue
        params = {}
        for piece in pieces[1:]:
            key, _sep, value = piece.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 1.0
        ranges.append((-quality, position, pieces[0].lower(), params))
    return [(media, params, -neg_q) for neg_q, _pos, media, params in sorted(ranges) if neg_q < 0]


def negotiate_aggregated_discovery(accept):
    """The apidiscovery.k8s.io version to answer /api or /apis with, or None for the legacy documents.

    The client's media ranges are tried in preference order; the first one the server can produce
    wins. Only JSON is produced: a protobuf aggregated range is skipped, so a client listing
    protobuf then JSON gets JSON, and one listing only protobuf gets the legacy form (which
    clients fall back to, as they do against servers older than 1.26).
    """
    for media, params, _quality in parse_accept(accept):
        if "as" not in params and "g" not in params:
            if media in ("application/json", "application/*", "*/*"):
                return None  # the plain (legacy) document is acceptable and preferred
            continue
        if media != "application/json":
            continue
        if (params.get("g") == AGGREGATED_DISCOVERY_GROUP and params.get("as") == AGGREGATED_DISCOVERY_KIND
                and params.get("v") in AGGREGATED_DISCOVERY_VERSIONS):
            return params["v"]
    return None


def subresources_of(rtype, version):
    """Subresources of a resource type: [{name, group, version, kind, verbs}] (group/version of the response kind)."""
    subs = []
    if rtype.status:
        subs.append({"name": "status", "group": rtype.group, "version": version, "kind": rtype.kind,
                     "verbs": ["get", "patch", "update"]})
    if rtype.scale:
        subs.append({"name": "scale", "group": "autoscaling", "version": "v1", "kind": "Scale",
                     "verbs": ["get", "patch", "update"]})
    if (rtype.group, rtype.plural) == ("", "pods"):
        subs.append({"name": "log", "group": "", "version": "v1", "kind": "Pod", "verbs": ["get"]})
        subs.append({"name": "eviction", "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    if (rtype.group, rtype.plural) == ("", "namespaces"):
        subs.append({"name": "finalize", "group": "", "version": "v1", "kind": "Namespace", "verbs": ["update"]})
    return subs


def aggregated_resource(rtype, version):
    """One APIResourceDiscovery entry (apidiscovery.k8s.io/v2 field names)."""
    entry = {"resource": rtype.plural,
             "responseKind": {"group": rtype.group, "version": version, "kind": rtype.kind},
             "scope": "Namespaced" if rtype.namespaced else "Cluster",
             "singularResource": rtype.singular, "verbs": list(rtype.verbs)}
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    subs = [{"subresource": sub["name"], "responseKind": {"group": sub["group"], "version": sub["version"], "kind": sub["kind"]},
             "verbs": sub["verbs"]} for sub in subresources_of(rtype, version)]
    if subs:
        entry["subresources"] = subs
    return entry


def _dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


class Options:
    """Emulator options (also the keyword arguments of ``start_emulator``)."""

    # pylint: disable=too-many-instance-attributes,too-many-arguments
    def __init__(self, host="127.0.0.1", port=0, token=None, kube_version="v1.35.0", nodes=None, node_count=3,
                 node_labels=None, gpus_per_node=0, validate_builtins=True, default_field_validation="Warn",
                 tick_seconds=0.05, default_ready_after=0.0, bookmark_seconds=5.0, state_file=None, create_pods=True,
                 verbose=False, audit_size=200000, require_token=False, schedule=False):
        self.host = host
        self.port = port
        self.token = token or secrets.token_hex(24)
        self.kube_version = kube_version
        self.nodes = nodes
        self.node_count = node_count
        self.node_labels = dict(node_labels or {})
        self.gpus_per_node = gpus_per_node
        self.validate_builtins = validate_builtins
        self.default_field_validation = default_field_validation
        self.tick_seconds = tick_seconds
        self.default_ready_after = default_ready_after
        self.bookmark_seconds = bookmark_seconds
        self.state_file = state_file
        self.create_pods = create_pods
        self.verbose = verbose
        self.audit_size = audit_size
        self.require_token = require_token
        self.schedule = schedule


class _HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, handler, emulator):
        self.emulator = emulator
        super().__init__(address, handler)


class Emulator:
    """One emulated cluster: store, controllers, HTTP server."""

    def __init__(self, options=None, **kwargs):
        self.options = options or Options(**kwargs)
        self.registry = Registry()
        self.store = Store(self.registry, self.options.validate_builtins, self.options.default_field_validation)
        self.controllers = Controllers(self)
        self.faults = []
        self.delays = []
        self.readiness_rules = []
        self.control_lock = threading.Lock()
        # encoded discovery and OpenAPI documents, per registry generation (they change only with the served types)
        self.document_cache = {}
        self.document_cache_lock = threading.Lock()
        self.save_lock = threading.Lock()
        self.audit = collections.deque(maxlen=self.options.audit_size)
        self.audit_seq = 0
        self.httpd = None
        self.thread = None
        self.port = self.options.port
        self.stopping = threading.Event()
        self.connections = set()
        self.conn_lock = threading.Lock()
        self.started_at = time.time()
        self.restarts = 0
        if self.options.state_file and os.path.exists(self.options.state_file):
            with open(self.options.state_file, "r", encoding="utf-8") as handle:
                self.store.restore(json.load(handle))
        else:
            self.bootstrap()

    # ---- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self):
        return "http://%s:%d" % (self.options.host, self.port)

    def bootstrap(self):
        self.controllers.bootstrap(self.options.nodes or default_nodes(self.options.node_count, self.options.node_labels,
                                                                       self.options.gpus_per_node))

    def start(self):
        self.httpd = _HTTPServer((self.options.host, self.port), Handler, self)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                       name="kube-emulator-http", daemon=True)
        self.thread.start()
        self.controllers.start()
        return self

    def stop(self):
        self.stopping.set()
        self.controllers.stop()
        with self.store.lock:
            self.store.epoch += 1
            self.store.cond.notify_all()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self._drop_connections()
            self.httpd = None
        self.save_state()

    def save_state(self):
        if self.options.state_file:
            snapshot = self.store.snapshot()
            with self.save_lock:
                tmp = self.options.state_file + ".tmp"
                with open(tmp, "w", encoding="utf-8") as handle:
                    json.dump(snapshot, handle)
                os.replace(tmp, self.options.state_file)

    def _drop_connections(self):
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restart(self, keep_state=True, down_seconds=0.0, grace=0.0):
        """Close the listener and every connection, optionally lose state, listen again on the same port."""
        if grace:
            time.sleep(grace)  # let the control call's own answer reach its client
        with self.store.lock:
            self.store.epoch += 1
            self.store.cond.notify_all()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        self._drop_connections()
        if not keep_state:
            self.store.clear()
            self.bootstrap()
        else:
            with self.store.lock:
                self.store.events.clear()
                self.store.compacted_rv = self.store.rv
        if down_seconds:
            time.sleep(down_seconds)
        for _attempt in range(50):
            try:
                self.httpd = _HTTPServer((self.options.host, self.port), Handler, self)
                break
            except OSError:
                time.sleep(0.1)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                       name="kube-emulator-http", daemon=True)
        self.thread.start()
        self.restarts += 1

    def reset(self):
        with self.control_lock:
            self.faults = []
            self.delays = []
            self.readiness_rules = []
            self.audit.clear()
        self.store.clear()
        self.bootstrap()

    # ---- kubeconfig --------------------------------------------------------------------------

    def kubeconfig(self, context="aicr-emulator"):
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context + "-admin", "user": {"token": self.options.token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context + "-admin",
                                                       "namespace": "default"}}],
            "current-context": context,
        }

    def write_kubeconfig(self, path, context="aicr-emulator"):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(self.kubeconfig(context), handle, default_flow_style=False)
        return path

    # ---- audit, faults -------------------------------------------------------------------------

    def record(self, entry):
        with self.control_lock:
            self.audit_seq += 1
            entry["seq"] = self.audit_seq
            self.audit.append(entry)

    def take_fault(self, verb, path, user_agent):
        with self.control_lock:
            for rule in self.faults:
                if _rule_matches(rule, verb, path, user_agent):
                    if rule.get("count") is not None:
                        rule["count"] -= 1
                        if rule["count"] <= 0:
                            self.faults.remove(rule)
                    return dict(rule)
        return None

    def take_delay(self, verb, path, user_agent):
        with self.control_lock:
            for rule in self.delays:
                if _rule_matches(rule, verb, path, user_agent):
                    if rule.get("count") is not None:
                        rule["count"] -= 1
                        if rule["count"] <= 0:
                            self.delays.remove(rule)
                    return float(rule.get("seconds", 0))
        return 0.0


def _rule_matches(rule, verb, path, user_agent):
    verbs = rule.get("verbs")
    if verbs and verb not in verbs and not ("mutating" in verbs and verb in MUTATING):
        return False
    if rule.get("path") and not re.search(rule["path"], path):
        return False
    if rule.get("userAgent") and not re.search(rule["userAgent"], user_agent or ""):
        return False
    return True


class Handler(http.server.BaseHTTPRequestHandler):
    """One HTTP connection (keep-alive)."""

    protocol_version = "HTTP/1.1"
    server_version = "aicr-kube-emulator"
    sys_version = ""

    # pylint: disable=invalid-name,attribute-defined-outside-init,too-many-public-methods

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.emulator.conn_lock:
            self.server.emulator.connections.add(self.connection)

    def finish(self):
        with self.server.emulator.conn_lock:
            self.server.emulator.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        if self.server.emulator.options.verbose:
            sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def do_HEAD(self):
        self._handle("HEAD")

    # ---- plumbing -----------------------------------------------------------------------------

    @property
    def emu(self):
        return self.server.emulator

    def _send(self, code, payload, content_type=JSON_CT, headers=None):
        body = payload if isinstance(payload, bytes) else _dumps(payload)
        self._code = code
        # Audited before the client can read the answer: a test that takes an audit mark right after a
        # response must not find that request after its mark.
        self._record_audit()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        for warning in getattr(self, "_warnings", []):
            self.send_header("Warning", '299 - "%s"' % warning.replace("\\", "\\\\").replace('"', '\\"'))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _read_body(self):
        """The request body (read once, up front, so an early error answer never leaves it in the connection)."""
        if self._raw_body is None:
            self._raw_body = self._read_raw_body()
        return self._raw_body

    def _read_raw_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _decode_body(self, raw):
        ctype = (self.headers.get("Content-Type") or JSON_CT).split(";")[0].strip().lower()
        if not raw:
            return None
        try:
            if ctype == "application/vnd.kubernetes.protobuf":
                return protobuf.decode(raw)
            if ctype in ("application/apply-patch+yaml", "application/yaml", "application/x-yaml"):
                return yaml.load(raw, Loader=_YAML_LOADER)  # nosec - safe loader
            if ctype.endswith("json") or ctype in ("text/plain", "*/*", ""):
                return json.loads(raw)
            if ctype == "application/apply-patch+cbor" or ctype == "application/cbor":
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                               "media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")
        except protobuf.ProtobufError as exc:
            raise ApiError(415, "UnsupportedMediaType", str(exc))
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request("the server could not decode the body: %s" % str(exc).splitlines()[0])
        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media "
                       "types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")

    def _authorized(self):
        """A wrong token is always refused. No token at all is accepted unless ``require_token``: Go clients
        (kubectl, helm) never send credentials over plain HTTP (clientcmd reads auth info only for TLS)."""
        header = self.headers.get("Authorization") or ""
        if not header:
            self._auth = "anonymous"
            return not self.emu.options.require_token
        self._auth = "token"
        if not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self.emu.options.token.encode())

    # pylint: disable=too-many-branches,too-many-statements
    def _handle(self, method):
        started = time.time()
        self._code = 0
        self._verb = method.lower()
        self._warnings = []
        self._resource = None
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self._query_multi = parse_qs(url.query, keep_blank_values=True)
        user_agent = self.headers.get("User-Agent", "")
        control = path.startswith("/__emulator")
        self._audit_request = None if control else {
            "time": started, "method": method, "path": path, "query": url.query, "userAgent": user_agent,
            "contentType": (self.headers.get("Content-Type") or "").split(";")[0]}
        self._auth = "anonymous"
        self._raw_body = None
        try:
            self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._raw_body = b""
        try:
            if not self._authorized() and (control or path not in PUBLIC_PATHS):
                self._verb = _verb_for(method, path, query)
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if control:
                self._control(method, path, query)
                return
            self._verb = _verb_for(method, path, query)
            delay = self.emu.take_delay(self._verb, path, user_agent)
            if delay:
                time.sleep(delay)
            fault = self.emu.take_fault(self._verb, path, user_agent)
            if fault:
                code = int(fault.get("code", 500))
                reason = {429: "TooManyRequests", 503: "ServiceUnavailable", 500: "InternalError", 504: "Timeout",
                          409: "Conflict", 403: "Forbidden", 404: "NotFound"}.get(code, "InternalError")
                headers = {}
                if fault.get("retryAfter") is not None or code == 429:
                    headers["Retry-After"] = str(int(fault.get("retryAfter", 1)))
                details = {"retryAfterSeconds": int(headers["Retry-After"])} if "Retry-After" in headers else None
                raise ApiError(code, reason, fault.get("message") or "emulated fault (%d)" % code, details, headers)
            self._route(method, path, query)
        except ApiError as exc:
            self._send(exc.code, exc.status(), headers=exc.headers)
        except (BrokenPipeError, ConnectionResetError):
            self._code = self._code or 499
            self.close_connection = True
        except Exception as exc:  # pylint: disable=broad-except
            traceback.print_exc(file=sys.stderr)
            try:
                self._send(500, ApiError(500, "InternalError", "Internal error occurred: %s" % exc).status())
            except OSError:
                self.close_connection = True
        finally:
            self._record_audit()  # requests answered without _send (watches) or not answered at all

    def _record_audit(self):
        """Add this request to the audit log, once (control API requests are not audited)."""
        request, self._audit_request = getattr(self, "_audit_request", None), None
        if request is None:
            return
        entry = dict(request, verb=self._verb, code=self._code, mutating=self._verb in MUTATING, auth=self._auth,
                     durationMs=round((time.time() - request["time"]) * 1000, 3))
        if self._resource:
            entry.update(self._resource)
        self.emu.record(entry)

    # ---- routing ------------------------------------------------------------------------------

    def _route(self, method, path, query):
        segs = [s for s in path.split("/") if s]
        if path == "/version":
            return self._send(200, self._version())
        if path in ("/healthz", "/livez", "/readyz"):
            return self._send(200, b"ok", "text/plain; charset=utf-8")
        if segs and segs[0] == "openapi":
            return self._openapi(segs)
        if segs in (["api"], ["apis"]):
            aggregated_version = negotiate_aggregated_discovery(self.headers.get("Accept") or "")
            if aggregated_version is not None:
                return self._send_aggregated_discovery(core=segs == ["api"], discovery_version=aggregated_version)
        if segs == ["api"]:
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "%s:%d" % (self.emu.options.host, self.emu.port)}]},
                headers={"Vary": "Accept"})
        if segs == ["apis"]:
            return self._send(200, self._group_list(), headers={"Vary": "Accept"})
        if len(segs) == 2 and segs[0] == "apis":
            group = [g for g in self._group_list()["groups"] if g["name"] == segs[1]]
            if not group:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, dict(group[0], kind="APIGroup", apiVersion="v1"))
        if segs[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segs[2:]
        elif len(segs) >= 3 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            listing = self._cached_document(("resources", group, version), lambda: self._resource_list_or_none(group, version))
            if listing is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, listing)
        if rest[0] == "watch":
            query = dict(query, watch="true")
            rest = rest[1:]
        namespace, name, sub = "", None, ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace = rest[1]
            rest = rest[2:]
        plural = rest[0]
        if len(rest) >= 2:
            name = rest[1]
        if len(rest) >= 3:
            sub = "/".join(rest[2:])
        rtype = self.emu.registry.lookup(group, version, plural)
        if rtype is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if plural == "namespaces" and group == "" and name and not namespace:
            namespace = ""
        if not rtype.namespaced and namespace:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self._resource = {"group": group, "version": version, "resource": plural, "namespace": namespace,
                          "name": name or "", "subresource": sub}
        return self._resource_request(method, rtype, version, namespace, name, sub, query)

    def _context(self, query, verb):
        dry = self._query_multi.get("dryRun") or []
        for value in dry:
            if value not in ("All", ""):
                raise bad_request('Invalid dry run value "%s"' % value)
        manager = query.get("fieldManager", "")
        if len(manager) > 128:
            raise ApiError(422, "Invalid", "fieldManager: Too long: may not be more than 128 bytes")
        if verb != "apply" and not manager:
            manager = manager_from_user_agent(self.headers.get("User-Agent"))
        validation = query.get("fieldValidation", "")
        if validation and validation not in ("Ignore", "Warn", "Strict"):
            raise bad_request('fieldValidation parameter "%s" is not supported' % validation)
        ctx = Context(manager, "All" in dry, validation, self.headers.get("User-Agent", ""),
                      query.get("force", "false") == "true")
        self._warnings = ctx.warnings
        return ctx

    # pylint: disable=too-many-arguments,too-many-return-statements
    def _resource_request(self, method, rtype, version, namespace, name, sub, query):
        store = self.emu.store
        if rtype.verbs == ["create"]:
            if method != "POST" or name:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            body = self._decode_body(self._read_body()) or {}
            return self._send(201, self.emu.controllers.review(rtype, body, version))
        if sub and sub not in ("status", "scale", "finalize", "log", "eviction", "approval", "ephemeralcontainers", "resize"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub == "status" and not rtype.status:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method in ("GET", "HEAD"):
            if name is None:
                if query.get("watch") in ("true", "1"):
                    return self._watch(rtype, version, namespace, query)
                return self._list(rtype, version, namespace, query)
            if sub == "log":
                store.get(rtype, namespace, name)
                return self._send(200, b"", "text/plain")
            obj = store.get(rtype, namespace, name)
            if sub == "scale":
                return self._send(200, self._scale_of(rtype, obj))
            if not sub and self._wants_table():
                return self._send(200, tables.table(rtype, version, [store.serve(rtype, obj, version)],
                                                    {"resourceVersion": obj["metadata"].get("resourceVersion")},
                                                    query.get("includeObject", "Metadata")))
            return self._send(200, store.serve(rtype, obj, version))
        if method == "POST":
            body = self._decode_body(self._read_body())
            if sub == "eviction":
                store.delete(rtype, namespace, name, self._context(query, "delete"), {})
                return self._send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
            if name is not None:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            if body is None:
                raise bad_request("the body of the request was empty")
            ctx = self._context(query, "create")
            obj = store.create(rtype, namespace, body, ctx, version)
            self._settle_crd_write(rtype, ctx)
            return self._send(201, store.serve(rtype, obj, version))
        if method == "PUT":
            if name is None:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            body = self._decode_body(self._read_body())
            if body is None:
                raise bad_request("the body of the request was empty")
            ctx = self._context(query, "update")
            if sub == "scale":
                return self._update_scale(rtype, namespace, name, body, ctx, version)
            if sub == "finalize":
                old = store.get(rtype, namespace, name)
                new = dict(old, spec=dict(old.get("spec") or {}, finalizers=(body.get("spec") or {}).get("finalizers") or []))
                return self._send(200, store.update(rtype, namespace, name, new, ctx, "", version))
            obj = store.update(rtype, namespace, name, body, ctx, sub, version)
            self._settle_crd_write(rtype, ctx)
            return self._send(200, store.serve(rtype, obj, version))
        if method == "PATCH":
            if name is None:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            patch_type = {"application/merge-patch+json": "merge", "application/json-patch+json": "json",
                          "application/strategic-merge-patch+json": "strategic",
                          "application/apply-patch+yaml": "apply"}.get(ctype)
            if patch_type is None:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                               "media types include: application/json-patch+json, application/merge-patch+json, "
                               "application/apply-patch+yaml, application/strategic-merge-patch+json")
            body = self._decode_body(self._read_body())
            if body is None:
                raise bad_request("the body of the request was empty")
            ctx = self._context(query, "apply" if patch_type == "apply" else "patch")
            if patch_type != "apply" and query.get("force"):
                raise bad_request("force flag is only supported for apply patches")
            if sub == "scale":
                scale = self._scale_of(rtype, store.get(rtype, namespace, name))
                from . import patch as patchlib  # pylint: disable=import-outside-toplevel
                if patch_type == "json":
                    new_scale = patchlib.json_patch(scale, body)
                else:
                    new_scale = patchlib.merge_patch(scale, body)
                return self._update_scale(rtype, namespace, name, new_scale, ctx, version)
            exists = store.raw_get(rtype.group, rtype.plural, namespace if rtype.namespaced else "", name) is not None
            obj = store.patch(rtype, namespace, name, patch_type, body, ctx, sub, version)
            self._settle_crd_write(rtype, ctx)
            return self._send(200 if exists or patch_type != "apply" else 201, store.serve(rtype, obj, version))
        if method == "DELETE":
            body = self._decode_body(self._read_body()) or {}
            options = {k: v for k, v in body.items() if k not in ("kind", "apiVersion")} if isinstance(body, dict) else {}
            for key in ("propagationPolicy", "gracePeriodSeconds"):
                if key in query:
                    options[key] = query[key]
            if "orphanDependents" in query:
                options["orphanDependents"] = query["orphanDependents"] == "true"
            ctx = self._context(query, "delete")
            if "All" in (options.get("dryRun") or []):
                ctx.dry_run = True
            if name is None:
                return self._delete_collection(rtype, version, namespace, query, ctx, options)
            obj, gone = store.delete(rtype, namespace, name, ctx, options)
            if gone and rtype.plural != "pods":
                return self._send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                        "details": {"name": name, "group": rtype.group, "kind": rtype.plural,
                                                    "uid": obj["metadata"].get("uid")}})
            return self._send(200, store.serve(rtype, obj, version))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _selectors(self, rtype, query):
        try:
            labels = parse_label_selector(query.get("labelSelector", ""))
            fields = parse_field_selector(query.get("fieldSelector", ""), rtype.group, rtype.plural, rtype.crd is not None)
        except SelectorError as exc:
            raise bad_request(str(exc))
        return labels, fields

    def _list(self, rtype, version, namespace, query):
        labels, fields = self._selectors(rtype, query)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise bad_request("limit must be an integer")
        items, rv, token, remaining = self.emu.store.list(rtype, namespace, labels, fields, limit, query.get("continue"))
        meta = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        if self._wants_table():
            return self._send(200, tables.table(rtype, version, [self.emu.store.serve(rtype, o, version) for o in items], meta,
                                                query.get("includeObject", "Metadata")))
        body = {"kind": rtype.list_kind, "apiVersion": rtype.api_version(version), "metadata": meta,
                "items": [self.emu.store.serve(rtype, o, version) for o in items]}
        return self._send(200, body)

    def _wants_table(self):
        accept = self.headers.get("Accept") or ""
        first = accept.split(",")[0]
        return "as=Table" in first

    def _delete_collection(self, rtype, version, namespace, query, ctx, options):
        labels, fields = self._selectors(rtype, query)
        items, rv, _tok, _rem = self.emu.store.list(rtype, namespace, labels, fields)
        deleted = []
        for obj in items:
            try:
                out, _gone = self.emu.store.delete(rtype, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], ctx,
                                                   options)
                deleted.append(self.emu.store.serve(rtype, out, version))
            except ApiError:
                continue
        return self._send(200, {"kind": rtype.list_kind, "apiVersion": rtype.api_version(version),
                                "metadata": {"resourceVersion": rv}, "items": deleted})

    # ---- scale --------------------------------------------------------------------------------

    def _scale_of(self, rtype, obj):
        if not rtype.scale:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        spec = obj.get("spec") or {}
        selector = (spec.get("selector") or {}).get("matchLabels") or {}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace"),
                             "uid": obj["metadata"].get("uid"), "resourceVersion": obj["metadata"].get("resourceVersion"),
                             "creationTimestamp": obj["metadata"].get("creationTimestamp")},
                "spec": {"replicas": spec.get("replicas", 0)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                           "selector": ",".join("%s=%s" % kv for kv in sorted(selector.items()))}}

    def _settle_crd_write(self, rtype, ctx):
        """Answer a CRD write only once the controllers have run on it (the CRD is then Established).

        A real API server's establishing controller marks a new CRD Established within milliseconds, and
        clients look right after their write (helm once, then only every 2 s). Here the controllers share
        the machine with the client; waiting for their tick keeps a loaded machine from turning that into
        a 2 s stall that no real cluster would cause.
        """
        if rtype.group == "apiextensions.k8s.io" and rtype.plural == "customresourcedefinitions" and not ctx.dry_run:
            self.emu.controllers.await_reconcile()

    def _update_scale(self, rtype, namespace, name, scale, ctx, version):
        store = self.emu.store
        with store.lock:
            old = store.get(rtype, namespace, name)
            want_rv = (scale.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                from .store import conflict  # pylint: disable=import-outside-toplevel
                raise conflict(rtype, name)
            replicas = (scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise ApiError(422, "Invalid", 'Scale.autoscaling "%s" is invalid: spec.replicas: Invalid value: %r: must be '
                               "greater than or equal to 0" % (name, replicas))
            new = json.loads(json.dumps(old))
            new.setdefault("spec", {})["replicas"] = replicas
            new["metadata"].pop("resourceVersion", None)
            obj = store.update(rtype, namespace, name, new, ctx, "", version)
        return self._send(200, self._scale_of(rtype, obj))

    # ---- watch --------------------------------------------------------------------------------

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    # pylint: disable=too-many-locals
    def _watch(self, rtype, version, namespace, query):
        thread = threading.current_thread()
        name = thread.name
        thread.name = "kube-emulator-watch"
        try:
            return self._watch_stream(rtype, version, namespace, query)
        finally:
            thread.name = name

    def _watch_stream(self, rtype, version, namespace, query):
        store = self.emu.store
        labels, fields = self._selectors(rtype, query)
        rv_param = query.get("resourceVersion", "")
        send_initial = query.get("sendInitialEvents") == "true"
        bookmarks = query.get("allowWatchBookmarks") == "true"
        try:
            timeout = float(query.get("timeoutSeconds") or 0)
        except ValueError:
            raise bad_request("timeoutSeconds must be a number")
        deadline = time.time() + timeout if timeout > 0 else None
        api_version = rtype.api_version(version)

        def matches(obj):
            if obj is None:
                return False
            meta = obj.get("metadata") or {}
            if rtype.namespaced and namespace and meta.get("namespace") != namespace:
                return False
            return label_match(labels, meta.get("labels")) and (not fields or field_match(fields, obj))

        initial = []
        with store.lock:
            epoch = store.epoch
            if send_initial or rv_param in ("", "0"):
                items, _rv, _t, _r = store.list(rtype, namespace, labels, fields)
                initial = items
                pos = store.rv
            else:
                try:
                    pos = int(rv_param)
                except ValueError:
                    raise bad_request('resourceVersion "%s" is not a valid resource version' % rv_param)
                if store.events_after(pos) is None or pos > store.rv + 1000000:
                    expired = True
                else:
                    expired = False
        self.send_response(200)
        self.send_header("Content-Type", JSON_CT)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self._code = 200
        self.close_connection = True
        if not send_initial and rv_param not in ("", "0") and expired:
            self._chunk(_dumps({"type": "ERROR", "object": ApiError(
                410, "Expired", "too old resource version: %s (%d)" % (rv_param, store.compacted_rv + 1)).status()}) + b"\n")
            self._chunk(b"")
            return None
        for obj in initial:
            self._chunk(_dumps({"type": "ADDED", "object": store.serve(rtype, obj, version)}) + b"\n")
        if send_initial and bookmarks:
            self._chunk(_dumps({"type": "BOOKMARK", "object": {
                "kind": rtype.kind, "apiVersion": api_version,
                "metadata": {"resourceVersion": str(pos), "annotations": {"k8s.io/initial-events-end": "true"}}}}) + b"\n")
        last_bookmark = time.time()
        period = self.emu.options.bookmark_seconds
        while not self.emu.stopping.is_set():
            with store.lock:
                if store.epoch != epoch:
                    break
                events = store.events_after(pos)
                if events == []:
                    wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.time()))
                    store.cond.wait(wait)
                    if store.epoch != epoch:
                        break
                    events = store.events_after(pos)
                head = store.rv
            if events is None:
                self._chunk(_dumps({"type": "ERROR", "object": ApiError(410, "Expired", "too old resource version").status()})
                            + b"\n")
                break
            out = []
            for ev_rv, etype, group, plural, obj, old in events:
                pos = max(pos, ev_rv)
                if group != rtype.group or plural != rtype.plural:
                    continue
                now_match = matches(obj) if etype != "DELETED" else False
                was_match = matches(old) if old is not None else False
                if etype == "ADDED" and now_match:
                    out.append(("ADDED", obj))
                elif etype == "MODIFIED":
                    if now_match and was_match:
                        out.append(("MODIFIED", obj))
                    elif now_match:
                        out.append(("ADDED", obj))
                    elif was_match:
                        out.append(("DELETED", obj))
                elif etype == "DELETED" and (matches(obj) or was_match):
                    out.append(("DELETED", obj))
            pos = max(pos, head) if not events else pos
            for etype, obj in out:
                self._chunk(_dumps({"type": etype, "object": store.serve(rtype, obj, version)}) + b"\n")
            if bookmarks and time.time() - last_bookmark >= period:
                self._chunk(_dumps({"type": "BOOKMARK", "object": {"kind": rtype.kind, "apiVersion": api_version,
                                                                   "metadata": {"resourceVersion": str(pos)}}}) + b"\n")
                last_bookmark = time.time()
            if deadline is not None and time.time() >= deadline:
                break
            if not out and self._client_gone():
                break
        try:
            self._chunk(b"")
        except OSError:
            pass
        return None

    def _client_gone(self):
        """True when the watching client closed its connection (readable with EOF)."""
        try:
            readable, _w, _x = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    # ---- discovery and OpenAPI -----------------------------------------------------------------

    def _version(self):
        ver = self.emu.options.kube_version
        match = re.match(r"^v?(\d+)\.(\d+)", ver)
        return {"major": match.group(1) if match else "1", "minor": match.group(2) if match else "35", "gitVersion": ver,
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc", "platform": "linux/amd64",
                "emulationMajor": match.group(1) if match else "1", "emulationMinor": match.group(2) if match else "35",
                "minCompatibilityMajor": "1", "minCompatibilityMinor": "34"}

    def _group_list(self):
        groups = []
        for group, versions in self.emu.registry.groups():
            gvs = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
            groups.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _resource_list_or_none(self, group, version):
        try:
            return self._resource_list(group, version)
        except ApiError:
            return None

    def _resource_list(self, group, version):
        types = self.emu.registry.types_in(group, version)
        if not types:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        resources = []
        for rtype in types:
            entry = {"name": rtype.plural, "singularName": rtype.singular, "namespaced": rtype.namespaced, "kind": rtype.kind,
                     "verbs": rtype.verbs}
            if rtype.short_names:
                entry["shortNames"] = rtype.short_names
            if rtype.categories:
                entry["categories"] = rtype.categories
            resources.append(entry)
            for sub in subresources_of(rtype, version):
                sub_entry = {"name": rtype.plural + "/" + sub["name"], "singularName": "", "namespaced": rtype.namespaced}
                if (sub["group"], sub["version"]) != (group, version):
                    sub_entry.update(group=sub["group"], version=sub["version"])  # legacy form names only a foreign GV
                sub_entry.update(kind=sub["kind"], verbs=sub["verbs"])
                resources.append(sub_entry)
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "%s/%s" % (group, version) if group else version,
                "resources": resources}

    def _aggregated_discovery(self, core, discovery_version):
        """The ``APIGroupDiscoveryList`` served at /api (core group only) or /apis (all named groups).

        Built from the same registry as the legacy per-group-version documents, so a CRD appears here
        exactly when it appears there (once Established) and disappears when deleted.
        """
        registry = self.emu.registry
        groups = [("", ["v1"])] if core else registry.groups()
        items = []
        for group, versions in groups:
            version_entries = []
            for version in versions:
                resources = [aggregated_resource(rtype, version) for rtype in registry.types_in(group, version)]
                if resources:
                    version_entries.append({"version": version, "resources": resources, "freshness": "Current"})
            if version_entries:
                items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": version_entries})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/" + discovery_version,
                "metadata": {}, "items": items}

    def _cached_document(self, key, build):
        """``build()`` encoded as JSON (None when it returns None), built once per registry generation.

        Every helm and kubectl start fetches discovery and OpenAPI documents; building them for each request
        was a good part of the emulator's CPU while clients install charts side by side."""
        key = (self.emu.registry.generation,) + tuple(key)
        with self.emu.document_cache_lock:
            if key in self.emu.document_cache:
                return self.emu.document_cache[key]
        document = build()
        body = None if document is None else _dumps(document)
        with self.emu.document_cache_lock:
            if len(self.emu.document_cache) > 500:
                self.emu.document_cache.clear()
            self.emu.document_cache[key] = body
        return body

    def _send_aggregated_discovery(self, core, discovery_version):
        body = self._cached_document(("aggregated", core, discovery_version), lambda: self._aggregated_discovery(core, discovery_version))
        # an ETag lets clients that remember the document revalidate it cheaply, as the real server allows
        etag = '"%s"' % hashlib.sha256(body).hexdigest()[:32]
        headers = {"Vary": "Accept", "ETag": etag}
        if etag in [tag.strip() for tag in (self.headers.get("If-None-Match") or "").split(",")]:
            return self._send(304, b"", aggregated_discovery_content_type(discovery_version), headers)
        return self._send(200, body, aggregated_discovery_content_type(discovery_version), headers)

    def _openapi(self, segs):
        from . import openapi  # pylint: disable=import-outside-toplevel
        accept = self.headers.get("Accept") or ""
        if segs == ["openapi", "v2"]:
            if "protobuf" in accept:
                return self._send(200, openapi.v2_protobuf(self.emu.options.kube_version),
                                  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            return self._send(200, openapi.v2_json(self.emu.options.kube_version))
        if segs == ["openapi", "v3"]:
            return self._send(200, self._cached_document(("openapi-v3",), lambda: openapi.v3_index(self.emu.registry)))
        if len(segs) >= 4 and segs[:2] == ["openapi", "v3"]:
            rest = segs[2:]
            if rest[:2] == ["api", "v1"]:
                group, version = "", "v1"
            elif rest[0] == "apis" and len(rest) == 3:
                group, version = rest[1], rest[2]
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            doc = self._cached_document(("openapi-v3", group, version),
                                        lambda: openapi.v3_document(self.emu.registry, group, version, self.emu.options.kube_version))
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, doc)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # ---- control API ----------------------------------------------------------------------------

    def _control(self, method, path, query):
        emu = self.emu
        segs = [s for s in path.split("/") if s][1:]
        what = segs[0] if segs else ""
        body = self._decode_body(self._read_body()) if method in ("POST", "PUT", "PATCH") else None
        body = body or {}
        if what == "health" and method == "GET":
            return self._send(200, {"ok": True, "resourceVersion": emu.store.rv, "uptime": time.time() - emu.started_at,
                                    "restarts": emu.restarts})
        if what in ("faults", "delays", "readiness"):
            table = {"faults": "faults", "delays": "delays", "readiness": "readiness_rules"}[what]
            with emu.control_lock:
                rules = getattr(emu, table)
                if method == "GET":
                    return self._send(200, {"items": list(rules)})
                if method == "DELETE":
                    setattr(emu, table, [])
                    if what == "readiness":
                        emu.controllers.wake()  # rules change readiness without a store write
                    return self._send(200, {"items": []})
                if method == "POST":
                    items = body if isinstance(body, list) else [body]
                    for rule in items:
                        _check_rule(what, rule)
                        rules.append(dict(rule))
                    if what == "readiness":
                        emu.controllers.wake()
                    return self._send(201, {"items": list(rules)})
        if what == "audit":
            if method == "DELETE":
                with emu.control_lock:
                    emu.audit.clear()
                return self._send(200, {"items": []})
            return self._send(200, self._audit_query(query))
        if what == "restart" and method == "POST":
            keep = body.get("keepState", True)
            down = float(body.get("downSeconds", 0))
            self._send(202, {"restarting": True, "keepState": keep, "restarts": emu.restarts})
            self.close_connection = True
            threading.Thread(target=emu.restart, args=(keep, down, 0.1), daemon=True).start()
            return None
        if what == "reset" and method == "POST":
            emu.reset()
            return self._send(200, {"reset": True})
        if what == "save" and method == "POST":
            emu.save_state()
            return self._send(200, {"saved": emu.options.state_file})
        if what == "state" and method == "GET":
            return self._send(200, emu.store.snapshot())
        raise ApiError(404, "NotFound", "unknown control endpoint %s %s" % (method, path))

    def _audit_query(self, query):
        with self.emu.control_lock:
            items = list(self.emu.audit)
            last = self.emu.audit_seq
        since = int(query.get("since") or 0)
        out = []
        for entry in items:
            if entry["seq"] <= since:
                continue
            if query.get("verb") and entry["verb"] not in query["verb"].split(","):
                continue
            if query.get("mutating") == "true" and not entry["mutating"]:
                continue
            if query.get("mutating") == "false" and entry["mutating"]:
                continue
            if query.get("path") and not re.search(query["path"], entry["path"]):
                continue
            if query.get("userAgent") and not re.search(query["userAgent"], entry["userAgent"]):
                continue
            if query.get("resource") and entry.get("resource") != query["resource"]:
                continue
            if query.get("namespace") and entry.get("namespace") != query["namespace"]:
                continue
            if query.get("code") and str(entry["code"]) != query["code"]:
                continue
            out.append(entry)
        return {"items": out, "lastSeq": last}


def _check_rule(what, rule):
    if not isinstance(rule, dict):
        raise bad_request("%s rule must be an object" % what)
    if what == "faults":
        code = rule.get("code", 500)
        if not isinstance(code, int) or not 400 <= code <= 599:
            raise bad_request("fault code must be an HTTP error status (400-599), got %r" % (code,))
    if rule.get("path"):
        try:
            re.compile(rule["path"])
        except re.error as exc:
            raise bad_request("path is not a valid regular expression: %s" % exc)
    if rule.get("count") is not None and (not isinstance(rule["count"], int) or rule["count"] < 1):
        raise bad_request("count must be a positive integer")
    if what == "delays" and not isinstance(rule.get("seconds", 0), (int, float)):
        raise bad_request("seconds must be a number")


def _verb_for(method, path, query):
    if method in ("GET", "HEAD"):
        segs = [s for s in path.split("/") if s]
        if query.get("watch") in ("true", "1") or "watch" in segs[:4]:
            return "watch"
        if segs[:2] == ["api", "v1"]:
            rest = segs[2:]
        elif segs[:1] == ["apis"]:
            rest = segs[3:]
        else:
            return "get"
        if rest[:1] == ["namespaces"] and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
        return "list" if len(rest) == 1 else "get"
    if method == "DELETE":
        segs = [s for s in path.split("/") if s]
        rest = segs[2:] if segs[:2] == ["api", "v1"] else segs[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]
        return "deletecollection" if len(rest) == 1 else "delete"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


__all__ = ["Emulator", "Options", "not_found", "version_priority_key"]
