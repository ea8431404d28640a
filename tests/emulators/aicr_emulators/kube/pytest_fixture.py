"""Start a Kubernetes API emulator from tests.

    from aicr_emulators.kube.pytest_fixture import start_emulator

    with start_emulator(tmp_path) as kube:            # subprocess (default), like a real cluster
        run(["kubectl", "--kubeconfig", kube.kubeconfig, "get", "ns"])
        kube.control.add_fault(code=503, count=2, verbs=["patch"])
        kube.control.set_readiness(kind="Deployment", name="web*", ready_after_seconds=2)
        assert not kube.control.audit(mutating=True, since=mark)

    kube = start_emulator(tmp_path, in_process=True)  # same API, no process start (faster)

A pytest fixture ``kube_emulator`` is also defined; import it into a conftest to use it.
"""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

_OPTION_FLAGS = {
    "kube_version": "--kube-version", "node_count": "--nodes", "gpus_per_node": "--gpus-per-node",
    "default_ready_after": "--ready-after", "default_field_validation": "--field-validation", "tick_seconds": "--tick",
    "bookmark_seconds": "--bookmark-seconds", "state_file": "--state", "context": "--context",
}


class EmulatorError(RuntimeError):
    """The emulator could not be started or a control call failed."""


class Control:
    """Client of the ``/__emulator/`` control API."""

    def __init__(self, url, token):
        self.url = url
        self.token = token

    def request(self, method, path, body=None, query=None, timeout=10):
        url = self.url + "/__emulator/" + path.lstrip("/")
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # nosec - local emulator
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise EmulatorError("control %s %s failed: %s %s" % (method, path, exc.code, exc.read()[:300]))

    # faults: API errors for the next N matching requests
    # pylint: disable=too-many-arguments
    def add_fault(self, code=500, count=1, verbs=None, path=None, retry_after=None, message=None, user_agent=None):
        rule = {"code": code, "count": count, "verbs": verbs, "path": path, "retryAfter": retry_after, "message": message,
                "userAgent": user_agent}
        return self.request("POST", "faults", {k: v for k, v in rule.items() if v is not None})["items"]

    def clear_faults(self):
        self.request("DELETE", "faults")

    def add_delay(self, seconds, count=None, verbs=None, path=None, user_agent=None):
        rule = {"seconds": seconds, "count": count, "verbs": verbs, "path": path, "userAgent": user_agent}
        return self.request("POST", "delays", {k: v for k, v in rule.items() if v is not None})["items"]

    def clear_delays(self):
        self.request("DELETE", "delays")

    def set_readiness(self, kind=None, namespace=None, name=None, ready_after_seconds=None, never_ready=False, fail=False):
        """Readiness of matching workloads (kind, namespace and name globs); first matching rule wins."""
        rule = {"kind": kind, "namespace": namespace, "name": name, "readyAfterSeconds": ready_after_seconds,
                "neverReady": never_ready or None, "fail": fail or None}
        return self.request("POST", "readiness", {k: v for k, v in rule.items() if v is not None})["items"]

    def clear_readiness(self):
        self.request("DELETE", "readiness")

    def audit(self, **filters):
        """Audit entries; filters: since (seq), verb ("patch,create"), mutating (bool), path/userAgent (regex),
        resource, namespace, code."""
        query = {}
        for key, value in filters.items():
            query[key] = ("true" if value else "false") if isinstance(value, bool) else value
        return self.request("GET", "audit", query=query)["items"]

    def audit_mark(self):
        """The sequence number of the latest audit entry (pass it as ``since``)."""
        return self.request("GET", "audit", query={"since": 10 ** 12})["lastSeq"]

    def clear_audit(self):
        self.request("DELETE", "audit")

    def restart(self, keep_state=True, down_seconds=0.0, timeout=10):
        """Close every connection and the listener, optionally drop state, listen again on the same port."""
        before = self.request("POST", "restart", {"keepState": keep_state, "downSeconds": down_seconds})["restarts"]
        time.sleep(0.05 + down_seconds)
        deadline = time.time() + timeout + down_seconds
        while time.time() < deadline:
            try:
                if self.health()["restarts"] > before:
                    return
            except (OSError, EmulatorError, http.client.HTTPException, ValueError):
                pass  # the listener is going down or coming back: a cut or empty answer just means "not yet"
            time.sleep(0.05)
        raise EmulatorError("emulator did not come back after restart")

    def reset(self):
        """Back to the initial cluster: state, faults, delays, readiness rules and audit cleared."""
        self.request("POST", "reset")

    def save(self):
        return self.request("POST", "save")

    def health(self):
        return self.request("GET", "health", timeout=2)


class EmulatorHandle:
    """A running emulator: ``url``, ``kubeconfig`` (path), ``token``, ``control``; ``stop()``."""

    def __init__(self, url, kubeconfig, token, process=None, emulator=None):
        self.url = url
        self.kubeconfig = kubeconfig
        self.token = token
        self.process = process
        self.emulator = emulator
        self.control = Control(url, token)
        self._stderr_thread = None
        self.stderr_lines = []

    def env(self):
        """Environment for subprocesses (kubectl/helm/ansible) that should use this emulator."""
        env = dict(os.environ)
        env["KUBECONFIG"] = self.kubeconfig
        return env

    def stop(self, timeout=10):
        if self.emulator is not None:
            self.emulator.stop()
            self.emulator = None
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode if self.process is not None else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _cli_args(options, tmp_dir):
    args = []
    for key, value in options.items():
        if key in _OPTION_FLAGS and value is not None:
            args += [_OPTION_FLAGS[key], str(value)]
        elif key == "node_labels" and value:
            args += ["--node-labels", ",".join("%s=%s" % kv for kv in sorted(value.items()))]
        elif key == "nodes" and value is not None:
            path = os.path.join(str(tmp_dir), "emulator-nodes.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(value, handle)
            args += ["--nodes-file", path]
        elif key == "create_pods" and not value:
            args.append("--no-pods")
        elif key == "validate_builtins" and not value:
            args.append("--no-builtin-validation")
        elif key == "verbose" and value:
            args.append("--verbose")
        elif key == "require_token" and value:
            args.append("--require-token")
        elif key == "schedule" and value:
            args.append("--schedule")
        elif key == "token" and value:
            args += ["--token", value]
        elif key not in _OPTION_FLAGS and key not in ("node_labels", "nodes", "create_pods", "validate_builtins", "verbose",
                                                      "token", "require_token", "schedule"):
            raise EmulatorError("unknown emulator option %r" % key)
    return args


def start_emulator(tmp_dir, in_process=False, port=0, kubeconfig=None, timeout=15, **options):
    """Start an emulator on 127.0.0.1 (``port`` 0 picks a free one) and return its handle.

    Options (keyword arguments): kube_version, node_count, node_labels, gpus_per_node, nodes (list of dicts),
    default_ready_after, create_pods, validate_builtins, default_field_validation, tick_seconds,
    bookmark_seconds, state_file, context, token, require_token, schedule, verbose.
    """
    tmp_dir = str(tmp_dir)
    os.makedirs(tmp_dir, exist_ok=True)
    kubeconfig = kubeconfig or os.path.join(tmp_dir, "kubeconfig")
    if in_process:
        from .server import Emulator, Options  # pylint: disable=import-outside-toplevel
        context = options.pop("context", "aicr-emulator")
        try:
            emulator_options = Options(port=port, **options)
        except TypeError as exc:
            raise EmulatorError("unknown emulator option: %s" % exc)
        emulator = Emulator(emulator_options).start()
        emulator.write_kubeconfig(kubeconfig, context)
        return EmulatorHandle(emulator.url, kubeconfig, emulator.options.token, emulator=emulator)
    cmd = [sys.executable, "-m", "aicr_emulators.kube.cli", "--port", str(port), "--kubeconfig", kubeconfig]
    cmd += _cli_args(options, tmp_dir)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # pylint: disable=consider-using-with
    result = {}

    def _read_ready():
        result["line"] = proc.stdout.readline()

    reader = threading.Thread(target=_read_ready, daemon=True)
    reader.start()
    reader.join(timeout)
    line = result.get("line") or ""
    if not line.startswith("ready "):
        proc.kill()
        _out, err = proc.communicate()
        raise EmulatorError("emulator did not become ready (got %r): %s" % (line, (err or "")[-2000:]))
    url = line.split(" ", 1)[1].strip()
    with open(kubeconfig, "r", encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    token = config["users"][0]["user"]["token"]
    handle = EmulatorHandle(url, kubeconfig, token, process=proc)

    def _drain():
        for err_line in proc.stderr:
            handle.stderr_lines.append(err_line)

    handle._stderr_thread = threading.Thread(target=_drain, daemon=True)  # pylint: disable=protected-access
    handle._stderr_thread.start()  # pylint: disable=protected-access
    return handle


try:
    import pytest
except ImportError:  # pragma: no cover - only for use outside pytest
    pytest = None

if pytest is not None:
    @pytest.fixture
    def kube_emulator(tmp_path):
        """A fresh subprocess emulator per test."""
        with start_emulator(tmp_path) as handle:
            yield handle
