"""HTTPS front of the fabric simulator: token endpoint, FTI FM, FTI CM, Redfish and the ``/_sim`` control API.

Faults are rules matched per request (by ``op``: token/read/attach/detach/available/discover, or by
route name, method, machine); each rule has ``times`` (None = until cleared) and ``skip`` (let that
many matching requests through first). Actions:

- ``latency`` (``delay`` seconds, then normal processing — longer than the client timeout makes an
  ambiguous outcome whose change still lands),
- ``hold`` (the request waits until ``/_sim/release`` is posted, at most ``max`` seconds, default 120, then normal
  processing: a test holds a run inside a request and acts meanwhile, on a condition instead of a delay),
- ``error`` (``status`` with ``body`` fti | fti_dra | fti_raw | error_text | plain | html | empty | redfish, nothing
  applied; see ``Handler._error`` for the CoHDI client each JSON shape comes from),
- ``commit_then_fail`` (change applied, then the error returned),
- ``late_commit`` (a gateway in front of the manager gives up: ``status``, default 504, with ``body``, default html, is
  answered at once, and the manager applies the change ``delay`` seconds later, default 0.5 - or, with ``release`` true,
  once ``/_sim/release`` is posted (at most ``max`` seconds, default 120): a test lets the run end first, on a condition
  instead of a delay; the request's log entry has ``late_commit`` ``pending``, then ``applied`` or ``refused: <reason>``),
- ``reset`` (connection dropped without a response; ``commit`` true applies the change first),
- ``unauthorized`` (401), ``expire_token`` (every issued token expires now, so this request gets 401),
  ``malformed_jwt`` (token endpoint hands out a non-JWT),
- ``empty_machines`` (machine read returns no machine), ``omit_device`` (machine read leaves out
  ``res_uuid`` or the newest device), ``pool_exhausted`` (attach: 409, free pool: empty), ``pool_size`` (the free
  pool answer counts at most ``value`` devices),
- ``partial_attach`` (the device is bound but broken: FM op status 2 + HTTP 500, CM ADD_FAILED,
  Redfish block Failed + 500), ``op_status`` (the attached device gets ``value`` as res_op_status),
- Redfish with the option ``rf_tasks`` (a number of polls): actions answer 202 with a task monitor (``Location``,
  ``Retry-After: 0``) that answers 202 that many times, then the action's own answer (the change applied then; 404 after
  it was delivered); ``task_exception`` makes the monitor end with a Task in ``TaskState`` Exception (200) and
  ``task_error`` with the action's error (``status``, default 400), nothing applied.
"""

import base64
import hashlib
import hmac
import json
import re
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from aicr_lab.fabric.state import Fabric

FM = "/fabric_manager/api/v1"
CM = "/cluster_manager/cluster_autoscaler/v3"
RF = "/redfish/v1"

ROUTES = [
    ("POST", r"^/id_manager/realms/(?P<realm>[^/]+)/protocol/openid-connect/token$", "token", "token"),
    ("GET", r"^" + FM + r"/machines/(?P<machine>[^/]+)$", "fm.machine", "read"),
    ("PATCH", r"^" + FM + r"/machines/(?P<machine>[^/]+)/update$", "fm.attach", "attach"),
    ("DELETE", r"^" + FM + r"/machines/(?P<machine>[^/]+)/update$", "fm.detach", "detach"),
    ("GET", r"^" + FM + r"/machines/(?P<machine>[^/]+)/available-reserved-resources$", "fm.available", "available"),
    ("GET", r"^" + CM + r"/tenants/(?P<tenant>[^/]+)/clusters/(?P<cluster>[^/]+)/machines/(?P<machine>[^/]+)$", "cm.machine", "read"),
    ("POST", r"^" + CM + r"/tenants/(?P<tenant>[^/]+)/clusters/(?P<cluster>[^/]+)/machines/(?P<machine>[^/]+)/actions/resize$", "cm.resize", "resize"),
    ("GET", r"^" + RF + r"/?$", "rf.root", "discover"),
    ("GET", r"^" + RF + r"/CompositionService$", "rf.composition", "discover"),
    ("GET", r"^" + RF + r"/CompositionService/ResourceBlocks$", "rf.blocks", "available"),
    ("GET", r"^" + RF + r"/CompositionService/ResourceBlocks/(?P<block>[^/]+)$", "rf.block", "read"),
    ("GET", r"^" + RF + r"/CompositionService/ResourceBlocks/(?P<block>[^/]+)/(?P<kind>Processors|Memory)/0$", "rf.part", "part"),
    ("GET", r"^" + RF + r"/Systems/(?P<machine>[^/]+)$", "rf.system", "read"),
    # the actions' segment is the one the system advertises (option ``rf_actions``, default ``Actions``); any other is a 404
    ("POST", r"^" + RF + r"/Systems/(?P<machine>[^/]+)/(?P<actions>[A-Za-z]+)/ComputerSystem\.AddResourceBlock$", "rf.attach", "attach"),
    ("POST", r"^" + RF + r"/Systems/(?P<machine>[^/]+)/(?P<actions>[A-Za-z]+)/ComputerSystem\.RemoveResourceBlock$", "rf.detach", "detach"),
    ("GET", r"^" + RF + r"/TaskService/TaskMonitors/(?P<task>[^/]+)$", "rf.task", "task"),
]
COMPILED = [(method, re.compile(pattern), name, op) for method, pattern, name, op in ROUTES]

FABRIC_ID = 1
FABRIC_UUID = "f0b1c2d3-0000-4000-8000-0000000000f1"
HTML_ERROR = "<html><head><title>%d Bad Gateway</title></head><body><center><h1>%d Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
CM_STATUS = {
    "adding": "ADDING",
    "adding_fail": "ADDING",
    "attached": "ADD_COMPLETE",
    "add_failed": "ADD_FAILED",
    "removing": "REMOVING",
    "remove_failed": "REMOVE_FAILED",
}
HEALTH = {"0": "OK", "1": "Warning", "2": "Critical"}


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Dropped(Exception):
    """The fault asks to drop the connection without answering."""


class Simulator:
    """Fabric + faults + request log + token issuer: everything the handler needs."""

    def __init__(self, **options):
        self.fabric = Fabric(**options)
        self.lock = threading.Lock()
        self.faults = []
        self.log = []
        self._seq = 0
        self._fault_id = 0
        self._jti = 0
        self.revoked_before = 0
        self.tokens_issued = 0
        self.key = b"aicr-fabric-simulator-signing-key"
        self.tasks = {}  # Redfish task monitors (option rf_tasks): id -> {polls, outcome, apply, delivered, ...}
        self._task_id = 0
        self.released = threading.Event()  # set by /_sim/release (and reset): requests held by a ``hold`` fault go on

    # --- control ----------------------------------------------------------------

    def reset(self, **options):
        with self.lock:
            self.faults = []
            self.log = []
            self.tokens_issued = 0
            self.revoked_before = self._jti
            self.tasks = {}
            self.released.set()  # nothing stays held across a reset
            self.released = threading.Event()
        self.fabric.reset(**options)

    def new_task(self, apply, polls, outcome, rule):
        with self.lock:
            self._task_id += 1
            task_id = str(self._task_id)
            self.tasks[task_id] = {"polls": polls, "outcome": outcome, "apply": apply, "delivered": False,
                                   "status": int(rule.get("status", 400)) if rule else 400,
                                   "message": (rule or {}).get("message") or "resource block composition failed"}
        return task_id

    def add_fault(self, rule):
        rule = dict(rule)
        if "action" not in rule:
            raise ValueError("fault needs an action")
        with self.lock:
            self._fault_id += 1
            rule["id"] = self._fault_id
            rule.setdefault("times", 1)
            rule.setdefault("skip", 0)
            self.faults.append(rule)
        return rule

    def take_fault(self, method, route, op, machine):
        with self.lock:
            for rule in list(self.faults):
                if rule.get("op") and rule["op"] != op:
                    continue
                if rule.get("route") and rule["route"] != route:
                    continue
                if rule.get("method") and rule["method"].upper() != method:
                    continue
                if rule.get("machine") and machine is not None and rule["machine"] != machine:
                    continue
                if rule.get("skip", 0) > 0:
                    rule["skip"] -= 1
                    continue
                if rule.get("times") is not None:
                    rule["times"] -= 1
                    if rule["times"] <= 0:
                        self.faults.remove(rule)
                return dict(rule)
        return None

    def record(self, entry):
        with self.lock:
            self._seq += 1
            entry["seq"] = self._seq
            self.log.append(entry)
        return entry

    # --- tokens -----------------------------------------------------------------

    def issue_token(self, subject):
        with self.lock:
            self._jti += 1
            self.tokens_issued += 1
            jti = self._jti
        now = int(time.time())
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64(json.dumps({"sub": subject, "iat": now, "exp": now + int(self.fabric.options["token_ttl"]), "jti": jti}).encode())
        signature = _b64(hmac.new(self.key, ("%s.%s" % (header, payload)).encode(), hashlib.sha256).digest())
        return "%s.%s.%s" % (header, payload, signature)

    def check_token(self, token):
        """None when valid, else the reason."""
        parts = token.split(".")
        if len(parts) != 3:
            return "malformed token"
        expected = _b64(hmac.new(self.key, ("%s.%s" % (parts[0], parts[1])).encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, parts[2]):
            return "bad signature"
        try:
            payload = json.loads(_unb64(parts[1]))
        except ValueError:
            return "malformed token"
        if payload.get("exp", 0) <= time.time():
            return "token expired"
        if payload.get("jti", 0) <= self.revoked_before:
            return "token expired"
        return None

    def expire_tokens(self):
        with self.lock:
            self.revoked_before = self._jti


class Handler(BaseHTTPRequestHandler):
    """One request: route, fault, auth, provider logic, response, log entry."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes; no 40 ms delayed-ACK stalls
    server_version = "aicr-fabric-sim/1.0"
    sim = None  # set on the subclass made by make_server

    def setup(self):
        try:
            self.request.do_handshake()
        except (ssl.SSLError, OSError):
            pass
        super().setup()

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        return

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    # --- plumbing -----------------------------------------------------------------

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        ctype = self.headers.get("Content-Type", "")
        if not raw:
            return None
        if "application/x-www-form-urlencoded" in ctype:
            return {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        try:
            return json.loads(raw.decode())
        except ValueError:
            return {"_raw": raw.decode(errors="replace")}

    def _send(self, status, payload=None, ctype="application/json", headers=None):
        if payload is None:
            data = b""
        elif isinstance(payload, (dict, list)):
            data = json.dumps(payload).encode()
        else:
            data = payload.encode() if isinstance(payload, str) else payload
        try:
            self.send_response(status)
            if data:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if data:
                self.wfile.write(data)
            self.wfile.flush()
        except (OSError, ssl.SSLError):
            self.close_connection = True

    def _drop(self):
        self.close_connection = True
        try:
            socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
        except OSError:
            pass

    def _error(self, status, kind="fti", message="simulated failure", code=None):
        """Error bodies: ``fti`` CRO's ErrorBody (internal/cdi/fti/fm/api/common.go: status int, detail code/message/data),
        ``fti_dra`` composable-dra-driver's unsuccessfulResponse (pkg/client/client.go: status a string), ``fti_raw``
        (detail.message raw JSON, CRO ErrorDetail.Message json.RawMessage), ``error_text`` ``{"error": "<text>"}`` of other
        servers, ``redfish``, ``plain``, ``html``, ``empty``."""
        if kind == "empty":
            return self._send(status)
        if kind == "plain":
            return self._send(status, "%d %s" % (status, message), ctype="text/plain")
        if kind == "html":
            return self._send(status, HTML_ERROR % (status, status), ctype="text/html")
        if kind == "redfish":
            # DMTF Redfish specification, error responses: error.code / error.message and @Message.ExtendedInfo (Message registry
            # entries: MessageId, Message, Severity, Resolution)
            return self._send(status, {"error": {"code": code or "Base.1.8.GeneralError", "message": message, "@Message.ExtendedInfo": [
                {"MessageId": code or "Base.1.8.GeneralError", "Message": message, "Severity": "Warning", "Resolution": "None."}]}})
        if kind == "redfish_extended":
            # the generic Base.GeneralError text on top, the cause only in @Message.ExtendedInfo (as many BMCs answer)
            return self._send(status, {"error": {"code": "Base.1.8.GeneralError",
                                                 "message": "A general error has occurred. See ExtendedInfo for more information.",
                                                 "@Message.ExtendedInfo": [{"MessageId": code or "Composition.1.1.ResourceBlockInUse",
                                                                            "Message": message, "Severity": "Critical",
                                                                            "Resolution": "Remove the resource block and resubmit the request."}]}})
        if kind == "error_text":
            return self._send(status, {"error": message})
        if kind == "fti_dra":
            return self._send(status, {"status": str(status), "detail": {"code": code or "E%d00" % status, "message": message}})
        if kind == "fti_raw":
            return self._send(status, {"status": status, "detail": {"code": code or "E%d00" % status, "message": {"reason": message}, "data": {}}})
        return self._send(status, {"status": status, "detail": {"code": code or "E%d00" % status, "message": message, "data": {}}})

    def _handle(self, method):
        sim = self.sim
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = self._body()
        if url.path.startswith("/_sim/"):
            return self._control(method, url.path, body or {})
        for route_method, pattern, name, op in COMPILED:
            match = pattern.match(url.path)
            if match and route_method == method:
                params = match.groupdict()
                break
        else:
            return self._error(404, "plain", "no route for %s %s" % (method, url.path))
        if name == "cm.resize":
            op = "detach" if isinstance(body, dict) and "remove_resources" in body else "attach"
        entry = {"method": method, "path": url.path, "route": name, "op": op, "mutating": op in ("attach", "detach"),
                 "machine": params.get("machine"), "status": None, "fault": None, "t": time.time()}
        if op == "token":
            entry["form_keys"] = sorted((body or {}).keys())  # the keys only: the values are credentials
        else:
            entry["query"] = query
            entry["body"] = body if name.startswith(("fm.", "cm.", "rf.")) else None
        sim.record(entry)
        rule = sim.take_fault(method, name, op, params.get("machine"))
        if rule:
            entry["fault"] = rule["action"]
        options = sim.fabric.options
        delay = float(options["latency"] if entry["mutating"] else (options["read_latency"] if op != "token" else 0))
        if rule and rule["action"] == "latency":
            delay += float(rule.get("delay", 1.0))
        if delay:
            time.sleep(delay)
        if rule and rule["action"] == "hold":
            sim.released.wait(float(rule.get("max", 120)))
        if rule and rule["action"] == "error":
            entry["status"] = int(rule.get("status", 500))
            return self._error(entry["status"], rule.get("body", "fti"), rule.get("message", "simulated failure"))
        if rule and rule["action"] == "expire_token":
            sim.expire_tokens()
        if rule and rule["action"] == "unauthorized":
            entry["status"] = 401
            return self._send(401, {"error": "invalid_token", "error_description": "simulated 401"})
        if rule and rule["action"] == "reset" and not rule.get("commit"):
            entry["status"] = "reset"
            return self._drop()
        if op != "token":
            reason = self._authenticate(name)
            if reason:
                entry["status"] = 401
                return self._send(401, {"error": "invalid_token", "error_description": reason})
        if rule and rule["action"] == "late_commit":
            return self._late_commit(name, params, query, body, rule, entry)
        try:
            answer = getattr(self, "_" + name.replace(".", "_"))(params, query, body, rule)
            status, payload = answer[0], answer[1]
            extra_headers = answer[2] if len(answer) > 2 else None
        except ApiError as exc:
            status, payload = exc.status, None
            entry["status"] = status
            return self._error(status, "redfish" if name.startswith("rf.") else "fti", exc.message, exc.code)
        if rule and rule["action"] == "reset":
            entry["status"] = "reset"
            return self._drop()
        if rule and rule["action"] == "commit_then_fail":
            entry["status"] = int(rule.get("status", 500))
            return self._error(entry["status"], rule.get("body", "fti"), rule.get("message", "simulated failure after commit"))
        entry["status"] = status
        return self._send(status, payload, headers=extra_headers)

    def _late_commit(self, name, params, query, body, rule, entry):
        """The ``late_commit`` fault: the gateway's error now, the change applied by the manager ``delay`` seconds later."""
        handler = getattr(self, "_" + name.replace(".", "_"))
        entry["late_commit"] = "pending"
        released = self.sim.released

        def apply():
            if rule.get("release"):
                released.wait(float(rule.get("max", 120)))
            else:
                time.sleep(float(rule.get("delay", 0.5)))
            try:
                handler(params, query, body, None)
                entry["late_commit"] = "applied"
            except ApiError as exc:
                entry["late_commit"] = "refused: %s" % exc.message

        threading.Thread(target=apply, name="late-commit-%s" % entry["seq"], daemon=True).start()
        entry["status"] = int(rule.get("status", 504))
        return self._error(entry["status"], rule.get("body", "html"), rule.get("message", "gateway timeout"))

    def _authenticate(self, route):
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return self.sim.check_token(header[7:].strip())
        if header.startswith("Basic ") and route.startswith("rf."):
            try:
                user, _sep, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return "bad basic credentials"
            options = self.sim.fabric.options
            if user == options["username"] and password == options["password"]:
                return None
            return "bad basic credentials"
        return "missing credentials"

    # --- token ------------------------------------------------------------------------

    def _token(self, params, query, body, rule):
        options = self.sim.fabric.options
        body = body or {}
        if params["realm"] != options["realm"]:
            raise ApiError(404, "realm %s not found" % params["realm"])
        if body.get("grant_type") != "password" or body.get("client_id") != options["client_id"] or body.get("client_secret") != options["client_secret"]:
            return 401, {"error": "unauthorized_client", "error_description": "invalid client credentials"}
        if body.get("username") != options["username"] or body.get("password") != options["password"]:
            return 401, {"error": "invalid_grant", "error_description": "Invalid user credentials"}
        token = self.sim.issue_token(body["username"])
        if rule and rule["action"] == "malformed_jwt":
            token = rule.get("value", "not-a-jwt")
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": int(options["token_ttl"]), "scope": "openid"}

    # --- FTI Fabric Manager ---------------------------------------------------------------

    def _fm_machine_obj(self, params, query):
        fabric = self.sim.fabric
        if query.get("tenant_uuid") != fabric.options["tenant_id"]:
            raise ApiError(403, "tenant_uuid %r is not allowed" % query.get("tenant_uuid"), "E40301")
        machine = fabric.machines.get(params["machine"])
        if machine is None:
            raise ApiError(404, "machine %s not found" % params["machine"], "E40401")
        return machine

    def _fm_render(self, machine, rule=None):
        fabric = self.sim.fabric
        with fabric.lock:
            devices = list(machine["devices"])
        if rule and rule["action"] == "omit_device" and devices:
            target = rule.get("res_uuid") or devices[-1]["res_uuid"]
            devices = [d for d in devices if d["res_uuid"] != target]
        resources = []
        for device in devices:
            resources.append({
                "res_uuid": device["res_uuid"],
                "res_name": "%s-%s" % (device["model"], device["res_uuid"][:8]),
                "res_type": device["type"],
                "res_status": 0,
                "res_op_status": device["op_status"],
                "res_serial_num": device["serial"],
                "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": device["model"]}]},
            })
        # GetMachineItem of CRO internal/cdi/fti/fm/api/get.go (also the PATCH answer, ScaleUpResponseMachineItem in api/scale_up.go)
        machines = [] if rule and rule["action"] == "empty_machines" else [{
            "fabric_uuid": FABRIC_UUID,
            "fabric_id": FABRIC_ID,
            "mach_uuid": machine["uuid"],
            "mach_id": machine["index"] + 1,
            "mach_name": machine["name"],
            "tenant_uuid": fabric.options["tenant_id"],
            "mach_status": 15,
            "mach_status_detail": "ACTIVE",
            "resources": resources,
        }]
        return {"data": {"machines": machines}}

    def _fm_machine(self, params, query, body, rule):
        return 200, self._fm_render(self._fm_machine_obj(params, query), rule)

    @staticmethod
    def _fm_spec(body, machine_id, tenant):
        try:
            tenants = body["tenants"]
            if tenants["tenant_uuid"] != tenant:
                raise ApiError(403, "tenant_uuid in body does not match", "E40302")
            machines = tenants["machines"]
            if len(machines) != 1 or machines[0]["mach_uuid"] != machine_id:
                raise ApiError(400, "body must name exactly the machine of the path", "E40002")
            specs = machines[0]["resources"][0]["res_specs"]
            if len(specs) != 1 or specs[0].get("res_num") != 1:
                raise ApiError(400, "exactly one res_spec with res_num 1 is accepted", "E40003")
            return specs[0]
        except (KeyError, IndexError, TypeError):
            raise ApiError(400, "malformed request body", "E40001")

    def _fm_attach(self, params, query, body, rule):
        fabric = self.sim.fabric
        machine = self._fm_machine_obj(params, query)
        spec = self._fm_spec(body, machine["uuid"], fabric.options["tenant_id"])
        model = None
        for cond in (spec.get("res_spec") or {}).get("condition", []):
            if cond.get("column") == "model" and cond.get("operator") == "eq":
                model = cond.get("value")
        if rule and rule["action"] == "pool_exhausted":
            raise ApiError(409, "no available resource of type %s model %s" % (spec.get("res_type"), model), "E40901")
        op_status = None
        if rule and rule["action"] == "op_status":
            op_status = rule.get("value", "")
        if rule and rule["action"] == "partial_attach":
            op_status = "2001"
        device = fabric.attach(machine, spec.get("res_type"), model, op_status=op_status)
        if device is None:
            raise ApiError(409, "no available resource of type %s model %s" % (spec.get("res_type"), model), "E40901")
        if rule and rule["action"] == "partial_attach":
            raise ApiError(500, "resource %s bound but link training failed" % device["res_uuid"], "E50001")
        return 200, self._fm_render(machine, rule)

    def _fm_detach(self, params, query, body, rule):
        fabric = self.sim.fabric
        machine = self._fm_machine_obj(params, query)
        spec = self._fm_spec(body, machine["uuid"], fabric.options["tenant_id"])
        if not spec.get("res_uuid"):
            raise ApiError(400, "res_uuid is required to detach", "E40004")
        if fabric.detach(machine, spec["res_uuid"]) is None:
            raise ApiError(404, "resource %s is not attached to machine %s" % (spec["res_uuid"], machine["uuid"]), "E40402")
        return 200, self._fm_render(machine)

    def _fm_available(self, params, query, body, rule):
        """The free pool as composable-dra-driver asks for it (pkg/client/client.go GetFMAvailableReservedResources): ``res_type``
        and ``condition`` ONE JSON object; a list (or anything else) is answered 400 invalid_parameter as the real manager
        does. The answer is top-level ``{"fabric_id", "reserved_res_num_per_fabric"}`` (pkg/client/types.go)."""
        fabric = self.sim.fabric
        self._fm_machine_obj(params, query)
        model = None
        raw = query.get("condition")
        if raw is not None:
            try:
                cond = json.loads(raw)
            except ValueError:
                cond = None
            if not isinstance(cond, dict) or set(cond) != {"column", "operator", "value"}:
                raise ApiError(400, "condition must be one JSON object {\"column\",\"operator\",\"value\"}, got %s" % raw[:80], "invalid_parameter")
            if cond.get("column") != "model" or cond.get("operator") != "eq":
                raise ApiError(400, "condition supports column model with operator eq", "invalid_parameter")
            model = cond["value"]
        free = [] if rule and rule["action"] == "pool_exhausted" else fabric.free(query.get("res_type", "gpu"), model)
        if rule and rule["action"] == "pool_size":
            free = free[:int(rule.get("value", 0))]
        return 200, {"fabric_id": FABRIC_ID, "reserved_res_num_per_fabric": len(free)}

    # --- FTI Cluster Manager -------------------------------------------------------------------

    def _cm_machine_obj(self, params):
        fabric = self.sim.fabric
        if params["tenant"] != fabric.options["tenant_id"] or params["cluster"] != fabric.options["cluster_id"]:
            raise ApiError(404, "tenant/cluster %s/%s not found" % (params["tenant"], params["cluster"]), "E40403")
        machine = fabric.machines.get(params["machine"])
        if machine is None:
            raise ApiError(404, "machine %s not found" % params["machine"], "E40401")
        return machine

    def _cm_render(self, machine, rule=None):
        fabric = self.sim.fabric
        if rule and rule["action"] == "empty_machines":
            return {"data": {"tenant_uuid": fabric.options["tenant_id"], "cluster": {"cluster_uuid": fabric.options["cluster_id"], "machine": {}}}}
        specs = []
        with fabric.lock:
            devices = list(machine["devices"])
            models = sorted((spec["type"], model) for model, spec in fabric.options["pool"].items())
            if rule and rule["action"] == "omit_device" and devices:
                target = rule.get("res_uuid") or devices[-1]["res_uuid"]
                devices = [d for d in devices if d["res_uuid"] != target]
            for dtype, model in models:
                mine = [d for d in devices if d["type"] == dtype and d["model"] == model]
                specs.append({
                    "spec_uuid": fabric.spec_uuid(machine, dtype, model),
                    "type": dtype,
                    "selector": {"version": "v1", "expression": {"conditions": [{"column": "model", "operator": "eq", "value": model}]}},
                    "min_resspec_count": 0,
                    "max_resspec_count": 16,
                    # the spec's desired count (CRO cm/api/machine.go ResourceSpec.DeviceCount): what a resize set, which can differ
                    # from the devices listed (one still ADDING and not listed yet); the devices listed when nothing set it
                    "device_count": machine["counts"].get(fabric.spec_uuid(machine, dtype, model), len(mine)),
                    "devices": [{
                        "device_id": d["serial"],
                        "status": CM_STATUS.get(d["phase"], "UNKNOWN"),
                        "status_reason": "link training failed" if d["phase"] == "add_failed" else "",
                        "detail": {
                            "res_uuid": d["res_uuid"], "res_type": d["type"], "res_name": "%s-%s" % (d["model"], d["res_uuid"][:8]),
                            "res_status": 0, "res_op_status": d["op_status"],
                            "resspecs": [{"resspec_uuid": d["spec_uuid"], "productname": d["model"], "model": d["model"], "vendor": "NVIDIA",
                                          "removable": True}],
                            "tenant_uuid": fabric.options["tenant_id"], "mach_uuid": machine["uuid"],
                        },
                    } for d in mine],
                })
        return {"data": {"tenant_uuid": fabric.options["tenant_id"], "cluster": {"cluster_uuid": fabric.options["cluster_id"], "machine": {
            "uuid": machine["uuid"], "name": machine["name"], "status": "ACTIVE", "status_reason": "", "resspecs": specs}}}}

    def _cm_machine(self, params, query, body, rule):
        machine = self._cm_machine_obj(params)
        self.sim.fabric.advance(machine)
        return 200, self._cm_render(machine, rule)

    def _cm_resize(self, params, query, body, rule):
        fabric = self.sim.fabric
        machine = self._cm_machine_obj(params)
        body = body or {}
        with fabric.lock:
            by_spec = {}
            for key, spec_uuid in machine["specs"].items():
                by_spec[spec_uuid] = key.split("/", 1)
            if "increase_resource_count" in body:
                target = body["increase_resource_count"]
                for model, spec in fabric.options["pool"].items():
                    by_spec.setdefault(fabric.spec_uuid(machine, spec["type"], model), [spec["type"], model])
                if target.get("spec_uuid") not in by_spec:
                    raise ApiError(404, "spec %s not found on machine" % target.get("spec_uuid"), "E40404")
                dtype, model = by_spec[target["spec_uuid"]]
                listed = len([d for d in machine["devices"] if d["type"] == dtype and d["model"] == model])
                current = machine["counts"].get(target["spec_uuid"], listed)
                wanted = int(target.get("device_count", 0))
                if wanted > 16:
                    raise ApiError(400, "device_count %d exceeds max_resspec_count 16" % wanted, "E40006")
                if rule and rule["action"] == "pool_exhausted" or len(fabric.free(dtype, model)) < wanted - current:
                    raise ApiError(409, "not enough free resources of model %s" % model, "E40901")
                machine["counts"].pop(target["spec_uuid"], None)  # the devices attached below make the listed count the desired one
                for _index in range(max(0, wanted - current)):
                    phase = "adding_fail" if rule and rule["action"] == "partial_attach" else "adding"
                    op_status = rule.get("value", "") if rule and rule["action"] == "op_status" else None
                    fabric.attach(machine, dtype, model, phase=phase, op_status=op_status)
                return 202, {"data": {"job_id": "job-%d" % int(time.time() * 1000)}}
            if "remove_resources" in body:
                target = body["remove_resources"]
                names = target.get("devices") or []
                if not names:
                    raise ApiError(400, "remove_resources needs the devices to remove", "E40007")
                for name in names:
                    found = [d for d in machine["devices"] if d["serial"] == name]
                    if not found:
                        raise ApiError(404, "device %s not found on machine" % name, "E40405")
                # CRO cm/client.go RemoveResource sends the spec's device_count - 1 with the one device to remove
                spec = target.get("spec_uuid")
                key = by_spec.get(spec)
                listed = len([d for d in machine["devices"] if key and d["type"] == key[0] and d["model"] == key[1]])
                desired = machine["counts"].get(spec, listed)
                if int(target.get("device_count", -1)) != desired - len(names):
                    raise ApiError(400, "device_count %s does not match the spec's device_count %d minus the %d device(s) removed"
                                   % (target.get("device_count"), desired, len(names)), "E40009")
                machine["counts"].pop(spec, None)
                if desired - len(names) != listed - len(names):
                    machine["counts"][spec] = desired - len(names)
                for name in names:
                    device = [d for d in machine["devices"] if d["serial"] == name][0]
                    fabric.detach(machine, device["res_uuid"], phase="removing")
                return 202, {"data": {"job_id": "job-%d" % int(time.time() * 1000)}}
        raise ApiError(400, "body needs increase_resource_count or remove_resources", "E40008")

    # --- Redfish ---------------------------------------------------------------------------------

    def _rf_root(self, params, query, body, rule):
        root = {"@odata.id": RF, "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot", "Id": "RootService", "RedfishVersion": "1.17.0",
                "CompositionService": {"@odata.id": RF + "/CompositionService"}, "Systems": {"@odata.id": RF + "/Systems"}}
        if self.sim.fabric.options.get("rf_expand", True):
            # ServiceRoot ProtocolFeaturesSupported.ExpandQuery: $expand=. (NoLinks) is supported
            root["ProtocolFeaturesSupported"] = {"ExpandQuery": {"ExpandAll": False, "Levels": True, "MaxLevels": 1, "Links": False, "NoLinks": True}}
        return 200, root

    def _rf_composition(self, params, query, body, rule):
        return 200, {"@odata.id": RF + "/CompositionService", "Id": "CompositionService", "ServiceEnabled": True,
                     "ResourceBlocks": {"@odata.id": RF + "/CompositionService/ResourceBlocks"}}

    def _rf_block_obj(self, device):
        fabric = self.sim.fabric
        machine, _dummy = fabric.machine_of(device["res_uuid"])
        state = {"free": "Unused", "attached": "Composed", "adding": "Composing", "adding_fail": "Composing",
                 "add_failed": "Failed", "removing": "Composed", "remove_failed": "Failed"}.get(device["phase"], "Unknown")
        status = {"State": "Enabled"}
        if device["op_status"]:
            status["Health"] = HEALTH.get(device["op_status"][0], "Bogus-" + device["op_status"])
        block_url = RF + "/CompositionService/ResourceBlocks/" + device["block_id"]
        block = {
            "@odata.id": block_url,
            "@odata.type": "#ResourceBlock.v1_4_0.ResourceBlock",
            "Id": device["block_id"],
            "Name": "%s %s" % (device["model"], device["block_id"]),
            "ResourceBlockType": ["Processor"] if device["type"] == "gpu" else ["Memory"],
            "CompositionStatus": {"CompositionState": state, "Reserved": False},
            "Status": status,
            "Links": {"ComputerSystems": [{"@odata.id": RF + "/Systems/" + machine["uuid"]}] if machine else []},
        }
        # DMTF ResourceBlock v1_4: Processors / Memory are arrays of links to the Processor / Memory resources
        if device["type"] == "gpu":
            block["Processors"] = [{"@odata.id": block_url + "/Processors/0"}]
        else:
            block["Memory"] = [{"@odata.id": block_url + "/Memory/0"}]
        return block

    def _rf_part(self, params, query, body, rule):
        device = self.sim.fabric.device(params["block"])
        if device is None or device["block_id"] != params["block"] or (params["kind"] == "Processors") != (device["type"] == "gpu"):
            raise ApiError(404, "%s of resource block %s not found" % (params["kind"], params["block"]), "Base.1.8.ResourceMissingAtURI")
        url = RF + "/CompositionService/ResourceBlocks/%s/%s/0" % (device["block_id"], params["kind"])
        if params["kind"] == "Processors":  # DMTF Processor: ProcessorType GPU, Model, UUID
            return 200, {"@odata.id": url, "@odata.type": "#Processor.v1_18_0.Processor", "Id": "0", "ProcessorType": "GPU",
                         "Model": device["model"], "UUID": device["serial"]}
        return 200, {"@odata.id": url, "@odata.type": "#Memory.v1_17_0.Memory", "Id": "0", "Model": device["model"],  # DMTF Memory
                     "SerialNumber": device["serial"], "CapacityMiB": 262144}

    def _rf_blocks(self, params, query, body, rule):
        fabric = self.sim.fabric
        with fabric.lock:
            devices = [d for m in fabric.machines.values() for d in m["devices"]] + list(fabric.pool)
        if rule and rule["action"] == "pool_exhausted":
            devices = [d for d in devices if d["phase"] != "free"]
        devices.sort(key=lambda d: d["block_id"])
        if "$expand" in query and not fabric.options.get("rf_expand", True):
            # Redfish specification: an unsupported query parameter starting with $ is answered 501 Not Implemented
            raise ApiError(501, "$expand is not supported by this service", "Base.1.8.QueryNotSupported")
        expand = "$expand" in query
        members = [self._rf_block_obj(d) if expand else {"@odata.id": RF + "/CompositionService/ResourceBlocks/" + d["block_id"]} for d in devices]
        return 200, {"@odata.id": RF + "/CompositionService/ResourceBlocks", "Members": members, "Members@odata.count": len(members)}

    def _rf_block(self, params, query, body, rule):
        device = self.sim.fabric.device(params["block"])
        if device is None or device["block_id"] != params["block"]:
            raise ApiError(404, "resource block %s not found" % params["block"], "Base.1.8.ResourceMissingAtURI")
        return 200, self._rf_block_obj(device)

    def _rf_system_obj(self, params):
        machine = self.sim.fabric.machines.get(params["machine"])
        if machine is None:
            raise ApiError(404, "system %s not found" % params["machine"], "Base.1.8.ResourceMissingAtURI")
        return machine

    def _rf_system(self, params, query, body, rule):
        fabric = self.sim.fabric
        machine = self._rf_system_obj(params)
        self.sim.fabric.advance(machine)
        with fabric.lock:
            devices = list(machine["devices"])
        if rule and rule["action"] == "omit_device" and devices:
            target = rule.get("res_uuid") or devices[-1]["res_uuid"]
            devices = [d for d in devices if d["res_uuid"] != target]
        url = RF + "/Systems/" + machine["uuid"]
        system = {
            "@odata.id": url, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "Id": machine["uuid"], "Name": machine["name"],
            "HostName": machine["node"],
            "Links": {"ResourceBlocks": [{"@odata.id": RF + "/CompositionService/ResourceBlocks/" + d["block_id"]} for d in devices]},
            "Actions": {
                "#ComputerSystem.AddResourceBlock": {"target": "%s/%s/ComputerSystem.AddResourceBlock" % (url, self._rf_actions_segment())},
                "#ComputerSystem.RemoveResourceBlock": {"target": "%s/%s/ComputerSystem.RemoveResourceBlock" % (url, self._rf_actions_segment())},
            },
        }
        if rule and rule["action"] == "empty_machines":
            system = {"@odata.id": url, "Id": machine["uuid"]}
        return 200, system

    def _rf_block_ref(self, body):
        try:
            ref = body["ResourceBlock"]["@odata.id"]
        except (KeyError, TypeError):
            raise ApiError(400, "ResourceBlock/@odata.id is required", "Base.1.8.PropertyMissing")
        block_id = ref.rstrip("/").rsplit("/", 1)[-1]
        device = self.sim.fabric.device(block_id)
        if device is None or device["block_id"] != block_id:
            raise ApiError(404, "resource block %s not found" % block_id, "Base.1.8.ResourceMissingAtURI")
        return device

    def _rf_actions_segment(self):
        return self.sim.fabric.options.get("rf_actions") or "Actions"

    def _rf_advertised_action(self, params):
        if params.get("actions") != self._rf_actions_segment():
            raise ApiError(404, "no action at %s; the system advertises its actions under %s" % (params.get("actions"), self._rf_actions_segment()),
                           "Base.1.8.ResourceMissingAtURI")

    def _rf_attach(self, params, query, body, rule):
        self._rf_advertised_action(params)
        fabric = self.sim.fabric
        machine = self._rf_system_obj(params)
        device = self._rf_block_ref(body)
        if rule and rule["action"] == "pool_exhausted":
            raise ApiError(409, "resource block %s is not available" % device["block_id"], "Base.1.8.ResourceInUse")
        if device["phase"] != "free":
            raise ApiError(409, "resource block %s is already composed" % device["block_id"], "Base.1.8.ResourceInUse")
        op_status = rule.get("value", "") if rule and rule["action"] == "op_status" else None
        phase = "add_failed" if rule and rule["action"] == "partial_attach" else "attached"

        def apply():
            fabric.attach(machine, device["type"], block_id=device["block_id"], phase=phase, op_status="2001" if phase == "add_failed" else op_status)
            if phase == "add_failed":
                raise ApiError(500, "resource block %s failed to compose" % device["block_id"], "Base.1.8.GeneralError")
            return 204, None

        return self._rf_maybe_task(apply, rule)

    def _rf_detach(self, params, query, body, rule):
        self._rf_advertised_action(params)
        fabric = self.sim.fabric
        machine = self._rf_system_obj(params)
        device = self._rf_block_ref(body)

        def apply():
            if fabric.detach(machine, device["res_uuid"]) is None:
                raise ApiError(409, "resource block %s is not composed into system %s" % (device["block_id"], machine["uuid"]),
                               "Base.1.8.ActionNotSupported")
            return 204, None

        return self._rf_maybe_task(apply, rule)

    def _rf_maybe_task(self, apply, rule):
        """The action now (option ``rf_tasks`` unset), or 202 with a task monitor that applies it after ``rf_tasks`` polls
        (DMTF Redfish specification, asynchronous operations: ``Location`` names the task monitor)."""
        polls = self.sim.fabric.options.get("rf_tasks")
        if polls is None or polls is False:
            return apply()
        outcome = rule["action"] if rule and rule["action"] in ("task_exception", "task_error") else "completed"
        task_id = self.sim.new_task(apply, int(polls), outcome, rule)
        return 202, self._rf_task_obj(task_id, "Running"), {"Location": RF + "/TaskService/TaskMonitors/" + task_id, "Retry-After": "0"}

    @staticmethod
    def _rf_task_obj(task_id, state, messages=None):
        return {"@odata.id": RF + "/TaskService/Tasks/" + task_id, "@odata.type": "#Task.v1_7_0.Task", "Id": task_id, "Name": "composition task",
                "TaskState": state, "TaskStatus": "Critical" if state == "Exception" else "OK", "Messages": messages or [],
                "TaskMonitor": RF + "/TaskService/TaskMonitors/" + task_id}

    def _rf_task(self, params, query, body, rule):
        sim = self.sim
        with sim.lock:
            task = sim.tasks.get(params["task"])
            if task is None or task["delivered"]:
                task = None
            elif task["polls"] > 0:
                task["polls"] -= 1
                return 202, self._rf_task_obj(params["task"], "Running"), {"Retry-After": "0"}
            else:
                task["delivered"] = True  # the operation's answer is given once; the monitor is gone afterwards
        if task is None:
            raise ApiError(404, "task monitor %s not found" % params["task"], "Base.1.8.ResourceMissingAtURI")
        if task["outcome"] == "task_exception":
            return 200, self._rf_task_obj(params["task"], "Exception", [{"MessageId": "Base.1.8.GeneralError", "Message": task["message"],
                                                                         "Severity": "Critical"}])
        if task["outcome"] == "task_error":
            raise ApiError(task["status"], task["message"], "Composition.1.1.ResourceBlockInUse")
        return task["apply"]()

    # --- control API ------------------------------------------------------------------------------

    def _control(self, method, path, body):
        sim = self.sim
        parts = [p for p in path.split("/") if p][1:]
        try:
            if parts == ["reset"] and method == "POST":
                sim.reset(**body)
                return self._send(200, {"ok": True})
            if parts == ["state"] and method == "GET":
                state = sim.fabric.snapshot()
                state["tokens_issued"] = sim.tokens_issued
                state["faults"] = list(sim.faults)
                return self._send(200, state)
            if parts == ["faults"] and method == "POST":
                rules = body if isinstance(body, list) else [body]
                return self._send(200, {"faults": [sim.add_fault(rule) for rule in rules]})
            if parts == ["faults"] and method == "DELETE":
                with sim.lock:
                    sim.faults = []
                return self._send(200, {"ok": True})
            if parts == ["requests"] and method == "GET":
                with sim.lock:
                    return self._send(200, {"requests": list(sim.log)})
            if parts == ["requests"] and method == "DELETE":
                with sim.lock:
                    sim.log = []
                    sim.tokens_issued = 0
                return self._send(200, {"ok": True})
            if parts == ["config"] and method == "POST":
                sim.fabric.options.update({k: v for k, v in body.items() if k in ("latency", "read_latency", "token_ttl", "cm_polls", "rf_tasks")})
                return self._send(200, {"ok": True})
            if parts == ["release"] and method == "POST":
                sim.released.set()
                return self._send(200, {"ok": True})
            if parts == ["tokens", "expire"] and method == "POST":
                sim.expire_tokens()
                return self._send(200, {"ok": True})
            if len(parts) == 2 and parts[0] == "devices" and method == "POST":
                device = sim.fabric.set_device(parts[1], **body)
                if device is None:
                    return self._send(404, {"error": "no device %s" % parts[1]})
                return self._send(200, dict(device))
            if len(parts) == 3 and parts[0] == "machines" and parts[2] == "spec_count" and method == "POST":
                machine = sim.fabric.machine(parts[1])
                if machine is None:
                    return self._send(404, {"error": "no machine %s" % parts[1]})
                with sim.fabric.lock:
                    spec = sim.fabric.spec_uuid(machine, body.get("type", "gpu"), body["model"])
                    machine["counts"][spec] = int(body["device_count"])
                return self._send(200, {"spec_uuid": spec})
            if len(parts) == 3 and parts[0] == "machines" and parts[2] == "devices" and method == "POST":
                machine = sim.fabric.machine(parts[1])
                if machine is None:
                    return self._send(404, {"error": "no machine %s" % parts[1]})
                added = []
                for _index in range(int(body.get("count", 1))):
                    device = sim.fabric.attach(machine, body.get("type", "gpu"), body.get("model"), op_status=body.get("op_status"))
                    if device is None:
                        return self._send(409, {"error": "pool exhausted", "added": added})
                    added.append(dict(device))
                return self._send(200, {"added": added})
        except (TypeError, ValueError) as exc:
            return self._send(400, {"error": str(exc)})
        return self._send(404, {"error": "no control route %s %s" % (method, path)})


class ApiError(Exception):
    def __init__(self, status, message, code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


def make_server(cert_paths, host="127.0.0.1", port=0, **options):
    """Build (not start) the HTTPS server; returns (server, simulator)."""
    sim = Simulator(**options)
    handler = type("BoundHandler", (Handler,), {"sim": sim})
    server = _Server((host, port), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_paths["cert"], cert_paths["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    return server, sim
