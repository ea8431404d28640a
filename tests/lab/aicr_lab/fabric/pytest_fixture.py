"""Start the fabric simulator in-process for tests: ``start_simulator(tmp_dir, **options)``."""

import threading

import requests

from aicr_lab import pki
from aicr_lab.fabric.server import make_server


class SimulatorControl:
    """Client of the ``/_sim`` control API (works for in-process and CLI-started simulators)."""

    def __init__(self, url, ca_path):
        self.url = url.rstrip("/") + "/_sim"
        self.ca_path = ca_path
        self.session = requests.Session()

    def _call(self, method, path, body=None):
        response = self.session.request(method, self.url + path, json=body, timeout=30, verify=self.ca_path)
        response.raise_for_status()
        return response.json()

    def reset(self, **options):
        """Back to the seeded fabric (optionally with new seed options); clears faults and the request log."""
        return self._call("POST", "/reset", options)

    def state(self):
        return self._call("GET", "/state")

    def fault(self, **rule):
        """Add one fault rule (see ``aicr_lab.fabric.server``); returns it with its id."""
        return self._call("POST", "/faults", rule)["faults"][0]

    def clear_faults(self):
        return self._call("DELETE", "/faults")

    def requests(self, op=None, mutating=None):
        entries = self._call("GET", "/requests")["requests"]
        if op is not None:
            entries = [e for e in entries if e["op"] == op]
        if mutating is not None:
            entries = [e for e in entries if e["mutating"] == mutating]
        return entries

    def clear_requests(self):
        return self._call("DELETE", "/requests")

    def configure(self, **options):
        """latency (mutations), read_latency, token_ttl, cm_polls."""
        return self._call("POST", "/config", options)

    def release(self):
        """Let the requests a ``hold`` fault holds go on."""
        return self._call("POST", "/release")

    def expire_tokens(self):
        return self._call("POST", "/tokens/expire")

    def set_device(self, key, **fields):
        """Override a device's op_status / phase (key: res_uuid, serial or block id)."""
        return self._call("POST", "/devices/%s" % key, fields)

    def set_spec_count(self, machine, model, device_count, dtype="gpu"):
        """Cluster Manager: the machine's resource spec for type/model reports ``device_count`` (a device still being added and
        not listed yet), until a resize changes it."""
        return self._call("POST", "/machines/%s/spec_count" % machine, {"model": model, "type": dtype, "device_count": device_count})

    def seed(self, machine, model, count=1, dtype="gpu", op_status=None):
        """Attach devices directly (not logged as API calls); ``machine`` is uuid, name or node."""
        body = {"model": model, "count": count, "type": dtype}
        if op_status is not None:
            body["op_status"] = op_status
        return self._call("POST", "/machines/%s/devices" % machine, body)["added"]

    # --- conveniences over state() ---------------------------------------------------

    def machine_id(self, name_or_node):
        for mach_uuid, machine in self.state()["machines"].items():
            if name_or_node in (mach_uuid, machine["name"], machine["node"]):
                return mach_uuid
        raise KeyError(name_or_node)

    def devices(self, machine):
        """Devices bound to a machine (uuid, name or node)."""
        state = self.state()
        return state["machines"][self.machine_id(machine)]["devices"]


class SimulatorHandle:
    """A running simulator: ``endpoint`` (host:port), ``url``, ``ca_path``, ``control``, ``stop()``."""

    def __init__(self, server, sim, thread, paths, sync=None):
        self._server = server
        self.sim = sim
        self._thread = thread
        self.paths = paths
        self.sync = sync
        host, port = server.server_address[:2]
        self.endpoint = "%s:%d" % (host, port)
        self.url = "https://" + self.endpoint
        self.ca_path = paths["ca"]
        self.options = sim.fabric.options
        self.control = SimulatorControl(self.url, self.ca_path)

    @property
    def credentials(self):
        opts = self.options
        return {"username": opts["username"], "password": opts["password"], "client_id": opts["client_id"],
                "client_secret": opts["client_secret"], "realm": opts["realm"]}

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.control.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_simulator(tmp_dir, host="127.0.0.1", port=0, kubeconfig=None, kube_context=None, **options):
    """Generate a CA into ``tmp_dir``, start the HTTPS simulator on a free port, return the handle.

    ``options``: machines (count or names), node_prefix, pool ({model: {type, count}}), tenant_id,
    cluster_id, realm, username, password, client_id, client_secret, cm_polls, token_ttl, latency,
    read_latency, local_gpus. ``kubeconfig`` wires node GPU counts to a Kubernetes API.
    """
    paths = pki.generate_server_bundle(str(tmp_dir), organization="aicr fabric simulator")
    server, sim = make_server(paths, host=host, port=port, **options)
    sync = None
    if kubeconfig:
        from aicr_lab.fabric.kube_sync import NodeGpuSync  # pylint: disable=import-outside-toplevel

        sync = NodeGpuSync(kubeconfig, kube_context, sim.fabric.options.get("local_gpus", 0))
        sim.fabric.listeners.append(sync)
        sim.fabric.reset()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="aicr-fabric-sim", daemon=True)
    thread.start()
    return SimulatorHandle(server, sim, thread, paths, sync)
