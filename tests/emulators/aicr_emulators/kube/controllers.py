"""Simulated controllers: CRD establishment, namespaces, garbage collection and workloads.

A background thread reconciles when woken: right after a write from the API, at the moment the
earliest readiness timer expires, and at the latest every ``tick_seconds`` (a fallback, so a change
the wake-ups miss cannot stall anything). One wake-up repeats the reconcile steps until they write
nothing more, so a status change travels up the ownership chain (pod > ReplicaSet > Deployment) at
once instead of one level per tick. Readiness of workloads is decided per object by annotations
(``emulator.aicr.io/ready-after-seconds``, ``never-ready``, ``fail``), by readiness rules set
through the control API, or by the default delay.
"""

import copy
import json
import threading
import time
import uuid

from .store import ANNOTATION_PREFIX, CRD_CLEANUP_FINALIZER, ApiError, match_rule, now_iso, template_hash

CM = "kube-controller-manager"

# Reconcile passes per wake-up at most. Each pass can move a status one level up the ownership chain
# (pod > ReplicaSet > Deployment, pod > Job); a bound stops a controller that always writes from spinning.
MAX_PASSES_PER_TICK = 6
# After a write wakes the controllers, how long they wait for the rest of the client's burst of writes.
WRITE_BATCH_SECONDS = 0.005


def _status_copy(obj):
    """A copy a controller may change the status and metadata of; spec and the rest are shared, not copied.

    Every pass of every controller copies each object it looks at, and a full deep copy of every
    workload (pod templates included) on every pass was most of the emulator's CPU.
    """
    new = dict(obj)
    meta = dict(obj.get("metadata") or {})
    for mutable in ("annotations", "labels"):  # the only metadata these controllers change (managedFields are replaced on write)
        if mutable in meta:
            meta[mutable] = dict(meta[mutable])
    new["metadata"] = meta
    if "status" in obj:
        new["status"] = copy.deepcopy(obj["status"])
    return new


def default_nodes(count=3, labels=None, gpus=0):
    """Fake nodes with capacity/allocatable, labels and a providerID."""
    nodes = []
    for idx in range(1, count + 1):
        name = "node-%d" % idx
        node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
                       "node.kubernetes.io/instance-type": "emulated.xlarge", "topology.kubernetes.io/zone": "zone-a"}
        node_labels.update(labels or {})
        capacity = {"cpu": "16", "memory": "65536Mi", "pods": "110", "ephemeral-storage": "100Gi"}
        if gpus:
            capacity["nvidia.com/gpu"] = str(gpus)
        nodes.append({"name": name, "labels": node_labels, "capacity": capacity, "providerID": "emulator://aicr/%s" % name})
    return nodes


def node_object(spec):
    capacity = dict(spec.get("capacity") or {"cpu": "16", "memory": "65536Mi", "pods": "110"})
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": spec["name"], "labels": dict(spec.get("labels") or {}),
                        "annotations": dict(spec.get("annotations") or {})},
           "spec": {"providerID": spec.get("providerID", "emulator://aicr/%s" % spec["name"])},
           "status": node_status(capacity, spec.get("allocatable"))}
    if spec.get("taints"):
        obj["spec"]["taints"] = spec["taints"]
    return obj


def node_status(capacity, allocatable=None):
    stamp = now_iso()
    return {"capacity": capacity, "allocatable": dict(allocatable or capacity),
            "conditions": [
                {"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": stamp,
                 "lastTransitionTime": stamp} for t, r, m in (
                    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.35.0",
                         "kubeProxyVersion": "v1.35.0", "containerRuntimeVersion": "containerd://2.0.0",
                         "kernelVersion": "6.1.0-emulated", "osImage": "Ubuntu 24.04 LTS (emulated)",
                         "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, "node").hex, "systemUUID": str(uuid.uuid4()),
                         "bootID": str(uuid.uuid4())}}


def _cond(conds, ctype, status, reason, message):
    """Set a condition, keeping lastTransitionTime when the status does not change."""
    stamp = now_iso()
    for cond in conds:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = stamp
            cond.update({"status": status, "reason": reason, "message": message})
            if "lastUpdateTime" in cond:
                cond["lastUpdateTime"] = cond.get("lastUpdateTime") if cond.get("reason") == reason else stamp
            return conds
    conds.append({"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp})
    return conds


def _owner_ref(obj, kind, api_version):
    return {"apiVersion": api_version, "kind": kind, "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _controller_uid(obj):
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


def _selector_matches(node_labels, pod_spec):
    selector = (pod_spec or {}).get("nodeSelector") or {}
    if any(node_labels.get(k) != v for k, v in selector.items()):
        return False
    affinity = (((pod_spec or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = affinity.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        ok = True
        for expr in term.get("matchExpressions") or []:
            key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
            present = key in node_labels
            value = node_labels.get(key)
            if op == "In" and value not in values or op == "NotIn" and present and value in values:
                ok = False
            elif op == "Exists" and not present or op == "DoesNotExist" and present:
                ok = False
            elif op in ("Gt", "Lt"):
                try:
                    num, ref = int(value), int(values[0])
                    ok = ok and (num > ref if op == "Gt" else num < ref)
                except (TypeError, ValueError, IndexError):
                    ok = False
        if ok:
            return True
    return False


def _tolerates(taints, tolerations):
    for taint in taints or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        tolerated = False
        for tol in tolerations or []:
            if tol.get("effect") and tol.get("effect") != taint.get("effect"):
                continue
            if tol.get("operator") == "Exists" and (not tol.get("key") or tol.get("key") == taint.get("key")):
                tolerated = True
            elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
                tolerated = True
        if not tolerated:
            return False
    return True


class Controllers:
    """The reconcilers, run from one background thread (and from tests via ``tick()``)."""

    def __init__(self, emulator):
        self.emu = emulator
        self.store = emulator.store
        self.registry = emulator.registry
        self.seen = {}
        self._stop = threading.Event()
        self.thread = None
        self.ticks = 0
        self.errors = 0
        self._last_rv = None
        self._last_rules = None
        self.recorded = set()
        self._timers_pending = False
        self.ip_counter = 10
        # wake-ups of the controller thread: set by API writes, control changes and stop()
        self._wake = threading.Event()
        self._thread_ident = None
        # monotonic time at which the earliest running readiness timer expires (None: no timer running)
        self.next_deadline = None
        self.passes = 0  # reconcile passes (a tick runs one or more)
        self.last_tick_seconds = 0.0  # how long the last tick that reconciled took
        self._urgent = False  # a request waits for the next tick (await_reconcile): no batching
        self._written_at = {}  # (uid, generation) -> when it was written; (uid, None) -> when it was created
        self._settled_pods = {}  # uid -> (resourceVersion, readiness state) of pods whose status was already right
        self.wakeups = {"write": 0, "timer": 0, "periodic": 0}
        # ticks started / finished by the controller thread, so a request can wait for a tick that saw its write
        self._tick_done = threading.Condition()
        self._ticks_started = 0
        self._ticks_finished = 0
        self.store.on_commit.append(self._on_store_commit)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self):
        self._stop.clear()
        self.thread = threading.Thread(target=self._loop, name="kube-emulator-controllers", daemon=True)
        self.thread.start()

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
            self.thread = None

    def wake(self):
        """Reconcile now rather than at the next periodic tick (after a change the store does not see)."""
        self._wake.set()

    def await_reconcile(self, timeout=1.0):
        """Wait until a reconcile tick that started after this call has finished; False if none did in time.

        Called after a write has committed: that tick has seen the write. Returns at once on the controller
        thread itself or when the thread is not running.
        """
        thread = self.thread
        if thread is None or not thread.is_alive() or threading.get_ident() == self._thread_ident:
            return False
        with self._tick_done:
            target = self._ticks_started + 1
            self._urgent = True  # the request is waiting: do not hold the tick back for the rest of a burst
            self._wake.set()
            return self._tick_done.wait_for(lambda: self._ticks_finished >= target or self._stop.is_set(), timeout)

    def _on_store_commit(self, _rtype, etype, obj):
        # A readiness delay counts from the write that created the object (or changed its spec), not from
        # the moment a tick first sees it: record when each generation was written.
        meta = (obj or {}).get("metadata") or {}
        if etype in ("ADDED", "MODIFIED") and meta.get("uid"):
            now = time.monotonic()
            self._written_at.setdefault((meta["uid"], meta.get("generation")), now)
            if etype == "ADDED":
                self._written_at.setdefault((meta["uid"], None), now)
        # Writes by the controller thread itself need no wake-up: the running tick repeats its passes
        # until nothing more is written. Anything else (API requests, bootstrap, tests) wakes it.
        if threading.get_ident() != self._thread_ident:
            self._wake.set()

    def _loop(self):
        self._thread_ident = threading.get_ident()
        saved_rv, saved_at = self.store.rv, time.monotonic()
        while not self._stop.is_set():
            # cleared before reconciling: a write landing during the tick sets it again and is not lost
            self._wake.clear()
            with self._tick_done:
                self._ticks_started += 1
            try:
                self.tick()
                if self.emu.options.state_file and self.store.rv != saved_rv and time.monotonic() - saved_at >= 1.0:
                    saved_rv, saved_at = self.store.rv, time.monotonic()
                    self.emu.save_state()  # at most once a second, so a killed emulator loses little
            except Exception:  # pylint: disable=broad-except
                import traceback  # pylint: disable=import-outside-toplevel
                traceback.print_exc()
            finally:
                with self._tick_done:
                    self._ticks_finished += 1
                    self._tick_done.notify_all()
            period = self.emu.options.tick_seconds
            deadline = self.next_deadline
            timeout = period if deadline is None else max(0.0, min(period, deadline - time.monotonic()))
            if self._wake.wait(timeout):
                self.wakeups["write"] += 1
                # A client writes in bursts (helm: namespace, release Secret, objects, Secret again, ms apart)
                # and every reconcile pass walks all objects: gather the rest of the burst into one tick. The
                # wait grows with the cost of a tick, so the controllers take at most about a third of a core
                # however many objects the emulator holds (readiness timers are not delayed by this).
                if not self._urgent:
                    self._stop.wait(max(WRITE_BATCH_SECONDS, 2 * self.last_tick_seconds))
                self._urgent = False
            elif deadline is not None and time.monotonic() >= deadline:
                self.wakeups["timer"] += 1
            else:
                self.wakeups["periodic"] += 1

    def rtype(self, group, plural):
        return self.registry.lookup_group_resource(group, plural)

    def bootstrap(self, nodes):
        store = self.store
        with store.lock:
            ns_type = self.rtype("", "namespaces")
            for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
                if store.raw_get("", "namespaces", "", name) is None:
                    store.system_write(ns_type, {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                                                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
                                       manager="kube-apiserver")
            for spec in nodes:
                if store.raw_get("", "nodes", "", spec["name"]) is None:
                    store.system_write(self.rtype("", "nodes"), node_object(spec), manager="kubelet")
            if store.raw_get("", "services", "default", "kubernetes") is None:
                store.system_write(self.rtype("", "services"), {
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                             "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                             "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"},
                    "status": {"loadBalancer": {}}}, manager="kube-apiserver")
            for name, value in (("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000)):
                if store.raw_get("scheduling.k8s.io", "priorityclasses", "", name) is None:
                    store.system_write(self.rtype("scheduling.k8s.io", "priorityclasses"), {
                        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                        "value": value, "preemptionPolicy": "PreemptLowerPriority",
                        "description": "Used for system critical pods that must not be moved from their current node."},
                        manager="kube-apiserver")
            if store.raw_get("storage.k8s.io", "storageclasses", "", "standard") is None:
                store.system_write(self.rtype("storage.k8s.io", "storageclasses"), {
                    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                    "provisioner": "emulator.aicr.io/hostpath", "reclaimPolicy": "Delete",
                    "volumeBindingMode": "Immediate"}, manager="kube-apiserver")
            self._namespace_defaults()

    # ---- readiness ---------------------------------------------------------------------------

    def state_of(self, obj, kind, key_extra=None):
        """'ready', 'pending' or 'failed' for an object, per annotations, control rules and default delay."""
        meta = obj.get("metadata") or {}
        annotations = dict(((((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations")) or {})
        annotations.update(meta.get("annotations") or {})
        rule = None
        with self.emu.control_lock:
            for candidate in self.emu.readiness_rules:
                if match_rule(candidate, kind, meta.get("namespace", ""), meta.get("name", "")):
                    rule = candidate
                    break
        rule = rule or {}
        fail = annotations.get(ANNOTATION_PREFIX + "fail", "").lower() == "true" or bool(rule.get("fail"))
        never = annotations.get(ANNOTATION_PREFIX + "never-ready", "").lower() == "true" or bool(rule.get("neverReady"))
        delay = self.emu.options.default_ready_after
        if rule.get("readyAfterSeconds") is not None:
            delay = float(rule["readyAfterSeconds"])
        if annotations.get(ANNOTATION_PREFIX + "ready-after-seconds"):
            try:
                delay = float(annotations[ANNOTATION_PREFIX + "ready-after-seconds"])
            except ValueError:
                pass
        key = (kind, meta.get("namespace", ""), meta.get("name"), meta.get("uid"),
               meta.get("generation") if key_extra is None else key_extra)
        now = time.monotonic()
        written = self._written_at.get((meta.get("uid"), meta.get("generation") if key_extra is None else None), now)
        started = self.seen.setdefault(key, min(written, now))
        if never and not fail:
            return "pending"
        if now - started < delay:
            # a later tick must look again even if nothing is written: at the moment this timer expires
            self._timers_pending = True
            expires = started + delay
            if self.next_deadline is None or expires < self.next_deadline:
                self.next_deadline = expires
            return "pending"
        return "failed" if fail else "ready"

    def top_owner(self, obj):
        """Follow controller ownerReferences up to the top (Deployment > ReplicaSet > Pod)."""
        cur = obj
        for _attempt in range(5):
            refs = [r for r in (cur.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")]
            if not refs:
                return cur
            ref = refs[0]
            group = ref.get("apiVersion", "").split("/")[0] if "/" in ref.get("apiVersion", "") else ""
            rtype = self.registry.by_kind(group, ref.get("kind"))
            if rtype is None:
                return cur
            owner = self.store.raw_get(rtype.group, rtype.plural, cur["metadata"].get("namespace", "")
                                       if rtype.namespaced else "", ref.get("name"))
            if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
                return cur
            cur = owner
        return cur

    # ---- the tick ----------------------------------------------------------------------------

    def tick(self, force=False):
        """Reconcile if anything changed or a readiness timer expired; returns the number of passes run."""
        with self.store.lock:
            with self.emu.control_lock:
                rules = json.dumps(self.emu.readiness_rules, sort_keys=True, default=str)
            timer_due = self._timers_pending and (self.next_deadline is None or time.monotonic() >= self.next_deadline)
            idle = (self.store.rv == self._last_rv and rules == self._last_rules and not timer_due
                    and not self.store.gc_dirty and not self.store.crd_dirty)
            if idle and not force:
                # nothing changed and no readiness timer has expired yet: reconciling would write nothing
                return 0
            self.ticks += 1
            began = time.monotonic()
            passes = 0
            settled = False
            while True:
                rv_before = self.store.rv
                # every pass recomputes the running timers, so the earliest deadline is always current
                self._timers_pending = False
                self.next_deadline = None
                self._reconcile_once()
                passes += 1
                if self.store.rv == rv_before:
                    settled = True  # a pass that wrote nothing: the next would not either
                    break
                if passes >= MAX_PASSES_PER_TICK:
                    break  # the rest is left to the next tick, which must not take it for idle (below)
            self.passes += passes
            self.last_tick_seconds = time.monotonic() - began
            if len(self.seen) > 50000:
                self.seen.clear()
            if len(self._settled_pods) > 50000:
                self._settled_pods.clear()
            if len(self._written_at) > 100000:
                self._written_at.clear()
            self._last_rv, self._last_rules = (self.store.rv if settled else None), rules
            return passes

    def _reconcile_once(self):
        for step in (self._crds, self.store.sync_crds, self._namespaces, self._gc, self._nodes, self._deployments,
                     self._replicasets, self._statefulsets, self._daemonsets, self._jobs, self._pods,
                     self._simple_status):
            try:
                step()
            except Exception:  # pylint: disable=broad-except
                # one controller failing on an odd object must not stall the others
                self.errors += 1
                if self.errors <= 20:
                    import traceback  # pylint: disable=import-outside-toplevel
                    traceback.print_exc()

    def _write(self, group, plural, new, old, subresource="status"):
        rtype = self.rtype(group, plural)
        if rtype is None:
            return None
        return self.store.system_write(rtype, new, old, CM, subresource)

    def _delete(self, group, plural, obj):
        rtype = self.rtype(group, plural)
        if rtype is not None:
            self.store.system_delete(rtype, obj)

    # ---- CRDs, namespaces, GC ------------------------------------------------------------------

    def _crds(self):
        store = self.store
        for crd in store.iter_objects("apiextensions.k8s.io", "customresourcedefinitions"):
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            status = crd.get("status") or {}
            if crd["metadata"].get("deletionTimestamp"):
                new = copy.deepcopy(crd)
                conds = new.setdefault("status", {}).setdefault("conditions", [])
                _cond(conds, "Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
                rtype = self.registry.lookup_group_resource(spec.get("group"), names.get("plural"))
                remaining = store.iter_objects(spec.get("group"), names.get("plural"))
                if rtype is not None and rtype.crd is not None:
                    for obj in remaining:
                        if not obj["metadata"].get("deletionTimestamp"):
                            store.system_delete(rtype, obj)
                    remaining = store.iter_objects(spec.get("group"), names.get("plural"))
                if not remaining:
                    new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or []
                                                     if f != CRD_CLEANUP_FINALIZER]
                self._write("apiextensions.k8s.io", "customresourcedefinitions", new, crd)
                continue
            storage = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]
            conds = status.get("conditions") or []
            established = any(c.get("type") == "Established" and c.get("status") == "True" for c in conds)
            stored_now = status.get("storedVersions") or []
            if established and status.get("acceptedNames") == names and all(v in stored_now for v in storage):
                continue
            new = copy.deepcopy(crd)
            new_status = new.setdefault("status", {})
            new_conds = new_status.setdefault("conditions", [])
            conflict = None
            for other in store.iter_objects("apiextensions.k8s.io", "customresourcedefinitions"):
                if other is crd or (other.get("spec") or {}).get("group") != spec.get("group"):
                    continue
                onames = (other.get("spec") or {}).get("names") or {}
                if onames.get("kind") == names.get("kind"):
                    conflict = '"%s" is already in use' % names.get("kind")
            if conflict:
                _cond(new_conds, "NamesAccepted", "False", "KindConflict", conflict)
                _cond(new_conds, "Established", "False", "NotAccepted", "not all names are accepted")
            else:
                _cond(new_conds, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
                _cond(new_conds, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
                new_status["acceptedNames"] = copy.deepcopy(names)
            stored = list(new_status.get("storedVersions") or [])
            for ver in storage:
                if ver not in stored:
                    stored.append(ver)
            new_status["storedVersions"] = stored
            self._write("apiextensions.k8s.io", "customresourcedefinitions", new, crd)

    def _namespaces(self):
        store = self.store
        terminating = [ns for ns in store.iter_objects("", "namespaces") if ns["metadata"].get("deletionTimestamp")]
        for nsobj in terminating:
            name = nsobj["metadata"]["name"]
            remaining = 0
            for (group, plural), bucket in list(store.objects.items()):
                rtype = self.rtype(group, plural)
                if rtype is None or not rtype.namespaced:
                    continue
                for (obj_ns, _name), obj in list(bucket.items()):
                    if obj_ns != name:
                        continue
                    remaining += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        store.system_delete(rtype, obj)
            if remaining == 0 or not any(ns_obj_ns == name for bucket in store.objects.values()
                                         for (ns_obj_ns, _n) in bucket):
                new = copy.deepcopy(nsobj)
                new.setdefault("spec", {})["finalizers"] = []
                new.setdefault("status", {})["phase"] = "Terminating"
                self._write("", "namespaces", new, nsobj, subresource="finalize")
            else:
                new = copy.deepcopy(nsobj)
                conds = new.setdefault("status", {}).setdefault("conditions", [])
                _cond(conds, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                      "Some resources are remaining: %d objects" % remaining)
                self._write("", "namespaces", new, nsobj)
        self._namespace_defaults()

    def _namespace_defaults(self):
        store = self.store
        for nsobj in store.iter_objects("", "namespaces"):
            if nsobj["metadata"].get("deletionTimestamp"):
                continue
            name = nsobj["metadata"]["name"]
            if store.raw_get("", "serviceaccounts", name, "default") is None:
                self._write("", "serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                    "metadata": {"name": "default", "namespace": name}}, None)
            if store.raw_get("", "configmaps", name, "kube-root-ca.crt") is None:
                self._write("", "configmaps", {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "namespace": name,
                                 "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to "
                                                 "verify the kube-apiserver when using internal endpoints such as the "
                                                 "internal service IP or kubernetes.default.svc. No other usage is "
                                                 "guaranteed across distributions of Kubernetes clusters."}},
                    "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nZW11bGF0b3I=\n-----END CERTIFICATE-----\n"}}, None)

    def _gc(self):
        store = self.store
        if not store.gc_dirty:
            return
        store.gc_dirty = False
        alive = {}
        for bucket in store.objects.values():
            for obj in bucket.values():
                alive[obj["metadata"].get("uid")] = obj
        for (group, plural), bucket in list(store.objects.items()):
            rtype = self.rtype(group, plural)
            if rtype is None:
                continue
            for obj in list(bucket.values()):
                meta = obj["metadata"]
                refs = meta.get("ownerReferences") or []
                if refs and not meta.get("deletionTimestamp"):
                    owners = [alive.get(r.get("uid")) for r in refs]
                    if all(o is None for o in owners):
                        store.system_delete(rtype, obj)
                        continue
                    if any(o is not None and "foregroundDeletion" in (o["metadata"].get("finalizers") or [])
                           and o["metadata"].get("deletionTimestamp") for o in owners):
                        store.system_delete(rtype, obj)
                        continue
                if meta.get("deletionTimestamp") and "foregroundDeletion" in (meta.get("finalizers") or []):
                    uid = meta.get("uid")
                    if not any(uid in [r.get("uid") for r in (o["metadata"].get("ownerReferences") or [])]
                               for o in alive.values()):
                        new = copy.deepcopy(obj)
                        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != "foregroundDeletion"]
                        store.system_write(rtype, new, obj, "garbage-collector", "")
                    else:
                        store.gc_dirty = True

    # ---- nodes ---------------------------------------------------------------------------------

    def _nodes(self):
        for node in self.store.iter_objects("", "nodes"):
            status = node.get("status") or {}
            if status.get("conditions") and status.get("nodeInfo"):
                continue
            new = copy.deepcopy(node)
            defaults = node_status(status.get("capacity") or {"cpu": "16", "memory": "65536Mi", "pods": "110"},
                                   status.get("allocatable"))
            defaults.update({k: v for k, v in status.items() if v})
            new["status"] = defaults
            self._write("", "nodes", new, node)

    def schedulable_nodes(self, pod_spec):
        out = []
        for node in sorted(self.store.iter_objects("", "nodes"), key=lambda n: n["metadata"]["name"]):
            labels = node["metadata"].get("labels") or {}
            if not _selector_matches(labels, pod_spec):
                continue
            if not _tolerates((node.get("spec") or {}).get("taints"), (pod_spec or {}).get("tolerations")):
                continue
            out.append(node["metadata"]["name"])
        return out

    # ---- events ----------------------------------------------------------------------------------

    def event(self, obj, etype, reason, message, component="kube-controller-manager"):
        """Record a core/v1 Event about ``obj`` once per (object uid, reason, message)."""
        meta = obj.get("metadata") or {}
        key = (meta.get("uid"), reason, message)
        if key in self.recorded:
            return
        self.recorded.add(key)
        namespace = meta.get("namespace") or "default"
        if self.store.raw_get("", "namespaces", "", namespace) is None:
            return
        stamp = now_iso()
        api_version = obj.get("apiVersion", "v1")
        self._write("", "events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.%s" % (meta.get("name"), uuid.uuid4().hex[:16]), "namespace": namespace},
            "involvedObject": {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name"),
                               "uid": meta.get("uid"), "apiVersion": api_version,
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": etype, "count": 1, "firstTimestamp": stamp,
            "lastTimestamp": stamp, "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": component}, None)

    # ---- scheduling (opt-in: Options.schedule) ------------------------------------------------

    @property
    def scheduling(self):
        return bool(getattr(self.emu.options, "schedule", False))

    @staticmethod
    def _pod_requests(pod_spec):
        """Integer requests of extended resources (``vendor/name``) of a pod, plus one pod slot."""
        out = {"pods": 1}
        for container in (pod_spec or {}).get("containers") or []:
            resources = (container or {}).get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for key in set(requests) | set(limits):
                if "/" not in key or key.startswith(("kubernetes.io/", "hugepages-")):
                    continue
                try:
                    out[key] = out.get(key, 0) + int(str(requests.get(key, limits.get(key))))
                except ValueError:
                    continue
        return out

    def _usage(self):
        usage = {}
        for pod in self.store.iter_objects("", "pods"):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
                    "Succeeded", "Failed"):
                continue
            bucket = usage.setdefault(node, {})
            for key, value in self._pod_requests(pod.get("spec")).items():
                bucket[key] = bucket.get(key, 0) + value
        return usage

    def pick_node(self, pod_spec):
        """(node name or None, reason) for a pod: selector, required affinity, taints, cordon, extended resources."""
        nodes = sorted(self.store.iter_objects("", "nodes"), key=lambda n: n["metadata"]["name"])
        usage = self._usage()
        wanted = self._pod_requests(pod_spec)
        reasons = {}
        fits = []
        for node in nodes:
            name = node["metadata"]["name"]
            if (node.get("spec") or {}).get("unschedulable"):
                reasons["node(s) were unschedulable"] = reasons.get("node(s) were unschedulable", 0) + 1
                continue
            if not _selector_matches(node["metadata"].get("labels") or {}, pod_spec):
                key = "node(s) didn't match Pod's node affinity/selector"
                reasons[key] = reasons.get(key, 0) + 1
                continue
            if not _tolerates((node.get("spec") or {}).get("taints"), (pod_spec or {}).get("tolerations")):
                reasons["node(s) had untolerated taint"] = reasons.get("node(s) had untolerated taint", 0) + 1
                continue
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            short = None
            for key, value in wanted.items():
                try:
                    limit = int(str(allocatable.get(key, 110 if key == "pods" else 0)))
                except ValueError:
                    limit = 0
                if usage.get(name, {}).get(key, 0) + value > limit:
                    short = key
                    break
            if short:
                key = "Too many pods" if short == "pods" else "Insufficient %s" % short
                reasons[key] = reasons.get(key, 0) + 1
                continue
            fits.append((usage.get(name, {}).get("pods", 0), name))
        if fits:
            return sorted(fits)[0][1], ""
        detail = ", ".join("%d %s" % (count, text) for text, count in sorted(reasons.items()))
        return None, "0/%d nodes are available: %s." % (len(nodes), detail or "no nodes")

    def ready_pods(self, owner):
        """Running and Ready pods controlled by ``owner``."""
        return sum(1 for p in self._owned("", "pods", owner["metadata"].get("namespace"), owner["metadata"].get("uid"))
                   if (p.get("status") or {}).get("phase") == "Running" and any(
                       c.get("type") == "Ready" and c.get("status") == "True" for c in (p.get("status") or {}).get("conditions") or []))

    def _count_ready(self, owner, replicas, state):
        """Ready replicas of a workload: all or none by its readiness state, or (scheduling) its ready pods."""
        if not self.scheduling or not self.emu.options.create_pods:
            return replicas if state == "ready" else 0
        return min(replicas, self.ready_pods(owner)) if state == "ready" else 0

    # ---- workloads -----------------------------------------------------------------------------

    def _owned(self, group, plural, namespace, uid):
        return [o for o in self.store.iter_objects(group, plural)
                if o["metadata"].get("namespace") == namespace and _controller_uid(o) == uid]

    def _deployments(self):
        for dep in self.store.iter_objects("apps", "deployments"):
            meta = dep["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = dep.get("spec") or {}
            replicas = 1 if spec.get("replicas") is None else spec["replicas"]
            template = spec.get("template") or {}  # read only: the ReplicaSet gets a deep copy below
            thash = template_hash(template)
            owned = self._owned("apps", "replicasets", meta.get("namespace"), meta.get("uid"))
            rs_name = "%s-%s" % (meta["name"], thash)
            new_rs = next((r for r in owned if r["metadata"]["name"] == rs_name), None)
            revisions = [int((r["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0") or 0)
                         for r in owned]
            if new_rs is None and not spec.get("paused"):
                labels = dict((template.get("metadata") or {}).get("labels") or {})
                labels["pod-template-hash"] = thash
                rs_template = copy.deepcopy(template)
                rs_template.setdefault("metadata", {})["labels"] = labels
                selector = copy.deepcopy(spec.get("selector") or {})
                selector.setdefault("matchLabels", {})["pod-template-hash"] = thash
                revision = max(revisions or [0]) + 1
                new_rs = self._write("apps", "replicasets", {
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": rs_name, "namespace": meta.get("namespace"), "labels": labels,
                                 "annotations": {"deployment.kubernetes.io/revision": str(revision),
                                                 "deployment.kubernetes.io/desired-replicas": str(replicas),
                                                 "deployment.kubernetes.io/max-replicas": str(replicas + 1)},
                                 "ownerReferences": [_owner_ref(dep, "Deployment", "apps/v1")]},
                    "spec": {"replicas": replicas, "minReadySeconds": spec.get("minReadySeconds", 0), "selector": selector,
                             "template": rs_template}}, None)
                owned.append(new_rs)
                self.event(dep, "Normal", "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d" % (rs_name, replicas),
                           "deployment-controller")
            elif new_rs is not None:
                rev = (new_rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")
                if (new_rs.get("spec") or {}).get("replicas") != replicas or (int(rev or 0) < max(revisions or [0])):
                    updated = copy.deepcopy(new_rs)
                    updated["spec"]["replicas"] = replicas
                    ann = updated["metadata"].setdefault("annotations", {})
                    if int(rev or 0) < max(revisions or [0]):
                        ann["deployment.kubernetes.io/revision"] = str(max(revisions) + 1)
                    ann["deployment.kubernetes.io/desired-replicas"] = str(replicas)
                    new_rs = self._write("apps", "replicasets", updated, new_rs, "")
            state = self.state_of(dep, "Deployment")
            for old_rs in owned:
                if new_rs is not None and old_rs["metadata"]["uid"] == new_rs["metadata"]["uid"]:
                    continue
                if (old_rs.get("spec") or {}).get("replicas", 0) != 0 and state == "ready":
                    updated = copy.deepcopy(old_rs)
                    updated["spec"]["replicas"] = 0
                    self._write("apps", "replicasets", updated, old_rs, "")
            limit = spec.get("revisionHistoryLimit")
            limit = 10 if limit is None else limit
            old_sets = sorted([r for r in owned if new_rs is None or r["metadata"]["uid"] != new_rs["metadata"]["uid"]],
                              key=lambda r: int((r["metadata"].get("annotations") or {}).get(
                                  "deployment.kubernetes.io/revision", "0") or 0))
            while len(old_sets) > limit:
                victim = old_sets.pop(0)
                if (victim.get("spec") or {}).get("replicas", 0) == 0:
                    self._delete("apps", "replicasets", victim)
            new = _status_copy(dep)
            if new_rs is not None:
                rev = (new_rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision")
                new["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = rev
            status = new.setdefault("status", {})
            ready = self._count_ready(new_rs, replicas, state) if new_rs is not None else 0
            if state == "ready" and ready < replicas:
                state = "pending"
            status.update({"observedGeneration": meta.get("generation", 1), "replicas": replicas, "updatedReplicas": replicas,
                           "readyReplicas": ready, "availableReplicas": ready})
            if replicas - ready:
                status["unavailableReplicas"] = replicas - ready
            else:
                status.pop("unavailableReplicas", None)
            for key in ("readyReplicas", "availableReplicas", "updatedReplicas", "replicas"):
                if status.get(key) == 0:
                    status.pop(key)
            conds = status.setdefault("conditions", [])
            rs_label = new_rs["metadata"]["name"] if new_rs is not None else meta["name"]
            if state == "ready" or replicas == 0:
                _cond(conds, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
                _cond(conds, "Progressing", "True", "NewReplicaSetAvailable",
                      'ReplicaSet "%s" has successfully progressed.' % rs_label)
            elif state == "failed":
                _cond(conds, "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
                _cond(conds, "Progressing", "False", "ProgressDeadlineExceeded",
                      'ReplicaSet "%s" has timed out progressing.' % rs_label)
            else:
                _cond(conds, "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
                _cond(conds, "Progressing", "True", "ReplicaSetUpdated", 'ReplicaSet "%s" is progressing.' % rs_label)
            conds.sort(key=lambda c: {"Available": 0, "Progressing": 1}.get(c.get("type"), 2))
            if new != dep:
                if new["metadata"] != dep["metadata"]:
                    self._write("apps", "deployments", dict(dep, metadata=new["metadata"]), dep, "")
                    dep = self.store.raw_get("apps", "deployments", meta.get("namespace"), meta["name"])
                    new = dict(copy.deepcopy(dep), status=new["status"])
                self._write("apps", "deployments", new, dep)

    def _replicasets(self):
        for rs in self.store.iter_objects("apps", "replicasets"):
            if rs["metadata"].get("deletionTimestamp"):
                continue
            replicas = (rs.get("spec") or {}).get("replicas", 1)
            owner = self.top_owner(rs)
            state = self.state_of(owner, owner.get("kind", "ReplicaSet"))
            self._ensure_pods(rs, "ReplicaSet", "apps/v1", replicas, state)
            ready = self._count_ready(rs, replicas, state)
            new = _status_copy(rs)
            status = {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": ready,
                      "availableReplicas": ready, "observedGeneration": rs["metadata"].get("generation", 1)}
            new["status"] = {k: v for k, v in status.items() if v or k in ("replicas",)}
            self._write("apps", "replicasets", new, rs)

    def _statefulsets(self):
        for sts in self.store.iter_objects("apps", "statefulsets"):
            meta = sts["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = sts.get("spec") or {}
            replicas = spec.get("replicas", 1)
            state = self.state_of(sts, "StatefulSet")
            revision = "%s-%s" % (meta["name"], template_hash(spec.get("template") or {}))
            names = ["%s-%d" % (meta["name"], i) for i in range(replicas)]
            self._ensure_pods(sts, "StatefulSet", "apps/v1", replicas, state, names=names,
                              extra_labels={"controller-revision-hash": revision})
            ready = self._count_ready(sts, replicas, state)
            if state == "ready" and ready < replicas:
                state = "pending"
            new = _status_copy(sts)
            old_status = sts.get("status") or {}
            current_revision = revision if state == "ready" else old_status.get("currentRevision", revision)
            status = {"observedGeneration": meta.get("generation", 1), "replicas": replicas, "readyReplicas": ready,
                      "currentReplicas": replicas if state == "ready" or current_revision == revision else 0,
                      "updatedReplicas": replicas, "availableReplicas": ready, "currentRevision": current_revision,
                      "updateRevision": revision, "collisionCount": 0}
            new["status"] = {k: v for k, v in status.items() if v or k in ("replicas", "collisionCount")}
            self._write("apps", "statefulsets", new, sts)

    def _daemonsets(self):
        for ds in self.store.iter_objects("apps", "daemonsets"):
            meta = ds["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = ds.get("spec") or {}
            nodes = self.schedulable_nodes(((spec.get("template") or {}).get("spec")) or {})
            desired = len(nodes)
            state = self.state_of(ds, "DaemonSet")
            self._ensure_pods(ds, "DaemonSet", "apps/v1", desired, state, node_names=nodes)
            ready = desired if state == "ready" else 0
            new = _status_copy(ds)
            status = {"observedGeneration": meta.get("generation", 1), "desiredNumberScheduled": desired,
                      "currentNumberScheduled": desired, "updatedNumberScheduled": desired, "numberReady": ready,
                      "numberAvailable": ready, "numberMisscheduled": 0, "numberUnavailable": desired - ready}
            keep = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "numberMisscheduled")
            new["status"] = {k: v for k, v in status.items() if v or k in keep}
            self._write("apps", "daemonsets", new, ds)

    def _jobs(self):
        for job in self.store.iter_objects("batch", "jobs"):
            meta = job["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = job.get("spec") or {}
            status = job.get("status") or {}
            if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in status.get("conditions") or []):
                continue
            if spec.get("suspend"):
                continue
            state = self.state_of(job, "Job", key_extra=0)
            if self.scheduling and state != "failed" and self.emu.options.create_pods and not any(
                    (p.get("spec") or {}).get("nodeName") for p in self._owned("", "pods", meta.get("namespace"), meta.get("uid"))):
                state = "pending"
            completions = spec.get("completions", 1) if spec.get("completions") is not None else 1
            self._ensure_pods(job, "Job", "batch/v1", 1 if state != "ready" or completions else 0, state,
                              pod_phase=True)
            new = _status_copy(job)
            new_status = new.setdefault("status", {})
            new_status.setdefault("startTime", now_iso())
            conds = new_status.setdefault("conditions", [])
            if state == "ready":
                new_status.update({"succeeded": completions, "active": 0, "ready": 0, "completionTime": now_iso(),
                                   "uncountedTerminatedPods": {}})
                new_status.pop("active")
                _cond(conds, "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods")
                _cond(conds, "Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")
                self.event(job, "Normal", "Completed", "Job completed", "job-controller")
            elif state == "failed":
                new_status.update({"failed": spec.get("backoffLimit", 6) + 1, "ready": 0, "uncountedTerminatedPods": {}})
                new_status.pop("active", None)
                _cond(conds, "FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
                _cond(conds, "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
                self.event(job, "Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit", "job-controller")
            else:
                new_status.update({"active": spec.get("parallelism", 1) or 1, "ready": 0, "uncountedTerminatedPods": {}})
            if not conds:
                new_status.pop("conditions")
            self._write("batch", "jobs", new, job)

    # pylint: disable=too-many-arguments,too-many-locals
    def _ensure_pods(self, owner, kind, api_version, count, state, names=None, node_names=None, extra_labels=None,
                     pod_phase=False):
        if not self.emu.options.create_pods:
            return
        meta = owner["metadata"]
        namespace = meta.get("namespace")
        template = (owner.get("spec") or {}).get("template") or {}
        pods = self._owned("", "pods", namespace, meta.get("uid"))
        nodes = node_names or [n["metadata"]["name"] for n in
                               sorted(self.store.iter_objects("", "nodes"), key=lambda n: n["metadata"]["name"])] or ["node-1"]
        wanted_names = names
        if node_names is not None:
            by_node = {(p.get("spec") or {}).get("nodeName"): p for p in pods}
            for pod in pods:
                if (pod.get("spec") or {}).get("nodeName") not in node_names:
                    self._delete("", "pods", pod)
            for node in node_names:
                if node not in by_node:
                    self._create_pod(owner, kind, api_version, template, meta["name"] + "-" + uuid.uuid4().hex[:5], node,
                                     extra_labels)
            return
        if wanted_names is not None:
            existing = {p["metadata"]["name"] for p in pods}
            for pod in pods:
                if pod["metadata"]["name"] not in wanted_names:
                    self._delete("", "pods", pod)
            for idx, name in enumerate(wanted_names):
                if name not in existing:
                    labels = dict(extra_labels or {})
                    labels["statefulset.kubernetes.io/pod-name"] = name
                    labels["apps.kubernetes.io/pod-index"] = str(idx)
                    self._create_pod(owner, kind, api_version, template, name,
                                     None if self.scheduling else nodes[idx % len(nodes)], labels)
            return
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if len(live) > count:
            for pod in sorted(live, key=lambda p: p["metadata"]["name"])[count:]:
                self._delete("", "pods", pod)
        for idx in range(len(live), count):
            self._create_pod(owner, kind, api_version, template, meta["name"] + "-" + uuid.uuid4().hex[:5],
                             None if self.scheduling else nodes[idx % len(nodes)], extra_labels)
        del pod_phase, state

    def _create_pod(self, owner, kind, api_version, template, name, node, extra_labels=None):
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update(extra_labels or {})
        spec = copy.deepcopy(template.get("spec") or {})
        if node:
            spec["nodeName"] = node
        self.ip_counter += 1
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": owner["metadata"].get("namespace"), "labels": labels,
                            "annotations": dict(tmeta.get("annotations") or {}),
                            "ownerReferences": [_owner_ref(owner, kind, api_version)]},
               "spec": spec,
               "status": {"phase": "Pending", "qosClass": "BestEffort",
                          "podIP": "10.244.%d.%d" % (self.ip_counter // 250 % 250, self.ip_counter % 250 + 1)}}
        self._write("", "pods", pod, None)

    def _pods(self):
        for pod in self.store.iter_objects("", "pods"):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = pod.get("spec") or {}
            owner = self.top_owner(pod)
            if owner is pod:
                state = self.state_of(pod, "Pod")
            else:
                state = self.state_of(owner, owner.get("kind", "Pod"),
                                      key_extra=0 if owner.get("kind") == "Job" else None)
            settled_key = (meta.get("resourceVersion"), state)
            if state != "failed" and spec.get("nodeName") and self._settled_pods.get(meta.get("uid")) == settled_key:
                continue  # unchanged since a pass found its status right: it still is (failed pods still emit events)
            status = copy.deepcopy(pod.get("status") or {})
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            if not spec.get("nodeName") and self.scheduling:
                node, reason = self.pick_node(spec)
                if node:
                    bound = copy.deepcopy(pod)
                    bound["spec"]["nodeName"] = node
                    self._write("", "pods", bound, pod, "binding")
                    continue
                status["phase"] = "Pending"
                _cond(status.setdefault("conditions", []), "PodScheduled", "False", "Unschedulable", reason)
                self.event(pod, "Warning", "FailedScheduling", reason, "default-scheduler")
                if status != (pod.get("status") or {}):
                    self._write("", "pods", dict(copy.deepcopy(pod), status=status), pod)
                continue
            run_to_completion = spec.get("restartPolicy") in ("Never", "OnFailure")
            containers = spec.get("containers") or []
            stamp = status.get("startTime") or now_iso()
            status["startTime"] = stamp
            status["hostIP"] = "172.18.0.2"
            status.setdefault("podIP", "10.244.0.%d" % (abs(hash(meta["name"])) % 250 + 1))
            status["podIPs"] = [{"ip": status["podIP"]}]
            conds = status.setdefault("conditions", [])
            _cond(conds, "PodScheduled", "True", "", "")
            if state == "ready":
                if run_to_completion:
                    status["phase"] = "Succeeded"
                    status["containerStatuses"] = [self._cstatus(c, False, {"terminated": {
                        "exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": now_iso()}}) for c in containers]
                    _cond(conds, "Ready", "False", "PodCompleted", "")
                    _cond(conds, "ContainersReady", "False", "PodCompleted", "")
                else:
                    status["phase"] = "Running"
                    status["containerStatuses"] = [self._cstatus(c, True, {"running": {"startedAt": stamp}}) for c in containers]
                    _cond(conds, "Initialized", "True", "", "")
                    _cond(conds, "ContainersReady", "True", "", "")
                    _cond(conds, "Ready", "True", "", "")
            elif state == "failed":
                if run_to_completion:
                    status["phase"] = "Failed"
                    status["containerStatuses"] = [self._cstatus(c, False, {"terminated": {
                        "exitCode": 1, "reason": "Error", "startedAt": stamp, "finishedAt": now_iso()}}) for c in containers]
                else:
                    status["phase"] = "Running"
                    status["containerStatuses"] = [self._cstatus(c, False, {"waiting": {
                        "reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}}) for c in containers]
                    for container in containers:
                        self.event(pod, "Warning", "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)" % (
                            container.get("name"), meta["name"], meta.get("namespace"), meta.get("uid")), "kubelet")
                _cond(conds, "Ready", "False", "ContainersNotReady", "containers with unready status")
                _cond(conds, "ContainersReady", "False", "ContainersNotReady", "containers with unready status")
            else:
                status["phase"] = "Running" if not run_to_completion else "Pending"
                status["containerStatuses"] = [self._cstatus(c, False, {"waiting": {"reason": "ContainerCreating"}})
                                               for c in containers]
                _cond(conds, "Ready", "False", "ContainersNotReady", "containers with unready status")
                _cond(conds, "ContainersReady", "False", "ContainersNotReady", "containers with unready status")
            for cond in conds:
                if not cond.get("reason"):
                    cond.pop("reason", None)
                if not cond.get("message"):
                    cond.pop("message", None)
            if status != (pod.get("status") or {}):
                # the write replaces metadata.managedFields: the stored pod's metadata must not be that dict
                self._write("", "pods", dict(pod, metadata=dict(meta), status=status), pod)
            elif spec.get("nodeName"):
                self._settled_pods[meta.get("uid")] = settled_key

    @staticmethod
    def _cstatus(container, ready, cstate):
        image = container.get("image", "")
        return {"name": container.get("name", ""), "image": image, "imageID": "emulated://" + image,
                "containerID": "containerd://" + uuid.uuid5(uuid.NAMESPACE_URL, image + container.get("name", "")).hex,
                "ready": ready, "started": "running" in cstate, "restartCount": 0, "state": cstate}

    def _simple_status(self):
        store = self.store
        for pvc in store.iter_objects("", "persistentvolumeclaims"):
            if (pvc.get("status") or {}).get("phase") == "Bound" or pvc["metadata"].get("deletionTimestamp"):
                continue
            if self.state_of(pvc, "PersistentVolumeClaim") != "ready":
                continue
            new = copy.deepcopy(pvc)
            new["spec"]["volumeName"] = new["spec"].get("volumeName") or "pvc-" + pvc["metadata"]["uid"]
            new["status"] = {"phase": "Bound", "accessModes": (pvc.get("spec") or {}).get("accessModes") or ["ReadWriteOnce"],
                             "capacity": {"storage": (((pvc.get("spec") or {}).get("resources") or {}).get("requests")
                                                      or {}).get("storage", "1Gi")}}
            self._write("", "persistentvolumeclaims", new, pvc, "")
        for svc in store.iter_objects("", "services"):
            if (svc.get("spec") or {}).get("type") != "LoadBalancer" or ((svc.get("status") or {}).get("loadBalancer") or {}).get(
                    "ingress"):
                continue
            if self.state_of(svc, "Service") != "ready":
                continue
            new = copy.deepcopy(svc)
            octet = int(svc["metadata"]["uid"][:2], 16) % 250 + 2
            new["status"] = {"loadBalancer": {"ingress": [{"ip": "172.18.255.%d" % octet, "ipMode": "VIP"}]}}
            self._write("", "services", new, svc)
        for apisvc in store.iter_objects("apiregistration.k8s.io", "apiservices"):
            conds = (apisvc.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Available" for c in conds):
                continue
            new = copy.deepcopy(apisvc)
            _cond(new.setdefault("status", {}).setdefault("conditions", []), "Available", "True", "Passed",
                  "all checks passed")
            self._write("apiregistration.k8s.io", "apiservices", new, apisvc)
        for pdb in store.iter_objects("policy", "poddisruptionbudgets"):
            gen = pdb["metadata"].get("generation", 1)
            if (pdb.get("status") or {}).get("observedGeneration") == gen:
                continue
            new = copy.deepcopy(pdb)
            new["status"] = {"observedGeneration": gen, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0,
                             "disruptionsAllowed": 0, "conditions": [{
                                 "type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                                 "message": "", "observedGeneration": gen, "lastTransitionTime": now_iso()}]}
            self._write("policy", "poddisruptionbudgets", new, pdb)

    # ---- reviews ---------------------------------------------------------------------------------

    def review(self, rtype, body, version):
        """Answer an access/token review (RBAC is not enforced: everything is allowed)."""
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
        out = copy.deepcopy(body)
        out["apiVersion"] = rtype.api_version(version)
        out["kind"] = rtype.kind
        out.setdefault("metadata", {})
        user = {"username": "emulator-admin", "groups": ["system:masters", "system:authenticated"]}
        if rtype.kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"):
            out["status"] = {"allowed": True, "reason": "RBAC is not enforced by the emulator"}
        elif rtype.kind == "SelfSubjectRulesReview":
            out["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                             "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
        elif rtype.kind == "TokenReview":
            token = ((body.get("spec") or {}).get("token")) or ""
            ok = token == self.emu.options.token
            out["status"] = {"authenticated": ok, "user": user if ok else {}}
            out.get("spec", {}).pop("token", None)
        elif rtype.kind == "SelfSubjectReview":
            out["status"] = {"userInfo": user}
        return out
