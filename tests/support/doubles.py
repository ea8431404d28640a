"""The test doubles of the collection tests: one in-memory cluster and one helm, besides the lab's real control plane.

``FakeCluster`` implements the collection's client interface (``_kube.client.KubeClient``: get/list/apply/delete/
create/replace/is_namespaced/is_served, ``request("GET", "/apis")``) over a dict, with a controllable clock: objects
annotated ``fake.aicr.io/ready-after-seconds`` become Ready (kind-appropriate status) that many seconds after
creation; ``fake.aicr.io/fail`` makes them fail. Every mutating call is recorded in ``audit``. ``on_read`` hooks
compute an object when it is read (a node whose allocatable GPUs change while a test runs). The fabric tests drive
the real ``KubernetesClusterView`` over it (``add_node``, ``add_gpu_pod``, ``add_claim``, ``serve``).

``FakeHelm`` installs charts defined in Python into the fake cluster, stores releases exactly as helm's Secret
driver does (base64 of gzip JSON) and answers ``upgrade`` as ``helm upgrade --output json`` does (the release).

``SilentServer`` is an API server that accepts every connection and never answers (a hung API server, a proxy that
holds requests): a socket on 127.0.0.1 and one thread, with a kubeconfig naming it.
"""

import base64
import copy
import gzip
import io
import json
import os
import socket
import tarfile
import threading
import time

import yaml
# imported from here by tests
from waiting import wait_for  # noqa: F401  pylint: disable=import-error,unused-import

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, NotServed
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import Revision

READY_AFTER = "fake.aicr.io/ready-after-seconds"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FAIL = "fake.aicr.io/fail"

BUILTIN_KINDS = {
    ("v1", "ConfigMap"): True, ("v1", "Secret"): True, ("v1", "Service"): True, ("v1", "Namespace"): False,
    ("v1", "ServiceAccount"): True, ("apps/v1", "Deployment"): True, ("apps/v1", "DaemonSet"): True,
    ("apps/v1", "StatefulSet"): True, ("batch/v1", "Job"): True, ("coordination.k8s.io/v1", "Lease"): True,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): False, ("rbac.authorization.k8s.io/v1", "ClusterRole"): False,
    ("v1", "Node"): False, ("v1", "Pod"): True, ("resource.k8s.io/v1", "ResourceSlice"): False, ("resource.k8s.io/v1", "ResourceClaim"): True,
}
STATIC_KINDS = ("ConfigMap", "Secret", "Service", "Namespace", "ServiceAccount", "Lease", "ClusterRole", "Node", "Pod", "ResourceSlice",
                "ResourceClaim")


class FakeClock:
    """Monotonic time that is real time plus a manual offset (so sleeps can be skipped)."""

    def __init__(self):
        self.offset = 0.0
        self.lock = threading.Lock()

    def __call__(self):
        return time.monotonic() + self.offset

    def advance(self, seconds):
        with self.lock:
            self.offset += seconds


def _ready_status(obj):
    kind = obj["kind"]
    if kind == "Deployment":
        n = (obj.get("spec") or {}).get("replicas", 1)
        return {"observedGeneration": 1, "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n}
    if kind == "DaemonSet":
        return {"desiredNumberScheduled": 1, "updatedNumberScheduled": 1, "numberAvailable": 1, "numberReady": 1}
    if kind == "Job":
        return {"conditions": [{"type": "Complete", "status": "True"}]}
    if kind == "CustomResourceDefinition":
        return {"conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}],
                "acceptedNames": copy.deepcopy((obj.get("spec") or {}).get("names") or {})}
    return {"conditions": [{"type": "Ready", "status": "True"}]}


def _pending_status(obj):
    kind = obj["kind"]
    if kind == "Deployment":
        return {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0, "availableReplicas": 0}
    if kind == "Job":
        return {"active": 1}
    if kind == "DaemonSet":
        return {"desiredNumberScheduled": 1, "updatedNumberScheduled": 0, "numberAvailable": 0, "numberReady": 0}
    return {"conditions": [{"type": "Ready", "status": "False", "reason": "Waiting"}]}


class _Allocatable(dict):
    """A node's allocatable resources whose ``nvidia.com/gpu`` is computed when it is read."""

    def __init__(self, gpus):
        dict.__init__(self, {"nvidia.com/gpu": None})
        self._gpus = gpus

    def get(self, key, default=None):
        if key == "nvidia.com/gpu":
            return str(self._gpus() if callable(self._gpus) else self._gpus)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        return self.get(key)


class FakeCluster:
    def __init__(self, clock=None):
        self.clock = clock or FakeClock()
        self.kinds = dict(BUILTIN_KINDS)
        self.objects = {}
        self.created_at = {}
        self.audit = []
        self.lock = threading.RLock()
        self.rv = 0
        self.fail_apply = {}  # (kind, name) -> message
        self.on_read = {}  # (apiVersion, kind, namespace, name) -> obj -> obj, when read
        for name in ("default", "kube-system"):
            self.objects[("v1", "Namespace", None, name)] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": name}}
            self.created_at[("v1", "Namespace", None, name)] = 0.0

    def _namespaced(self, api_version, kind):
        if (api_version, kind) not in self.kinds:
            raise NotServed("kind %s (%s) not served" % (kind, api_version), status=404)
        return self.kinds[(api_version, kind)]

    def is_namespaced(self, api_version, kind):
        return self._namespaced(api_version, kind)

    def is_served(self, api_version, kind):
        return (api_version, kind) in self.kinds

    def serve(self, api_version, kind, namespaced=True):
        """Serve a kind (as if its CRD were installed)."""
        self.kinds[(api_version, kind)] = namespaced

    server_skew = 0.0  # seconds the API server's clock is ahead of this host's
    version = (1, 37)  # the API server's (major, minor); None: /version cannot be read

    def server_version(self):
        """``KubeClient.server_version``."""
        return self.version

    def server_time(self):
        """The API server's clock (``KubeClient.server_time``): this host's, plus the fake clock's offset and ``server_skew``."""
        return time.time() + self.clock.offset + self.server_skew

    def request(self, method, path, query=None, body=None, **_kwargs):
        """``GET /apis`` (the API groups served), and a CRD read or server-side applied (``_kube.crd``): the raw requests an
        engine makes of this double."""
        if path.startswith(CRD_PATH + "/"):
            name = path[len(CRD_PATH) + 1:]
            if method == "GET":
                found = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
                if found is None:
                    raise ClusterError("customresourcedefinitions %s not found" % name, status=404)
                return found
            assert method == "PATCH", (method, path)
            return self.apply(body, dry_run=bool((query or {}).get("dryRun")), field_manager=(query or {}).get("fieldManager", "aicr-runtime"))
        assert (method, path) == ("GET", "/apis"), (method, path)
        groups = sorted(set(v.split("/", 1)[0] for v, _k in self.kinds if "/" in v))
        return {"kind": "APIGroupList", "groups": [{"name": g} for g in groups]}

    def _key(self, api_version, kind, name, namespace):
        namespaced = self._namespaced(api_version, kind)
        if namespaced and not namespace:
            raise ClusterError("namespace required for %s/%s" % (kind, name), status=400)
        return (api_version, kind, namespace if namespaced else None, name)

    def _observe(self, key, obj):
        obj = copy.deepcopy(obj)
        kind = obj["kind"]
        if kind in STATIC_KINDS:
            hook = self.on_read.get(key)
            return hook(obj) if hook is not None else obj
        ann = (obj["metadata"].get("annotations") or {})
        if ann.get(FAIL):
            if kind == "Job":
                obj["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": ann[FAIL]}]}
            elif kind == "Deployment":
                obj["status"] = {"conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": ann[FAIL]}]}
            else:
                obj["status"] = {"conditions": [{"type": "Stalled", "status": "True", "message": ann[FAIL]}]}
            return obj
        delay = float(ann.get(READY_AFTER, 0))
        age = self.clock() - self.created_at[key]
        obj["status"] = _ready_status(obj) if age >= delay else _pending_status(obj)
        return obj

    def get(self, api_version, kind, name, namespace=None):
        with self.lock:
            try:
                key = self._key(api_version, kind, name, namespace)
            except NotServed:
                return None
            if key not in self.objects:
                return None
            return self._observe(key, self.objects[key])

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        wanted = {}
        for part in (label_selector or "").split(","):
            if "=" in part:
                k, v = part.split("=", 1)
                wanted[k] = v
        node = field_selector.split("=", 1)[1] if field_selector and field_selector.startswith("spec.nodeName=") else None
        with self.lock:
            found = []
            for key, obj in self.objects.items():
                if key[0] != api_version or key[1] != kind or (namespace and key[2] != namespace):
                    continue
                labels = obj["metadata"].get("labels") or {}
                if node is not None and (obj.get("spec") or {}).get("nodeName") != node:
                    continue
                if all(labels.get(k) == v for k, v in wanted.items()):
                    hook = self.on_read.get(key)
                    found.append(hook(copy.deepcopy(obj)) if hook is not None else copy.deepcopy(obj))
            return found

    def _store(self, obj, verb):
        meta = obj.setdefault("metadata", {})
        key = self._key(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"))
        if self._namespaced(obj["apiVersion"], obj["kind"]):
            ns = meta.get("namespace")
            if obj["kind"] != "Namespace" and ("v1", "Namespace", None, ns) not in self.objects:
                raise ClusterError("namespaces %s not found" % ns, status=404)
        existing = self.objects.get(key)
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        if existing is None:
            self.created_at[key] = self.clock()
            meta["uid"] = "uid-%d" % self.rv
        else:
            meta["uid"] = existing["metadata"]["uid"]
        obj.pop("status", None)
        self.objects[key] = obj
        if obj["kind"] == "CustomResourceDefinition":
            spec = obj["spec"]
            for version in spec.get("versions") or []:
                self.kinds[("%s/%s" % (spec["group"], version["name"]), spec["names"]["kind"])] = spec.get("scope", "Namespaced") == "Namespaced"
        self.audit.append((verb, obj["kind"], meta.get("namespace"), meta["name"]))
        return self._observe(key, obj)

    def apply(self, obj, dry_run=False, field_manager="aicr-runtime"):
        with self.lock:
            body = copy.deepcopy(obj)
            meta = body.get("metadata") or {}
            if (obj["kind"], meta.get("name")) in self.fail_apply:
                raise ClusterError(self.fail_apply[(obj["kind"], meta.get("name"))], status=422)
            key = self._key(body["apiVersion"], body["kind"], meta.get("name"), meta.get("namespace"))
            existing = self.objects.get(key)
            if dry_run:
                if existing is None:
                    return body
                merged = copy.deepcopy(body)
                merged["metadata"]["uid"] = existing["metadata"]["uid"]
                merged["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.audit.append(("dry-run-apply", body["kind"], meta.get("namespace"), meta["name"]))
                return self._observe(key, merged)
            managers = [m for m in ((existing or {}).get("metadata") or {}).get("managedFields") or [] if m.get("manager") != field_manager]
            body["metadata"]["managedFields"] = managers + [{"manager": field_manager, "operation": "Apply"}]
            return self._store(body, "apply")

    def create(self, obj):
        with self.lock:
            meta = obj["metadata"]
            key = self._key(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"))
            if key in self.objects:
                raise ClusterError("already exists", status=409)
            return self._store(copy.deepcopy(obj), "create")

    def replace(self, obj):
        with self.lock:
            meta = obj["metadata"]
            key = self._key(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"))
            if key not in self.objects:
                raise ClusterError("not found", status=404)
            if meta.get("resourceVersion") and meta["resourceVersion"] != self.objects[key]["metadata"]["resourceVersion"]:
                raise ClusterError("conflict", status=409)
            return self._store(copy.deepcopy(obj), "replace")

    def delete(self, api_version, kind, name, namespace=None, uid=None, resource_version=None):
        with self.lock:
            try:
                key = self._key(api_version, kind, name, namespace)
            except NotServed:
                return False
            if key not in self.objects:
                return False
            meta = self.objects[key]["metadata"]
            if (uid and meta.get("uid") != uid) or (resource_version and meta.get("resourceVersion") != resource_version):
                raise ClusterError("conflict: precondition failed", status=409)
            del self.objects[key]
            self.audit.append(("delete", kind, namespace, name))
            return True

    def mutations(self):
        return [a for a in self.audit if a[0] in ("apply", "create", "replace", "delete")]

    # -- what the fabric engine reads --------------------------------------------------------------
    def _put(self, obj, namespaced):
        meta = obj["metadata"]
        key = (obj["apiVersion"], obj["kind"], meta.get("namespace") if namespaced else None, meta["name"])
        with self.lock:
            self.objects[key] = obj
            self.created_at[key] = self.clock()
        return key

    def add_node(self, name, machine=None, allocatable=None):
        """A Node whose ``spec.providerID`` is ``fsas-cdi://<machine>``; ``allocatable`` GPUs: a number or a function (read each time)."""
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "spec": {"providerID": "fsas-cdi://%s" % machine if machine else ""}, "status": {"allocatable": {}}}
        key = self._put(node, False)
        if allocatable is not None:
            self.set_allocatable(name, allocatable)
        return key

    def set_allocatable(self, node, gpus):
        """``nvidia.com/gpu`` allocatable on ``node``: a number, or a function called whenever that value is read."""
        def hook(obj):
            obj.setdefault("status", {})["allocatable"] = _Allocatable(gpus)
            return obj
        self.on_read[("v1", "Node", None, node)] = hook

    def add_gpu_pod(self, node, namespace, name, gpus):
        """A running pod on ``node`` that requests ``gpus`` nvidia.com/gpu."""
        self._put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                   "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
                   "status": {"phase": "Running"}}, True)

    def add_claim(self, node, namespace, name, devices, pods=()):
        """A DRA ResourceClaim allocated on ``node`` for ``devices`` ({device name: uuid or None}), reserved for ``pods``."""
        self._put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "%s-%s" % (node, name)},
                   "spec": {"nodeName": node, "pool": {"name": node},
                            "devices": [dict({"name": d}, **({"attributes": {"uuid": {"string": u}}} if u else {})) for d, u in devices.items()]}},
                  False)
        self._put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
                   "status": {"allocation": {"devices": {"results": [{"pool": node, "device": d} for d in devices]}},
                              "reservedFor": [{"resource": "pods", "name": p.split("/")[-1]} for p in pods]}}, True)

    def set_slice_devices(self, node, ids):
        """The ResourceSlice devices published for ``node``: names (a set, or a function returning one, read each time)."""
        key = self._put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "%s-gpus" % node},
                         "spec": {"nodeName": node, "pool": {"name": node}, "devices": []}}, False)

        def hook(obj):
            obj["spec"]["devices"] = [{"name": d} for d in sorted(ids() if callable(ids) else ids)]
            return obj
        self.on_read[key] = hook


def encode_release(release):
    raw = gzip.compress(json.dumps(release).encode("utf-8"))
    return base64.b64encode(base64.b64encode(raw)).decode("ascii")


class FakeHelm:
    """Charts are functions values -> list of docs; releases stored like helm's secret driver."""

    major = 3
    server_validates_fields = False  # set by the engine (HelmRunner.server_validates_fields)

    def __init__(self, cluster, charts=None):
        self.cluster = cluster
        self.charts = charts or {}
        self.calls = []
        self.lock = threading.Lock()
        self.fail = {}  # release -> message
        self.fail_rollback = {}  # release -> message of a failing helm rollback
        self.schemas = {}  # chart -> values.schema.json
        self.defaults = {}  # chart -> values.yaml
        self.chart_files = {}  # chart -> {path inside the chart (crds/x.yaml, charts/sub/crds/y.yaml): text}, in its archive
        self.flags = {}  # release -> the extra flags of its last upgrade (--skip-crds...)

    def _chart_name(self, chart_ref):
        return chart_ref.rstrip("/").split("/")[-1]

    def upgrade(self, release, namespace, chart_ref, repo, version, values, labels, extra_flags=None, atomic=False, timeout=None, workdir=None):
        """Install the chart; the revision, with the release record as ``helm upgrade --output json`` prints it."""
        with self.lock:
            self.calls.append(("upgrade", release, namespace, chart_ref, repo, version))
            self.flags[release] = list(extra_flags or [])
        if release in self.fail:
            raise AicrError("helm upgrade --install %s failed: %s" % (release, self.fail[release]))
        chart = self._chart_name(chart_ref)
        docs = self.charts[chart](values, release, namespace) if chart in self.charts else []
        if ("v1", "Namespace", None, namespace) not in self.cluster.objects:
            self.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for doc in docs:
            doc = copy.deepcopy(doc)
            if self.cluster.is_namespaced(doc["apiVersion"], doc["kind"]):
                doc["metadata"].setdefault("namespace", namespace)
            self.cluster.apply(doc)
        previous = self.cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % release)
        revision = 1 + max([int(s["metadata"]["labels"]["version"]) for s in previous] or [0])
        for secret in previous:
            secret["metadata"]["labels"]["status"] = "superseded"
            self.cluster.replace(secret)
        record = {"name": release, "namespace": namespace, "version": revision, "info": {"status": "deployed"},
                  "chart": {"metadata": {"name": chart, "version": str(version).lstrip("v")}}, "config": values,
                  "manifest": "\n---\n".join(yaml.safe_dump(d) for d in docs)}
        secret_labels = dict(labels or {})
        secret_labels.update({"owner": "helm", "name": release, "status": "deployed", "version": str(revision)})
        self.cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                             "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (release, revision), "namespace": namespace, "labels": secret_labels},
                             "data": {"release": encode_release(record)}})
        return Revision(revision, copy.deepcopy(record))

    def pull(self, chart_ref, repo, version, dest, extra_flags=None, timeout=300):
        """A chart archive with values.yaml and, when ``self.schemas`` has one, values.schema.json."""
        with self.lock:
            self.calls.append(("pull", chart_ref, repo, version))
        chart = self._chart_name(chart_ref)
        os.makedirs(dest, exist_ok=True)
        path = os.path.join(dest, "%s-%s.tgz" % (chart, version))
        with tarfile.open(path, "w:gz") as tar:
            files = {"%s/Chart.yaml" % chart: yaml.safe_dump({"apiVersion": "v2", "name": chart, "version": str(version)}),
                     "%s/values.yaml" % chart: yaml.safe_dump(self.defaults.get(chart, {}))}
            if chart in self.schemas:
                files["%s/values.schema.json" % chart] = json.dumps(self.schemas[chart])
            for inner, text in self.chart_files.get(chart, {}).items():
                files["%s/%s" % (chart, inner)] = text
            for name, text in files.items():
                data = text.encode("utf-8")
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return path

    def uninstall(self, release, namespace, timeout=None):
        with self.lock:
            self.calls.append(("uninstall", release, namespace))
        secrets = self.cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % release)
        for secret in secrets:
            decoded = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
            if secret["metadata"]["labels"]["status"] == "deployed":
                for doc in yaml.safe_load_all(decoded["manifest"]):
                    if doc:
                        self.cluster.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace", namespace))
            self.cluster.delete("v1", "Secret", secret["metadata"]["name"], namespace)

    def rollback(self, release, namespace, revision, timeout=None):
        """Like ``helm rollback``: a new revision with the manifest, values and labels of ``revision``."""
        with self.lock:
            self.calls.append(("rollback", release, namespace, int(revision)))
        if release in self.fail_rollback:
            raise AicrError("helm rollback %s %s failed: %s" % (release, revision, self.fail_rollback[release]))
        secrets = self.cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % release)
        target = [s for s in secrets if s["metadata"]["labels"]["version"] == str(revision)]
        if not target:
            raise AicrError("helm rollback %s %s failed: Error: release: not found" % (release, revision))
        record = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(target[0]["data"]["release"]))))
        for doc in yaml.safe_load_all(record["manifest"]):
            if doc:
                if self.cluster.is_namespaced(doc["apiVersion"], doc["kind"]):
                    doc["metadata"].setdefault("namespace", namespace)
                self.cluster.apply(doc)
        new = 1 + max(int(s["metadata"]["labels"]["version"]) for s in secrets)
        for secret in secrets:
            if secret["metadata"]["labels"]["status"] == "deployed":
                secret["metadata"]["labels"]["status"] = "superseded"
                self.cluster.replace(secret)
        record = dict(record, version=new, info={"status": "deployed", "description": "Rollback to %s" % revision})
        labels = dict(target[0]["metadata"]["labels"], status="deployed", version=str(new))
        self.cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                             "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (release, new), "namespace": namespace, "labels": labels},
                             "data": {"release": encode_release(record)}})

    def template(self, release, chart_dir, namespace, values_file, output_dir, timeout=120):
        """Like ``helm template --output-dir`` without templating: copies the files."""
        with self.lock:
            self.calls.append(("template", release))
        for wave in ("pre", "post"):
            src = os.path.join(chart_dir, "templates", wave)
            if not os.path.isdir(src):
                continue
            dst = os.path.join(output_dir, "chart", "templates", wave)
            os.makedirs(dst, exist_ok=True)
            for name in os.listdir(src):
                with open(os.path.join(src, name)) as handle, open(os.path.join(dst, name), "w") as out:
                    out.write(handle.read())

    def upgrades(self):
        return [c for c in self.calls if c[0] == "upgrade"]


def deployment(name, delay=0.0, fail=None, replicas=1):
    ann = {READY_AFTER: str(delay)}
    if fail:
        ann[FAIL] = fail
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "annotations": ann},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


class SilentServer:
    """Accepts every TCP connection on 127.0.0.1 and never reads or answers; ``accepted`` counts the connections."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.accepted = 0
        self._held = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._held.append(conn)  # held open, never read: the client waits for an answer that never comes
            self.accepted += 1

    def kubeconfig(self, path):
        """A kubeconfig file (a bearer token) naming this server; its path."""
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "silent",
                  "clusters": [{"name": "silent", "cluster": {"server": self.url}}],
                  "users": [{"name": "silent", "user": {"token": "not-a-real-token"}}],
                  "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "silent"}}]}
        with open(str(path), "w") as handle:
            yaml.safe_dump(config, handle)
        return str(path)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()
        for conn in self._held:
            conn.close()


class Fakes(object):
    """The doubles, for tests that build several instances (the ``fakes`` fixture)."""

    FakeCluster = FakeCluster
    FakeHelm = FakeHelm
    FakeClock = FakeClock
    SilentServer = SilentServer
    deployment = staticmethod(deployment)
    READY_AFTER = READY_AFTER
    FAIL = FAIL
