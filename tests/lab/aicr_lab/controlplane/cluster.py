"""A real, secure Kubernetes control plane on 127.0.0.1, built from Go modules.

    plane = ControlPlane(directory, nodes=default_nodes(2)).start()
    plane.kubeconfig                 # admin (client certificate, system:masters)
    plane.server, plane.ca_file
    plane.restart("kube-apiserver")  # the real process, stopped and started; state in etcd survives
    with plane.paused("etcd"): ...   # SIGSTOP inside the block, SIGCONT after: a process that hangs
    plane.stop()

What runs, each from the binaries ``build.ensure_binaries`` made:

- etcd, TLS with client-certificate authentication, its own data directory;
- kube-apiserver: TLS from the lab's CA, ``--authorization-mode=Node,RBAC``, the default admission
  plugins, service-account issuer and keys, anonymous requests limited to what RBAC grants
  ``system:anonymous`` (the health and version endpoints), an audit log (``audit.log``, JSON lines);
- kube-controller-manager with its default controllers (service-account tokens, garbage collector,
  namespaces, Deployments, ReplicaSets, DaemonSets, StatefulSets, Jobs, …), each controller with its
  own service account, leader election off;
- kube-scheduler, leader election off;
- kwok, managing the nodes annotated ``kwok.x-k8s.io/node: fake`` with the stages of ``stages.py``.

Every process listens on 127.0.0.1 only, on free ports, and logs to ``<directory>/logs``.
Start-to-ready waits for ``/readyz``, the ``default`` ServiceAccount and every node Ready.
"""

import contextlib
import json
import os
import shutil
import time
from pathlib import Path

import yaml

from aicr_lab import guard, pki
from aicr_lab.controlplane import build, identities, processes, stages
from aicr_lab.controlplane.rest import ApiError, Rest

SERVICE_CIDR = "10.96.0.0/16"
START_TIMEOUT = 90
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
ADMIN_USER = "aicr-lab:admin"
KWOK_USER = "aicr-lab:kwok"

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # One event per request (a watch: when it ends), written when the answer is complete
    # (blocking mode: before the client has all of it), so a test reads what its calls did.
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "None", "users": ["system:kube-controller-manager", "system:kube-scheduler", "system:apiserver", KWOK_USER]},
        {"level": "None", "userGroups": ["system:serviceaccounts:kube-system", "system:nodes"]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*", "/version", "/metrics"]},
        {"level": "Metadata"},
    ],
}


def default_nodes(count=3, fabric_machines=0, gpus=0):
    """Node specs: ``node-0`` … ``node-<count-1>``; the first ``fabric_machines`` carry the fabric
    simulator's ``fsas-cdi://<machine uuid>`` providerID (machine ``m<index>``)."""
    specs = []
    for index in range(count):
        name = "node-%d" % index
        spec = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "node.kubernetes.io/instance-type": "lab.gpu", "topology.kubernetes.io/zone": "lab-a",
                       "nvidia.com/gpu.present": "true"},
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi", "nvidia.com/gpu": str(gpus)},
            "providerID": "kwok://aicr-lab/%s" % name,
        }
        if index < fabric_machines:
            from aicr_lab.fabric.state import _uid  # pylint: disable=import-outside-toplevel

            spec["providerID"] = "fsas-cdi://%s" % _uid("machine", "m%d" % index)
        specs.append(spec)
    return specs


def node_object(spec, index=0):
    """The Node the lab creates for a spec (kwok takes it over: conditions and heartbeats)."""
    capacity = dict(spec.get("capacity") or {})
    node_info = {"kubeletVersion": build.kubernetes_version(), "containerRuntimeVersion": "containerd://2.1.4",
                 "kernelVersion": "6.8.0-60-generic", "osImage": "Ubuntu 24.04.2 LTS", "operatingSystem": "linux",
                 "architecture": "amd64"}
    node_info.update(spec.get("nodeInfo") or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec["name"], "labels": dict(spec.get("labels") or {}),
                     "annotations": dict(spec.get("annotations") or {}, **{stages.FAKE_NODE_ANNOTATION: "fake"})},
        "spec": {"providerID": spec.get("providerID", "kwok://aicr-lab/%s" % spec["name"]), "taints": list(spec.get("taints") or [])},
        "status": {"capacity": capacity, "allocatable": dict(spec.get("allocatable") or capacity), "nodeInfo": node_info,
                   "addresses": [{"type": "InternalIP", "address": "10.0.0.%d" % (10 + index)},
                                 {"type": "Hostname", "address": spec["name"]}]},
    }


def write_kubeconfig(path, server, ca_file, user, context="aicr-lab", namespace="default"):
    """A kubeconfig file (0600): ``user`` is the kubeconfig user entry (client-certificate/-key, token, exec …)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
    }
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return str(path)


class ControlPlane:  # pylint: disable=too-many-instance-attributes
    """One control plane in ``directory``; ``describe()`` is what lab.json records of it."""

    def __init__(self, directory, nodes=None, binaries=None, log=None):
        self.dir = Path(directory).resolve()
        self.nodes = default_nodes() if nodes is None else list(nodes)
        self._binaries = binaries
        self.log = log or (lambda line: None)
        self.pki_dir = self.dir / "pki"
        self.logs_dir = self.dir / "logs"
        self.ports = {}
        self.processes = {}
        self.pids = {}
        self.ca_file = str(self.pki_dir / "ca.crt")
        self.kubeconfig = str(self.dir / "admin.kubeconfig")
        self.audit_log = str(self.dir / "audit.log")
        self.started_seconds = None
        self._rest = None
        self.authority = None
        self.kubeconfigs = {}

    # --- description -------------------------------------------------------------------------

    @property
    def server(self):
        return "https://127.0.0.1:%d" % self.ports["kube-apiserver"]

    @property
    def binaries(self):
        if self._binaries is None:
            self._binaries = build.ensure_binaries(log=self.log)
        return self._binaries

    @property
    def admin(self):
        """The lab's own REST client (admin)."""
        if self._rest is None:
            self._rest = Rest(self.server, self.ca_file, str(self.pki_dir / "admin.crt"), str(self.pki_dir / "admin.key"))
        return self._rest

    def describe(self):
        return {"dir": str(self.dir), "server": self.server, "ca_file": self.ca_file, "kubeconfig": self.kubeconfig,
                "kubeconfigs": dict(self.kubeconfigs), "audit_log": self.audit_log, "ports": dict(self.ports),
                "pids": dict(self.pids), "kubernetes_version": build.kubernetes_version(), "nodes": list(self.nodes),
                "started_seconds": self.started_seconds}

    @classmethod
    def attach(cls, description):
        """A handle on a control plane another process started (from its ``describe()``)."""
        plane = cls(description["dir"], nodes=description["nodes"])
        plane.ports = dict(description["ports"])
        plane.pids = dict(description["pids"])
        plane.kubeconfigs = dict(description["kubeconfigs"])
        plane.started_seconds = description.get("started_seconds")
        plane.authority = pki.Authority.load(plane.pki_dir)
        return plane

    def identity_kubeconfig(self, name):
        """The kubeconfig of a least-privilege identity (``identities.IDENTITIES``), or ``admin``."""
        if name == "admin":
            return self.kubeconfig
        return self.kubeconfigs[name]

    def client_certificates(self):
        """``{sha256 of the DER certificate: (cert path, key path)}`` of every client certificate the lab issued."""
        found = {}
        for cert in self.pki_dir.glob("*.crt"):
            key = cert.with_suffix(".key")
            if key.is_file() and cert.stem not in ("ca",):
                found[pki.fingerprint(str(cert))] = (str(cert), str(key))
        return found

    # --- start / stop ------------------------------------------------------------------------

    def start(self):
        guard.check("start a control plane in %s" % self.dir)
        started = time.monotonic()
        binaries = self.binaries
        if self.dir.exists():
            shutil.rmtree(str(self.dir))
        for path in (self.dir, self.pki_dir, self.logs_dir):
            path.mkdir(parents=True, exist_ok=True)
            os.chmod(str(path), 0o700)
        self._write_pki()
        for name in ("etcd-client", "etcd-peer", "kube-apiserver"):
            self.ports[name] = processes.free_port()
        try:
            # etcd's data directory records its member's URLs: a start on other ports starts from an empty one
            self._start_on_free_ports(self._start_etcd, ("etcd-client", "etcd-peer"), binaries, stale=self.dir / "etcd")
            self._start_on_free_ports(self._start_apiserver, ("kube-apiserver",), binaries)
            self._start_controllers(binaries)
            self._create_nodes()
            self.kubeconfigs = identities.install(self)
            self._wait_ready()
        except Exception:
            self.stop()
            raise
        self.started_seconds = time.monotonic() - started
        return self

    def stop(self):
        """Stop every process (controllers first, etcd last); nothing is left running."""
        if self._rest is not None:
            self._rest.close()
            self._rest = None
        order = [c for c in reversed(COMPONENTS) if c in self.pids]
        # one at a time: an API server whose etcd is already gone spends its whole grace period retrying
        for name in order:
            processes.terminate([self.pids[name]])
        for name in order:
            process = self.processes.pop(name, None)
            if process is not None:
                process.wait()
        self.pids.clear()

    def restart(self, component, down=None):
        """Stop one component (SIGTERM, then SIGKILL) and start it again on the same port and data.

        ``down`` is called while it is stopped (for example to assert what a client sees then).
        Returns once the control plane is ready again.
        """
        if component not in COMPONENTS:
            raise ValueError("component must be one of %s" % ", ".join(COMPONENTS))
        processes.terminate([self.pids.pop(component)])
        process = self.processes.pop(component, None)
        if process is not None:
            process.wait()
        if self._rest is not None:
            self._rest.close()
        if down is not None:
            down()
        starters = {"etcd": self._start_etcd, "kube-apiserver": self._start_apiserver}
        if component in starters:
            starters[component](self.binaries)
        else:
            self._start_controllers(self.binaries, only=component)
        self._wait_ready()

    @contextlib.contextmanager
    def paused(self, component):
        """``with plane.paused("kube-apiserver"):`` - the component is stopped (SIGSTOP) inside the block and continued
        (SIGCONT) when it ends, however it ends. Yields the monotonic time it was stopped at."""
        if component not in COMPONENTS:
            raise ValueError("component must be one of %s" % ", ".join(COMPONENTS))
        pid = self.pids[component]
        processes.pause(pid)
        try:
            yield time.monotonic()
        finally:
            processes.resume(pid)

    # --- pieces ------------------------------------------------------------------------------

    def _write_pki(self):
        authority = pki.Authority(self.pki_dir, "ca", "aicr lab Kubernetes CA")
        self.authority = authority
        authority.issue("etcd-server", "etcd", server_names=("127.0.0.1", "localhost"), server=True, client=True)
        authority.issue("apiserver-etcd-client", "kube-apiserver-etcd-client", client=True)
        authority.issue("apiserver", "kube-apiserver", server=True, server_names=(
            "127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local", "10.96.0.1"))
        authority.issue("admin", ADMIN_USER, organizations=("system:masters",), client=True)
        authority.issue("controller-manager", "system:kube-controller-manager", client=True)
        authority.issue("scheduler", "system:kube-scheduler", client=True)
        authority.issue("kwok", KWOK_USER, organizations=("system:masters",), client=True)
        pki.service_account_keys(self.pki_dir)
        (self.dir / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY), encoding="utf-8")
        (self.dir / "kwok.yaml").write_text(stages.kwok_config(), encoding="utf-8")

    def _component_kubeconfig(self, name, cert):
        return write_kubeconfig(self.dir / ("%s.kubeconfig" % name), self.server, self.ca_file,
                                {"client-certificate": str(self.pki_dir / ("%s.crt" % cert)),
                                 "client-key": str(self.pki_dir / ("%s.key" % cert))})

    def _spawn(self, name, argv):
        process = processes.spawn(name, argv, self.logs_dir)
        self.processes[name] = process
        self.pids[name] = process.pid
        return process

    def _start_on_free_ports(self, start, port_names, binaries, stale=None, attempts=3):  # pylint: disable=too-many-arguments
        """``start(binaries)``; when its server found a port taken (another server bound it between its pick and the
        start: two labs starting at once), pick ``port_names`` again, remove ``stale`` and start again. Only at the
        lab's first start: a restart keeps its ports, which the kubeconfigs name."""
        for _attempt in range(attempts - 1):
            try:
                return start(binaries)
            except processes.ProcessError as exc:
                if "address already in use" not in str(exc):
                    raise
            if stale is not None:
                shutil.rmtree(str(stale), ignore_errors=True)
            for name in port_names:
                self.ports[name] = processes.free_port()
            if self._rest is not None:  # it names the old server address
                self._rest.close()
                self._rest = None
        return start(binaries)

    def _start_etcd(self, binaries):
        p = self.pki_dir
        client, peer = "https://127.0.0.1:%d" % self.ports["etcd-client"], "http://127.0.0.1:%d" % self.ports["etcd-peer"]
        process = self._spawn("etcd", [
            binaries["etcd"], "--name", "lab", "--data-dir", self.dir / "etcd",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "lab=" + peer,
            "--cert-file", p / "etcd-server.crt", "--key-file", p / "etcd-server.key", "--client-cert-auth",
            "--trusted-ca-file", p / "ca.crt",
            # a test lab: losing the last writes on a power cut is fine, waiting on fsync is not
            "--unsafe-no-fsync", "--log-level", "warn", "--quota-backend-bytes", str(2 * 1024 ** 3),
        ])
        processes.wait_for(lambda: "ready to serve client requests" in self._log("etcd") or self._etcd_healthy(), 30,
                           "etcd to serve", process, self._log_path("etcd"))

    def _etcd_healthy(self):
        import ssl  # pylint: disable=import-outside-toplevel
        import http.client  # pylint: disable=import-outside-toplevel

        context = ssl.create_default_context(cafile=self.ca_file)
        context.load_cert_chain(str(self.pki_dir / "apiserver-etcd-client.crt"), str(self.pki_dir / "apiserver-etcd-client.key"))
        conn = http.client.HTTPSConnection("127.0.0.1", self.ports["etcd-client"], context=context, timeout=2)
        try:
            conn.request("GET", "/health")
            return json.loads(conn.getresponse().read()).get("health") == "true"
        finally:
            conn.close()

    def _start_apiserver(self, binaries):
        p = self.pki_dir
        process = self._spawn("kube-apiserver", [
            binaries["kube-apiserver"],
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", self.ports["kube-apiserver"],
            "--etcd-servers", "https://127.0.0.1:%d" % self.ports["etcd-client"],
            "--etcd-cafile", p / "ca.crt", "--etcd-certfile", p / "apiserver-etcd-client.crt", "--etcd-keyfile", p / "apiserver-etcd-client.key",
            "--tls-cert-file", p / "apiserver.crt", "--tls-private-key-file", p / "apiserver.key", "--client-ca-file", p / "ca.crt",
            "--authorization-mode", "Node,RBAC",
            # as every kubeadm, kind or managed cluster: privileged containers are a matter of Pod Security
            # admission, not refused outright (GPU/DRA/node agents of real charts are privileged DaemonSets)
            "--allow-privileged=true",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", p / "sa.pub", "--service-account-signing-key-file", p / "sa.key",
            "--service-cluster-ip-range", SERVICE_CIDR,
            "--audit-policy-file", self.dir / "audit-policy.yaml", "--audit-log-path", self.audit_log,
            "--audit-log-format", "json", "--audit-log-mode", "blocking", "--audit-log-maxsize", "0",
            # the endpoint reconciler refuses a loopback advertise address; nothing in the lab
            # reaches the API through the `kubernetes` Service's endpoints anyway
            "--endpoint-reconciler-type", "none",
            # without it, SIGTERM waits for every open watch to be closed by its client (a restart
            # then took the whole SIGKILL fallback); with it, watches are ended within 2 s
            "--shutdown-watch-termination-grace-period", "2s",
            "--profiling=false", "--v", "1",
        ])
        processes.wait_for(self._readyz, START_TIMEOUT, "kube-apiserver /readyz", process, self._log_path("kube-apiserver"))

    def _readyz(self):
        return self.admin.request("GET", "/readyz", accept="text/plain") == "ok"

    def _start_controllers(self, binaries, only=None):
        p = self.pki_dir
        if only in (None, "kube-controller-manager"):
            kubeconfig = self._component_kubeconfig("controller-manager", "controller-manager")
            self._spawn("kube-controller-manager", [
                binaries["kube-controller-manager"], "--kubeconfig", kubeconfig,
                "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
                "--secure-port", "0", "--leader-elect=false", "--use-service-account-credentials",
                "--service-account-private-key-file", p / "sa.key", "--root-ca-file", p / "ca.crt",
                "--cluster-signing-cert-file", p / "ca.crt", "--cluster-signing-key-file", p / "ca.key",
                "--service-cluster-ip-range", SERVICE_CIDR, "--controllers", "*",
                # the lab's bursts (a helm install creates dozens of objects at once) must not queue
                # behind client-side rate limits meant for clusters of thousands of nodes
                "--kube-api-qps", "200", "--kube-api-burst", "400", "--v", "1",
            ])
        if only in (None, "kube-scheduler"):
            kubeconfig = self._component_kubeconfig("scheduler", "scheduler")
            config = self.dir / "scheduler.yaml"
            config.write_text(yaml.safe_dump({
                "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": kubeconfig, "qps": 200, "burst": 400},
                "leaderElection": {"leaderElect": False},
            }), encoding="utf-8")
            self._spawn("kube-scheduler", [
                binaries["kube-scheduler"], "--config", config, "--authentication-kubeconfig", kubeconfig,
                "--authorization-kubeconfig", kubeconfig, "--secure-port", "0", "--v", "1",
            ])
        if only in (None, "kwok"):
            kubeconfig = self._component_kubeconfig("kwok", "kwok")
            self._spawn("kwok", [
                binaries["kwok"], "--kubeconfig", kubeconfig, "--config", self.dir / "kwok.yaml",
                "--manage-nodes-with-annotation-selector", "%s=fake" % stages.FAKE_NODE_ANNOTATION,
                "--node-lease-duration-seconds", "40", "--server-address", "127.0.0.1:%d" % processes.free_port(),
                "--cidr", "10.244.0.0/16", "--node-ip", "10.0.0.1",
            ])
        if only is None:
            write_kubeconfig(self.kubeconfig, self.server, self.ca_file,
                             {"client-certificate": str(p / "admin.crt"), "client-key": str(p / "admin.key")})

    def _create_nodes(self):
        for index, spec in enumerate(self.nodes):
            self.admin.create("/api/v1/nodes", node_object(spec, index))

    def _wait_ready(self):
        processes.wait_for(self._readyz, START_TIMEOUT, "kube-apiserver /readyz")
        processes.wait_for(lambda: self.admin.exists("/api/v1/namespaces/default/serviceaccounts/default"), START_TIMEOUT,
                           "the default ServiceAccount", self.processes.get("kube-controller-manager"),
                           self._log_path("kube-controller-manager"))
        processes.wait_for(self._nodes_ready, START_TIMEOUT, "every node Ready", self.processes.get("kwok"), self._log_path("kwok"))

    def _nodes_ready(self):
        names = {n["name"] for n in self.nodes}
        ready = set()
        for node in self.admin.get("/api/v1/nodes").get("items", []):
            conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
            if conditions.get("Ready") == "True":
                ready.add(node["metadata"]["name"])
        return names <= ready

    def _log_path(self, name):
        return str(self.logs_dir / ("%s.log" % name))

    def _log(self, name):
        try:
            return Path(self._log_path(name)).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


__all__ = ["ApiError", "ControlPlane", "default_nodes", "node_object", "write_kubeconfig"]
