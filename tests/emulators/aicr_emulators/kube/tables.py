"""``meta.k8s.io/v1`` Table answers (what ``kubectl get`` prints), with the common per-kind columns.

Custom resources use their CRD's ``additionalPrinterColumns`` (simple JSONPath: dotted fields,
``[n]`` indexes and ``[?(@.key=="value")]`` filters).
"""

import json
import re
import time

from .store import parse_iso


def human_duration(seconds):
    """kubectl's HumanDuration (apimachinery/pkg/util/duration)."""
    seconds = max(0, int(seconds))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return "%ds" % seconds
    if minutes < 10:
        return "%dm%ds" % (minutes, seconds % 60) if seconds % 60 else "%dm" % minutes
    if minutes < 180:
        return "%dm" % minutes
    if hours < 8:
        return "%dh%dm" % (hours, minutes % 60) if minutes % 60 else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    if hours < 192:
        return "%dd%dh" % (days, hours % 24) if hours % 24 else "%dd" % days
    if days < 730:
        return "%dd" % days
    return "%dy%dd" % (days // 365, days % 365) if days % 365 else "%dy" % (days // 365)


def _age(obj):
    created = parse_iso((obj.get("metadata") or {}).get("creationTimestamp"))
    return human_duration(time.time() - created) if created else "<unknown>"


def _g(obj, *path, default=None):
    cur = obj
    for key in path:
        if isinstance(cur, dict):
            cur = cur.get(key)
        elif isinstance(cur, list) and isinstance(key, int) and -len(cur) <= key < len(cur):
            cur = cur[key]
        else:
            return default
        if cur is None:
            return default
    return cur


def _pod_status(pod):
    if _g(pod, "metadata", "deletionTimestamp"):
        return "Terminating"
    reason = _g(pod, "status", "reason") or _g(pod, "status", "phase", default="Pending")
    for cstatus in _g(pod, "status", "containerStatuses", default=[]):
        waiting = _g(cstatus, "state", "waiting", "reason")
        terminated = _g(cstatus, "state", "terminated", "reason")
        if waiting:
            reason = waiting
        elif terminated and reason in ("Succeeded", "Failed"):
            reason = terminated
    return reason


def _pod_ready(pod):
    statuses = _g(pod, "status", "containerStatuses", default=[])
    total = len(_g(pod, "spec", "containers", default=[]))
    return "%d/%d" % (sum(1 for c in statuses if c.get("ready")), total)


def _cond_true(obj, ctype):
    return any(c.get("type") == ctype and c.get("status") == "True" for c in _g(obj, "status", "conditions", default=[]))


def _job_status(job):
    if _cond_true(job, "Failed"):
        return "Failed"
    if _cond_true(job, "Complete"):
        return "Complete"
    if _g(job, "spec", "suspend"):
        return "Suspended"
    return "Running"


def _job_duration(job):
    start = parse_iso(_g(job, "status", "startTime"))
    if not start:
        return ""
    end = parse_iso(_g(job, "status", "completionTime")) or time.time()
    return human_duration(end - start)


def _service_ports(svc):
    out = []
    for port in _g(svc, "spec", "ports", default=[]):
        text = "%s" % port.get("port")
        if port.get("nodePort"):
            text += ":%s" % port["nodePort"]
        out.append("%s/%s" % (text, port.get("protocol", "TCP")))
    return ",".join(out) or "<none>"


def _external_ip(svc):
    if _g(svc, "spec", "type") == "LoadBalancer":
        ips = [i.get("ip") or i.get("hostname") for i in _g(svc, "status", "loadBalancer", "ingress", default=[])]
        return ",".join(ips) if ips else "<pending>"
    if _g(svc, "spec", "type") == "ExternalName":
        return _g(svc, "spec", "externalName", default="")
    return ",".join(_g(svc, "spec", "externalIPs", default=[])) or "<none>"


def _node_status(node):
    ready = [c for c in _g(node, "status", "conditions", default=[]) if c.get("type") == "Ready"]
    status = "Ready" if ready and ready[0].get("status") == "True" else "NotReady"
    if _g(node, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(node):
    roles = [k.split("/", 1)[1] for k in (_g(node, "metadata", "labels", default={}))
             if k.startswith("node-role.kubernetes.io/")]
    return ",".join(sorted(roles)) or "<none>"


def _selector(obj, path=("spec", "selector", "matchLabels")):
    labels = _g(obj, *path, default={})
    return ",".join("%s=%s" % kv for kv in sorted(labels.items())) or "<none>"


def _containers(obj, field):
    return ",".join(c.get(field, "") for c in _g(obj, "spec", "template", "spec", "containers", default=[]))


_ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _col(name, func, typ="string", priority=0, fmt=""):
    return (name, func, typ, priority, fmt)


COLUMNS = {
    ("", "pods"): [
        _col("Ready", _pod_ready), _col("Status", _pod_status),
        _col("Restarts", lambda o: sum(c.get("restartCount", 0) for c in _g(o, "status", "containerStatuses", default=[])),
             "string"),
        _col("Age", _age), _col("IP", lambda o: _g(o, "status", "podIP", default="<none>"), priority=1),
        _col("Node", lambda o: _g(o, "spec", "nodeName", default="<none>"), priority=1)],
    ("apps", "deployments"): [
        _col("Ready", lambda o: "%d/%d" % (_g(o, "status", "readyReplicas", default=0), _g(o, "spec", "replicas", default=0))),
        _col("Up-to-date", lambda o: _g(o, "status", "updatedReplicas", default=0), "integer"),
        _col("Available", lambda o: _g(o, "status", "availableReplicas", default=0), "integer"), _col("Age", _age),
        _col("Containers", lambda o: _containers(o, "name"), priority=1),
        _col("Images", lambda o: _containers(o, "image"), priority=1), _col("Selector", _selector, priority=1)],
    ("apps", "replicasets"): [
        _col("Desired", lambda o: _g(o, "spec", "replicas", default=0), "integer"),
        _col("Current", lambda o: _g(o, "status", "replicas", default=0), "integer"),
        _col("Ready", lambda o: _g(o, "status", "readyReplicas", default=0), "integer"), _col("Age", _age),
        _col("Containers", lambda o: _containers(o, "name"), priority=1),
        _col("Images", lambda o: _containers(o, "image"), priority=1), _col("Selector", _selector, priority=1)],
    ("apps", "statefulsets"): [
        _col("Ready", lambda o: "%d/%d" % (_g(o, "status", "readyReplicas", default=0), _g(o, "spec", "replicas", default=0))),
        _col("Age", _age), _col("Containers", lambda o: _containers(o, "name"), priority=1),
        _col("Images", lambda o: _containers(o, "image"), priority=1)],
    ("apps", "daemonsets"): [
        _col("Desired", lambda o: _g(o, "status", "desiredNumberScheduled", default=0), "integer"),
        _col("Current", lambda o: _g(o, "status", "currentNumberScheduled", default=0), "integer"),
        _col("Ready", lambda o: _g(o, "status", "numberReady", default=0), "integer"),
        _col("Up-to-date", lambda o: _g(o, "status", "updatedNumberScheduled", default=0), "integer"),
        _col("Available", lambda o: _g(o, "status", "numberAvailable", default=0), "integer"),
        _col("Node Selector", lambda o: _selector(o, ("spec", "template", "spec", "nodeSelector"))), _col("Age", _age)],
    ("batch", "jobs"): [
        _col("Status", _job_status),
        _col("Completions", lambda o: "%d/%d" % (_g(o, "status", "succeeded", default=0), _g(o, "spec", "completions", default=1))),
        _col("Duration", _job_duration), _col("Age", _age)],
    ("batch", "cronjobs"): [
        _col("Schedule", lambda o: _g(o, "spec", "schedule", default="")),
        _col("Suspend", lambda o: "True" if _g(o, "spec", "suspend") else "False"),
        _col("Active", lambda o: len(_g(o, "status", "active", default=[])), "integer"), _col("Age", _age)],
    ("", "services"): [
        _col("Type", lambda o: _g(o, "spec", "type", default="ClusterIP")),
        _col("Cluster-IP", lambda o: _g(o, "spec", "clusterIP", default="<none>")),
        _col("External-IP", _external_ip), _col("Port(s)", _service_ports), _col("Age", _age),
        _col("Selector", lambda o: _selector(o, ("spec", "selector")), priority=1)],
    ("", "namespaces"): [_col("Status", lambda o: _g(o, "status", "phase", default="Active")), _col("Age", _age)],
    ("", "nodes"): [
        _col("Status", _node_status), _col("Roles", _node_roles), _col("Age", _age),
        _col("Version", lambda o: _g(o, "status", "nodeInfo", "kubeletVersion", default=""))],
    ("", "configmaps"): [
        _col("Data", lambda o: len(_g(o, "data", default={})) + len(_g(o, "binaryData", default={})), "integer"),
        _col("Age", _age)],
    ("", "secrets"): [
        _col("Type", lambda o: _g(o, "type", default="Opaque")),
        _col("Data", lambda o: len(_g(o, "data", default={})), "integer"), _col("Age", _age)],
    ("", "persistentvolumeclaims"): [
        _col("Status", lambda o: _g(o, "status", "phase", default="Pending")),
        _col("Volume", lambda o: _g(o, "spec", "volumeName", default="")),
        _col("Capacity", lambda o: _g(o, "status", "capacity", "storage", default="")),
        _col("Access Modes", lambda o: ",".join(_ACCESS_MODES.get(m, m) for m in _g(o, "status", "accessModes", default=[]))),
        _col("StorageClass", lambda o: _g(o, "spec", "storageClassName", default="<unset>")), _col("Age", _age)],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        _col("Created At", lambda o: _g(o, "metadata", "creationTimestamp", default=""), fmt="date")],
}


_FILTER = re.compile(r'^\?\(@\.([\w.-]+)\s*==\s*["\']([^"\']*)["\']\)$')


def json_path(obj, path):
    """Evaluate the simple JSONPath subset printer columns use; None when absent or unsupported."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    tokens = re.findall(r"\[[^\]]*\]|[^.\[\]]+", path.lstrip("$"))
    cur = [obj]
    for token in tokens:
        nxt = []
        for item in cur:
            if token.startswith("["):
                inner = token[1:-1].strip()
                if not isinstance(item, list):
                    continue
                match = _FILTER.match(inner)
                if match:
                    nxt.extend(e for e in item if isinstance(e, dict) and str(_g(e, *match.group(1).split("."))) == match.group(2))
                elif inner == "*":
                    nxt.extend(item)
                else:
                    try:
                        idx = int(inner)
                    except ValueError:
                        return None
                    if -len(item) <= idx < len(item):
                        nxt.append(item[idx])
            elif isinstance(item, dict) and token in item:
                nxt.append(item[token])
        cur = nxt
    if not cur:
        return None
    values = [v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, sort_keys=True) for v in cur]
    return values[0] if len(values) == 1 else ",".join(str(v) for v in values)


def _path_getter(path, date):
    def getter(obj):
        value = json_path(obj, path)
        if date:
            created = parse_iso(value) if value else 0
            return human_duration(time.time() - created) if created else "<unknown>"
        return value
    return getter


def _custom_columns(rtype, version):
    ver = rtype.crd_version(version) or {}
    columns = []
    for col in ver.get("additionalPrinterColumns") or []:
        typ = col.get("type", "string")
        columns.append(_col(col.get("name", ""), _path_getter(col.get("jsonPath", ""), typ == "date"),
                            "string" if typ == "date" else typ, col.get("priority", 0), col.get("format", "")))
    if not any(c[0].lower() == "age" for c in columns):
        columns.append(_col("Age", _age))
    return columns


def table(rtype, version, items, meta, include="Metadata"):
    if rtype.crd is not None:
        columns = _custom_columns(rtype, version)
    else:
        columns = COLUMNS.get((rtype.group, rtype.plural)) or [_col("Age", _age)]
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a "
                    "namespace.", "priority": 0}]
    definitions += [{"name": name, "type": typ, "format": fmt, "description": name, "priority": priority}
                    for name, _func, typ, priority, fmt in columns]
    rows = []
    for obj in items:
        cells = [obj["metadata"]["name"]]
        for _name, func, _typ, _priority, _fmt in columns:
            try:
                value = func(obj)
            except (TypeError, ValueError, KeyError, AttributeError):
                value = None
            cells.append(value)
        if include == "Object":
            row_obj = obj
        elif include == "None":
            row_obj = None
        else:
            row_obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                       "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
        row = {"cells": cells}
        if row_obj is not None:
            row["object"] = row_obj
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": definitions, "rows": rows}
