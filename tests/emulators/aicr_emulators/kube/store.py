"""The object store: CRUD with apiserver semantics, resourceVersions, the event log for watches.

Stored objects are treated as immutable snapshots: every write stores a new dict, so the
event log and readers can share them without copying.
"""

import base64
import binascii
import collections
import copy
import datetime
import fnmatch
import hashlib
import json
import random
import re
import string
import threading
import uuid

from . import patch as patchlib
from . import schema as schemalib
from . import ssa
from .registry import Registry, crd_resource_type
from .selectors import field_match, label_match

EVENT_LOG_SIZE = 20000
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ANNOTATION_PREFIX = "emulator.aicr.io/"
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class ApiError(Exception):
    """An error answered as a ``Status`` object."""

    # pylint: disable=too-many-arguments
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
               "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


def not_found(rtype, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (rtype.group_resource, name),
                    {"name": name, "group": rtype.group, "kind": rtype.plural})


def conflict(rtype, name, message=None):
    return ApiError(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": %s" % (
        rtype.group_resource, name, message or "the object has been modified; please apply your changes to the latest "
        "version and try again"), {"name": name, "group": rtype.group, "kind": rtype.plural})


def invalid(rtype, name, causes):
    """422 Invalid from [(reason, field, message)]."""
    parts = ["%s: %s" % (field, message) if field else message for _reason, field, message in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (rtype.group_kind, name, joined),
                    {"name": name, "group": rtype.group, "kind": rtype.kind,
                     "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes]})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(stamp):
    try:
        return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return 0.0


def _rand_suffix(count=5):
    return "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _attempt in range(count))


class Context:
    """What a request says about itself: field manager, dry run, field validation, warnings."""

    # pylint: disable=too-many-arguments
    def __init__(self, manager="", dry_run=False, field_validation="", user_agent="", force=False):
        self.manager = manager
        self.dry_run = dry_run
        self.field_validation = field_validation
        self.user_agent = user_agent
        self.force = force
        self.warnings = []


def manager_from_user_agent(user_agent):
    """client-go's default field manager: the user agent's program name."""
    name = (user_agent or "unknown").split("/", 1)[0].split(" ", 1)[0]
    return name[:128] or "unknown"


def _strip_for_compare(obj):
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("managedFields", None)
    meta.pop("resourceVersion", None)
    out["metadata"] = meta
    return out


def _spec_part(obj):
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _finalized(rtype, obj):
    """No finalizer holds the object any more (namespaces also wait for spec.finalizers)."""
    if (obj.get("metadata") or {}).get("finalizers"):
        return False
    if (rtype.group, rtype.plural) == ("", "namespaces") and (obj.get("spec") or {}).get("finalizers"):
        return False
    return True


def _owner_uids(obj):
    return [ref.get("uid") for ref in (obj.get("metadata") or {}).get("ownerReferences") or []]


class Store:
    """Objects keyed by (group, plural) then (namespace, name)."""

    # pylint: disable=too-many-public-methods,too-many-instance-attributes
    def __init__(self, registry=None, validate_builtins=True, default_field_validation="Warn"):
        self.registry = registry or Registry()
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.objects = {}
        self.rv = 0
        self.events = collections.deque(maxlen=EVENT_LOG_SIZE)
        self.compacted_rv = 0
        self.validate_builtins = validate_builtins
        self.default_field_validation = default_field_validation
        self.gc_dirty = True
        self.crd_dirty = True
        self.epoch = 0  # bumped on restart/reset: open watches end
        self.on_commit = []

    # ---- basics -----------------------------------------------------------------------------

    def bucket(self, rtype):
        return self.objects.setdefault((rtype.group, rtype.plural), {})

    def raw_get(self, group, plural, namespace, name):
        return self.objects.get((group, plural), {}).get((namespace or "", name))

    def iter_objects(self, group, plural):
        return list(self.objects.get((group, plural), {}).values())

    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _commit(self, rtype, etype, obj, old=None):
        """Store (or remove) ``obj`` and append a watch event. ``obj`` must be a fresh dict."""
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self._next_rv())
        key = (meta.get("namespace", "") if rtype.namespaced else "", meta.get("name"))
        if etype == "DELETED":
            self.bucket(rtype).pop(key, None)
        else:
            self.bucket(rtype)[key] = obj
        self.events.append((self.rv, etype, rtype.group, rtype.plural, obj, old))
        if len(self.events) == self.events.maxlen:
            self.compacted_rv = self.events[0][0] - 1
        if rtype.group == "apiextensions.k8s.io":
            self.crd_dirty = True
        if etype == "DELETED" or _owner_uids(obj) or meta.get("deletionTimestamp"):
            self.gc_dirty = True
        for callback in self.on_commit:
            callback(rtype, etype, obj)
        self.cond.notify_all()
        return obj

    def serve(self, rtype, obj, version=None):
        """The object as served at ``version`` (no conversion: apiVersion rewritten)."""
        if obj is None:
            return None
        want = rtype.api_version(version)
        if obj.get("apiVersion") == want:
            return obj
        out = dict(obj)
        out["apiVersion"] = want
        return out

    # ---- schema -------------------------------------------------------------------------------

    def schema_for(self, rtype, version=None):
        version = version or rtype.storage_version
        if rtype.crd is not None:
            return schemalib.crd_schema(rtype, version)
        return schemalib.builtin_root(rtype.group, version, rtype.kind)

    def status_zeros(self, rtype):
        """Zero values of the required (non-omitempty) fields of a built-in kind's status."""
        if rtype.crd is not None or not self.validate_builtins:
            return {}
        root = self.schema_for(rtype)
        status = root.prop("status") if root is not None else None
        if status is None:
            return {}
        zeros = {"integer": 0, "number": 0, "string": "", "boolean": False, "array": [], "object": {}}
        out = {}
        for key in status.node.get("required") or []:
            sub = status.prop(key)
            types = [t for t in (sub.types if sub is not None else []) if t != "null"]
            if types and types[0] in zeros:
                out[key] = copy.deepcopy(zeros[types[0]])
        return out

    def _check_schema(self, rtype, obj, ctx, name, version, partial=False):
        """Validate/prune/default; returns the cleaned object or raises ApiError."""
        custom = rtype.crd is not None
        if not custom and not self.validate_builtins:
            return obj
        schema = self.schema_for(rtype, version)
        if schema is None:
            return obj
        cleaned, issues = schemalib.check(obj, schema, custom)
        if issues.type_errors and not custom:
            field, message = issues.type_errors[0]
            raise bad_request('%s in version "%s" cannot be handled as a %s: %s' % (
                rtype.kind, version or rtype.storage_version, rtype.kind, message.replace(
                    "Go struct field %s" % field, "Go struct field %s.%s" % (rtype.kind, field))))
        causes = issues.causes
        if partial:
            causes = [c for c in causes if c[0] != "FieldValueRequired"]
        mode = (ctx.field_validation or self.default_field_validation) if ctx else "Ignore"
        if issues.unknown:
            if mode == "Strict":
                raise bad_request("strict decoding error: " + ", ".join('unknown field "%s"' % f for f in issues.unknown))
            if mode == "Warn" and ctx is not None:
                ctx.warnings.extend('unknown field "%s"' % f for f in issues.unknown)
        if causes:
            raise invalid(rtype, name, causes)
        if custom:
            cleaned["metadata"] = obj.get("metadata", {})
        return cleaned

    # ---- reads --------------------------------------------------------------------------------

    def get(self, rtype, namespace, name):
        with self.lock:
            obj = self.raw_get(rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)
            if obj is None:
                raise not_found(rtype, name)
            return obj

    # pylint: disable=too-many-arguments,too-many-locals
    def list(self, rtype, namespace, label_reqs, field_reqs, limit=0, cont=None):
        """(items, resourceVersion, continue token, remainingItemCount)."""
        with self.lock:
            items = []
            for (ns, _name), obj in sorted(self.bucket(rtype).items()):
                if rtype.namespaced and namespace and ns != namespace:
                    continue
                if not label_match(label_reqs, (obj.get("metadata") or {}).get("labels")):
                    continue
                if field_reqs and not field_match(field_reqs, obj):
                    continue
                items.append(obj)
            rv = str(self.rv)
        start = 0
        if cont:
            try:
                token = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                start_key = tuple(token["start"])
                rv = token.get("rv", rv)
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise bad_request("continue key is not valid")
            start = next((i for i, o in enumerate(items)
                          if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) >= start_key), len(items))
        items = items[start:]
        next_token, remaining = None, None
        if limit and len(items) > limit:
            nxt = items[limit]
            next_token = base64.urlsafe_b64encode(json.dumps(
                {"rv": rv, "start": [nxt["metadata"].get("namespace", ""), nxt["metadata"]["name"]]}).encode()).decode()
            remaining = len(items) - limit
            items = items[:limit]
        return items, rv, next_token, remaining

    # ---- writes -------------------------------------------------------------------------------

    def _check_namespace(self, rtype, namespace, name):
        if not rtype.namespaced:
            return
        nsobj = self.raw_get("", "namespaces", "", namespace)
        if nsobj is None:
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % namespace,
                           {"name": namespace, "kind": "namespaces"})
        if (nsobj.get("metadata") or {}).get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", '%s "%s" is forbidden: unable to create new content in namespace %s because it '
                           'is being terminated' % (rtype.group_resource, name, namespace),
                           {"name": name, "group": rtype.group, "kind": rtype.plural,
                            "causes": [{"reason": "NamespaceTerminating", "message": "namespace %s is being terminated"
                                        % namespace, "field": "metadata.namespace"}]})

    def _check_identity(self, rtype, body, namespace, name=None, version=None):
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        want = rtype.api_version(version)
        if body.get("apiVersion") and body.get("apiVersion") != want and body.get("apiVersion") not in [
                rtype.api_version(v) for v in rtype.versions]:
            raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                              % (body.get("apiVersion"), want))
        if body.get("kind") and body.get("kind") != rtype.kind:
            raise bad_request("the kind in the data (%s) does not match the expected kind (%s)" % (body.get("kind"), rtype.kind))
        meta = body.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        meta = meta or {}
        if rtype.namespaced and meta.get("namespace") and meta.get("namespace") != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if name is not None and meta.get("name") and meta.get("name") != name:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta.get("name"), name))

    def _validate_name(self, rtype, name):
        pattern = DNS1123_LABEL if rtype.plural in ("namespaces", "services") else DNS1123_SUBDOMAIN
        limit = 63 if pattern is DNS1123_LABEL else 253
        if rtype.plural in ("nodes", "clusterroles", "clusterrolebindings", "roles", "rolebindings"):
            return  # path-segment names (e.g. "system:controller:x")
        if not pattern.match(name) or len(name) > limit:
            raise invalid(rtype, name, [("FieldValueInvalid", "metadata.name", "Invalid value: \"%s\": a lowercase RFC 1123 %s "
                                         "must consist of lower case alphanumeric characters, '-' or '.', and must start and "
                                         "end with an alphanumeric character" % (
                                             name, "label" if pattern is DNS1123_LABEL else "subdomain"))])

    def _metadata_checks(self, rtype, obj):
        meta = obj.get("metadata") or {}
        causes = []
        for field in ("labels", "annotations"):
            value = meta.get(field)
            if value is None:
                continue
            if not isinstance(value, dict):
                raise bad_request("json: cannot unmarshal into Go struct field ObjectMeta.metadata.%s of type map[string]string" % field)
            for key, val in value.items():
                if not isinstance(val, str):
                    raise bad_request("json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.%s of type string"
                                      % (schemalib._type_name(val), field))  # pylint: disable=protected-access
                if field == "labels" and (len(val) > 63 or (val and not re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", val))):
                    causes.append(("FieldValueInvalid", "metadata.labels", 'Invalid value: "%s": a valid label must be an empty '
                                   "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                                   "with an alphanumeric character" % val))
                name_part = key.rsplit("/", 1)[-1]
                if not name_part or len(name_part) > 63 or not re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", name_part):
                    causes.append(("FieldValueInvalid", "metadata.%s" % field, 'Invalid value: "%s": name part must consist of '
                                   "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                                   "character" % key))
        if causes:
            raise invalid(rtype, meta.get("name", ""), causes)

    def _defaults(self, rtype, obj, old=None):
        """Type-specific defaults and normalisation (a small subset of the apiserver's)."""
        group, plural = rtype.group, rtype.plural
        if (group, plural) == ("", "secrets"):
            obj.setdefault("type", "Opaque")
            data = dict(obj.get("data") or {})
            for key, value in (obj.pop("stringData", None) or {}).items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            for key, value in data.items():
                try:
                    base64.b64decode(value or "", validate=True)
                except (binascii.Error, ValueError, TypeError):
                    raise bad_request("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input "
                                      "byte 0 (data.%s)" % key)
            if data or "data" in obj:
                obj["data"] = data
        elif (group, plural) == ("", "namespaces"):
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj.setdefault("status", {}).setdefault("phase", "Active")
            labels = obj["metadata"].setdefault("labels", {})
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif (group, plural) == ("", "services"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if spec.get("type") != "ExternalName":
                if not spec.get("clusterIP"):
                    spec["clusterIP"] = (old or {}).get("spec", {}).get("clusterIP") or self._allocate_ip()
                if spec.get("clusterIP") != "None":
                    spec.setdefault("clusterIPs", [spec["clusterIP"]])
                spec.setdefault("ipFamilies", ["IPv4"])
                spec.setdefault("ipFamilyPolicy", "SingleStack")
                spec.setdefault("internalTrafficPolicy", "Cluster")
            old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                         for p in ((old or {}).get("spec") or {}).get("ports") or [] if isinstance(p, dict)}
            for port in spec.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
                    port.setdefault("targetPort", port.get("port"))
                    if spec.get("type") in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
                        port["nodePort"] = old_ports.get((port.get("port"), port["protocol"])) or self._allocate_node_port()
            obj.setdefault("status", {}).setdefault("loadBalancer", {})
        elif plural in ("deployments", "replicasets", "statefulsets") and group == "apps":
            spec = obj.setdefault("spec", {})
            spec.setdefault("replicas", 1)
            spec.setdefault("revisionHistoryLimit", 10)
            if plural == "deployments":
                spec.setdefault("progressDeadlineSeconds", 600)
                strategy = spec.setdefault("strategy", {})
                strategy.setdefault("type", "RollingUpdate")
                if strategy["type"] == "RollingUpdate":
                    rolling = strategy.setdefault("rollingUpdate", {})
                    rolling.setdefault("maxSurge", "25%")
                    rolling.setdefault("maxUnavailable", "25%")
            if plural == "statefulsets":
                spec.setdefault("podManagementPolicy", "OrderedReady")
                strategy = spec.setdefault("updateStrategy", {})
                strategy.setdefault("type", "RollingUpdate")
                if strategy["type"] == "RollingUpdate":
                    strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
                spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
            self._pod_template_defaults(spec.get("template"))
        elif (group, plural) == ("apps", "daemonsets"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("revisionHistoryLimit", 10)
            strategy = spec.setdefault("updateStrategy", {})
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                rolling.setdefault("maxSurge", 0)
                rolling.setdefault("maxUnavailable", 1)
            self._pod_template_defaults(spec.get("template"))
        elif (group, plural) == ("batch", "jobs"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("completions", 1)
            spec.setdefault("parallelism", 1)
            spec.setdefault("backoffLimit", 6)
            spec.setdefault("completionMode", "NonIndexed")
            spec.setdefault("suspend", False)
            template = spec.setdefault("template", {})
            if not isinstance(template.get("metadata"), dict):
                template["metadata"] = {}
            if not isinstance(template["metadata"].get("labels"), dict):
                template["metadata"]["labels"] = {}
            labels = template["metadata"]["labels"]
            uid = (old or obj)["metadata"].get("uid")
            if not (spec.get("selector") or {}).get("matchLabels") and uid and spec.get("manualSelector") is not True:
                spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
                labels.setdefault("batch.kubernetes.io/controller-uid", uid)
                labels.setdefault("batch.kubernetes.io/job-name", obj["metadata"]["name"])
                labels.setdefault("controller-uid", uid)
                labels.setdefault("job-name", obj["metadata"]["name"])
            self._pod_template_defaults(template)
        elif (group, plural) == ("batch", "cronjobs"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("concurrencyPolicy", "Allow")
            spec.setdefault("suspend", False)
            spec.setdefault("successfulJobsHistoryLimit", 3)
            spec.setdefault("failedJobsHistoryLimit", 1)
        elif (group, plural) == ("", "pods"):
            spec = obj.setdefault("spec", {})
            self._pod_spec_defaults(spec)
            if old is None:
                obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        elif (group, plural) == ("", "persistentvolumeclaims"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("volumeMode", "Filesystem")
            if old is None:
                obj["status"] = {"phase": "Pending"}
        elif (group, plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            for ver in (obj.get("spec") or {}).get("versions") or []:
                ver.setdefault("served", True)
            obj.setdefault("spec", {}).setdefault("conversion", {"strategy": "None"})
            names = obj["spec"].setdefault("names", {})
            if names.get("kind"):
                names.setdefault("singular", names["kind"].lower())
                names.setdefault("listKind", names["kind"] + "List")
            if old is None:
                finalizers = obj["metadata"].setdefault("finalizers", [])
                if CRD_CLEANUP_FINALIZER not in finalizers:
                    finalizers.append(CRD_CLEANUP_FINALIZER)

    def _pod_template_defaults(self, template):
        if isinstance(template, dict):
            self._pod_spec_defaults(template.setdefault("spec", {}))

    @staticmethod
    def _pod_spec_defaults(spec):
        if not isinstance(spec, dict):
            return
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        for field in ("containers", "initContainers"):
            for container in spec.get(field) or []:
                if isinstance(container, dict):
                    container.setdefault("imagePullPolicy", "Always" if str(container.get("image", "")).endswith(":latest")
                                         or ":" not in str(container.get("image", "")).rsplit("/", 1)[-1] else "IfNotPresent")
                    container.setdefault("terminationMessagePath", "/dev/termination-log")
                    container.setdefault("terminationMessagePolicy", "File")
                    container.setdefault("resources", {})
                    for port in container.get("ports") or []:
                        if isinstance(port, dict):
                            port.setdefault("protocol", "TCP")

    def _allocate_node_port(self):
        used = {p.get("nodePort") for svc in self.iter_objects("", "services")
                for p in (svc.get("spec") or {}).get("ports") or [] if isinstance(p, dict)}
        for port in range(30000, 32768):
            if port not in used:
                return port
        raise ApiError(422, "Invalid", "no node ports left in the range 30000-32767")

    def _allocate_ip(self):
        used = set()
        for svc in self.iter_objects("", "services"):
            used.add((svc.get("spec") or {}).get("clusterIP"))
        for idx in range(2, 65000):
            candidate = "10.96.%d.%d" % (idx // 250, idx % 250 + 1)
            if candidate not in used:
                return candidate
        return "10.96.255.254"

    def _type_checks(self, rtype, obj, old):
        """Semantic checks the apiserver makes beyond the schema (a subset)."""
        group, plural = rtype.group, rtype.plural
        name = obj["metadata"].get("name", "")
        causes = []
        if (group, plural) in (("", "configmaps"), ("", "secrets")) and old is not None and old.get("immutable"):
            for field in ("data", "binaryData", "stringData"):
                if (old.get(field) or {}) != (obj.get(field) or {}):
                    causes.append(("FieldValueForbidden", field, "Forbidden: field is immutable when `immutable` is set"))
        if group == "apps" and plural in ("deployments", "replicasets", "statefulsets", "daemonsets"):
            spec = obj.get("spec") or {}
            selector = spec.get("selector") or {}
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if not selector:
                causes.append(("FieldValueRequired", "spec.selector", "Required value"))
            elif any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
                causes.append(("FieldValueInvalid", "spec.template.metadata.labels", "Invalid value: %s: `selector` does not "
                               "match template `labels`" % json.dumps(labels, sort_keys=True)))
            if old is not None and (old.get("spec") or {}).get("selector") != selector:
                causes.append(("FieldValueInvalid", "spec.selector", "Invalid value: %s: field is immutable"
                               % json.dumps(selector, sort_keys=True)))
        if (group, plural) == ("apps", "statefulsets") and old is not None:
            mutable = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                       "minReadySeconds", "revisionHistoryLimit")
            old_spec, new_spec = old.get("spec") or {}, obj.get("spec") or {}
            if any(old_spec.get(k) != new_spec.get(k) for k in set(old_spec) | set(new_spec) if k not in mutable):
                causes.append(("FieldValueForbidden", "spec", "Forbidden: updates to statefulset spec for fields other than "
                               "'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
                               "and 'minReadySeconds' are forbidden"))
        if (group, plural) == ("batch", "jobs") and old is not None:
            old_tpl = (old.get("spec") or {}).get("template")
            if old_tpl is not None and old_tpl != (obj.get("spec") or {}).get("template"):
                causes.append(("FieldValueInvalid", "spec.template", "Invalid value: %s: field is immutable"
                               % json.dumps(obj.get("spec", {}).get("template"), sort_keys=True)[:200]))
        if (group, plural) == ("", "services") and old is not None:
            old_ip = (old.get("spec") or {}).get("clusterIP")
            new_ip = (obj.get("spec") or {}).get("clusterIP")
            if old_ip and new_ip and old_ip != new_ip:
                causes.append(("FieldValueInvalid", "spec.clusterIPs[0]", "Invalid value: []string{\"%s\"}: may not change once "
                               "set" % new_ip))
        if (group, plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            causes.extend(self._crd_checks(obj, old))
        if (group, plural) == ("", "pods"):
            for idx, container in enumerate((obj.get("spec") or {}).get("containers") or []):
                if isinstance(container, dict) and not container.get("image"):
                    causes.append(("FieldValueRequired", "spec.containers[%d].image" % idx, "Required value"))
        if causes:
            raise invalid(rtype, name, causes)

    def _crd_checks(self, obj, old):
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        causes = []
        name = obj["metadata"].get("name", "")
        if not spec.get("group"):
            causes.append(("FieldValueRequired", "spec.group", "Required value"))
        if not names.get("plural"):
            causes.append(("FieldValueRequired", "spec.names.plural", "Required value"))
        if not names.get("kind"):
            causes.append(("FieldValueRequired", "spec.names.kind", "Required value"))
        if names.get("plural") and spec.get("group") and name != "%s.%s" % (names["plural"], spec["group"]):
            causes.append(("FieldValueInvalid", "metadata.name", 'Invalid value: "%s": must be spec.names.plural+"."+spec.group'
                           % name))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(("FieldValueNotSupported", "spec.scope", 'Unsupported value: "%s": supported values: "Cluster", '
                           '"Namespaced"' % spec.get("scope", "")))
        versions = spec.get("versions") or []
        if not versions:
            causes.append(("FieldValueRequired", "spec.versions", "Required value: must have exactly one version marked as "
                           "storage version"))
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(("FieldValueInvalid", "spec.versions", "Invalid value: %s: must have exactly one version marked as "
                           "storage version" % json.dumps([v.get("name") for v in versions])))
        for idx, ver in enumerate(versions):
            node = (ver.get("schema") or {}).get("openAPIV3Schema")
            if node is None:
                causes.append(("FieldValueRequired", "spec.versions[%d].schema.openAPIV3Schema" % idx,
                               "Required value: schemas are required"))
                continue
            for field, message in schemalib.validate_crd_schema(node):
                causes.append(("FieldValueInvalid" if "Unsupported" not in message else "FieldValueNotSupported",
                               "spec.versions[%d].schema.openAPIV3Schema%s" % (idx, field), message))
        if old is not None:
            old_spec = old.get("spec") or {}
            if old_spec.get("scope") and old_spec.get("scope") != spec.get("scope"):
                causes.append(("FieldValueInvalid", "spec.scope", "Invalid value: \"%s\": field is immutable" % spec.get("scope")))
            stored = (old.get("status") or {}).get("storedVersions") or []
            for ver in stored:
                if ver not in [v.get("name") for v in versions]:
                    causes.append(("FieldValueInvalid", "status.storedVersions[%d]" % stored.index(ver),
                                   'Invalid value: "%s": missing from spec.versions; %s was previously a storage version, and '
                                   'must remain in spec.versions until a storage migration ensures no data remains persisted '
                                   "in %s and %s is removed from status.storedVersions" % (ver, ver, ver, ver)))
        return causes

    def _bump_generation(self, rtype, obj, old):
        meta = obj["metadata"]
        if not rtype.generation:
            meta.pop("generation", None)
            return
        if old is None:
            meta["generation"] = 1
            return
        gen = (old.get("metadata") or {}).get("generation", 1)
        changed = _spec_part(obj) != _spec_part(old)
        if rtype.crd is not None and not rtype.status:
            changed = changed or obj.get("status") != old.get("status")
        if changed:
            gen += 1
        meta["generation"] = gen

    # pylint: disable=too-many-branches,too-many-statements
    def create(self, rtype, namespace, body, ctx, version=None, managed=None):
        """Create an object; ``managed`` supplies ready managedFields (server-side apply)."""
        with self.lock:
            self._check_identity(rtype, body, namespace, version=version)
            obj = copy.deepcopy(body)
            obj["apiVersion"] = rtype.api_version(version)
            obj["kind"] = rtype.kind
            meta = obj.setdefault("metadata", {})
            if not meta.get("name"):
                if meta.get("generateName"):
                    meta["name"] = meta["generateName"] + _rand_suffix()
                else:
                    raise invalid(rtype, "", [("FieldValueRequired", "metadata.name", "Required value: name or generateName "
                                               "is required")])
            name = meta["name"]
            self._validate_name(rtype, name)
            if rtype.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            self._check_namespace(rtype, namespace, name)
            if self.raw_get(rtype.group, rtype.plural, namespace if rtype.namespaced else "", name) is not None:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (rtype.group_resource, name),
                               {"name": name, "group": rtype.group, "kind": rtype.plural})
            self._metadata_checks(rtype, obj)
            if rtype.status and rtype.crd is None:
                if rtype.plural != "nodes":
                    obj.pop("status", None)
                # built-in status structs serialise as {} with their non-omitempty fields zero
                obj["status"] = dict(self.status_zeros(rtype), **(obj.get("status") or {}))
            elif rtype.status:
                obj.pop("status", None)
            obj = self._check_schema(rtype, obj, ctx, name, version)
            meta = obj["metadata"]
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(field, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_iso()
            self._defaults(rtype, obj)
            self._type_checks(rtype, obj, None)
            self._bump_generation(rtype, obj, None)
            obj["apiVersion"] = rtype.api_version()
            if managed is not None:
                meta["managedFields"] = managed
            else:
                meta.pop("managedFields", None)
                ssa.track_update(None, obj, ctx.manager, self.schema_for(rtype), obj["apiVersion"])
            if ctx.dry_run:
                return obj
            return self._commit(rtype, "ADDED", obj)

    def update(self, rtype, namespace, name, body, ctx, subresource="", version=None):
        with self.lock:
            self._check_identity(rtype, body, namespace, name, version)
            old = self.raw_get(rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)
            if old is None:
                raise not_found(rtype, name)
            want_rv = (body.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"].get("resourceVersion"):
                raise conflict(rtype, name)
            if not (body.get("metadata") or {}).get("name"):
                body = dict(body)
                body["metadata"] = dict(body.get("metadata") or {}, name=name)
            new = self._merge_subresource(rtype, old, copy.deepcopy(body), subresource)
            return self._finish_write(rtype, old, new, ctx, subresource, version, operation="Update")

    @staticmethod
    def _merge_subresource(rtype, old, new, subresource):
        """Main-resource writes keep status; /status writes keep everything but status."""
        if subresource == "status":
            out = copy.deepcopy(old)
            if "status" in new:
                out["status"] = new["status"]
            else:
                out.pop("status", None)
            return out
        if rtype.status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return new

    def _finish_write(self, rtype, old, new, ctx, subresource, version, operation="Update", managed=None):
        name = old["metadata"]["name"]
        new["apiVersion"] = rtype.api_version(version)
        new["kind"] = rtype.kind
        meta = new.setdefault("metadata", {})
        meta["name"] = name
        if rtype.namespaced:
            meta["namespace"] = old["metadata"].get("namespace")
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        if subresource != "status":
            self._metadata_checks(rtype, new)
            new = self._check_schema(rtype, new, ctx, name, version)
            meta = new["metadata"]
            self._defaults(rtype, new, old)
            self._type_checks(rtype, new, old)
        elif rtype.crd is not None:
            new = self._check_schema(rtype, new, ctx, name, version)
            meta = new["metadata"]
        if old["metadata"].get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
            if added:
                raise invalid(rtype, name, [("FieldValueForbidden", "metadata.finalizers", "Forbidden: no new finalizers can be "
                                             "added if the object is being deleted, found new finalizers %s" % json.dumps(sorted(added)))])
        self._bump_generation(rtype, new, old)
        new["apiVersion"] = rtype.api_version()
        if managed is not None:
            meta["managedFields"] = managed
        else:
            meta["managedFields"] = old["metadata"].get("managedFields") or []
            ssa.track_update(old, new, ctx.manager, self.schema_for(rtype), new["apiVersion"], subresource, operation)
        meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        if _strip_for_compare(new) == _strip_for_compare(old) and (
                self._managed_sans_time(new) == self._managed_sans_time(old)):
            return old
        if ctx.dry_run:
            return new
        if meta.get("deletionTimestamp") and _finalized(rtype, new):
            self._commit(rtype, "DELETED", new, old)
            return new
        return self._commit(rtype, "MODIFIED", new, old)

    @staticmethod
    def _managed_sans_time(obj):
        return [{k: v for k, v in e.items() if k != "time"} for e in (obj.get("metadata") or {}).get("managedFields") or []]

    def patch(self, rtype, namespace, name, patch_type, body, ctx, subresource="", version=None):
        with self.lock:
            old = self.raw_get(rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)
            if patch_type == "apply":
                return self._apply(rtype, namespace, name, old, body, ctx, subresource, version)
            if old is None:
                raise not_found(rtype, name)
            served = self.serve(rtype, old, version)
            try:
                if patch_type == "merge":
                    new = patchlib.merge_patch(served, body)
                elif patch_type == "json":
                    new = patchlib.json_patch(served, body)
                elif patch_type == "strategic":
                    if rtype.crd is not None:
                        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                       "accepted media types include: application/json-patch+json, "
                                       "application/merge-patch+json, application/apply-patch+yaml")
                    new = patchlib.strategic_merge_patch(served, body, self.schema_for(rtype, version))
                else:
                    raise ApiError(415, "UnsupportedMediaType", "unsupported patch type")
            except patchlib.PatchError as exc:
                if exc.code == 400:
                    raise bad_request(str(exc))
                raise ApiError(422, "Invalid", str(exc))
            if not isinstance(new, dict):
                raise bad_request("patch did not produce an object")
            want_rv = (new.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"].get("resourceVersion"):
                raise conflict(rtype, name)
            if (new.get("metadata") or {}).get("name") != name:
                raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % ((new.get("metadata") or {}).get("name"), name))
            new = self._merge_subresource(rtype, old, new, subresource)
            return self._finish_write(rtype, old, new, ctx, subresource, version, operation="Update")

    def _apply(self, rtype, namespace, name, old, applied, ctx, subresource, version):
        if not isinstance(applied, dict):
            raise bad_request("error decoding YAML: apply configuration must be an object")
        if not applied.get("apiVersion") or not applied.get("kind"):
            raise bad_request("invalid object type: %s, %s" % (applied.get("apiVersion", ""), applied.get("kind", "")))
        self._check_identity(rtype, applied, namespace, name, version)
        if not ctx.manager:
            raise bad_request("PATCH %s: fieldManager is required for apply requests" % rtype.plural)
        applied = copy.deepcopy(applied)
        applied.setdefault("metadata", {})["name"] = name
        want_rv = applied["metadata"].pop("resourceVersion", None)
        applied["metadata"].pop("managedFields", None)
        if rtype.status and subresource != "status":
            applied.pop("status", None)
        applied = self._check_schema(rtype, applied, ctx, name, version, partial=True)
        schema = self.schema_for(rtype, version)
        ssa.fill_key_defaults(applied, schema)
        api_version = rtype.api_version(version)
        if old is None:
            if subresource:
                raise not_found(rtype, name)
            if want_rv:
                raise conflict(rtype, name)
            result = ssa.apply(None, applied, ctx.manager, schema, api_version, True, subresource)
            managed = result["metadata"].pop("managedFields")
            return self.create(rtype, namespace, result, ctx, version, managed=managed)
        if want_rv and want_rv != old["metadata"].get("resourceVersion"):
            raise conflict(rtype, name)
        try:
            result = ssa.apply(self.serve(rtype, old, version), applied, ctx.manager, schema, api_version, ctx.force,
                               subresource)
        except ssa.ApplyConflict as exc:
            lines = ['conflict with "%s"%s: %s' % (m, " using " + v if v else "", p) for m, v, p in exc.conflicts]
            message = "Apply failed with %d conflict%s: %s" % (len(lines), "s" if len(lines) > 1 else "", "\n".join(lines))
            raise ApiError(409, "Conflict", message, {"causes": [
                {"reason": "FieldManagerConflict", "message": 'conflict with "%s"%s' % (m, " using " + v if v else ""),
                 "field": p} for m, v, p in exc.conflicts]})
        managed = result["metadata"].get("managedFields")
        result = self._merge_subresource(rtype, old, result, subresource)
        return self._finish_write(rtype, old, result, ctx, subresource, version, operation="Apply", managed=managed)

    def delete(self, rtype, namespace, name, ctx, options=None):
        """Delete; returns (object or None when gone, finished)."""
        options = options or {}
        with self.lock:
            key_ns = namespace if rtype.namespaced else ""
            old = self.raw_get(rtype.group, rtype.plural, key_ns, name)
            if old is None:
                raise not_found(rtype, name)
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
                raise conflict(rtype, name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                               % (pre["uid"], old["metadata"].get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"].get("resourceVersion"):
                raise conflict(rtype, name, "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                               "object meta: %s" % (pre["resourceVersion"], old["metadata"].get("resourceVersion")))
            policy = options.get("propagationPolicy")
            if options.get("orphanDependents") is True:
                policy = "Orphan"
            elif options.get("orphanDependents") is False and not policy:
                policy = "Background"
            if not policy:
                policy = "Orphan" if (rtype.group, rtype.plural) in (("batch", "jobs"),) else "Background"
            if policy not in ("Orphan", "Background", "Foreground"):
                raise invalid(rtype, name, [("FieldValueNotSupported", "propagationPolicy", 'Unsupported value: "%s": supported '
                                             'values: "Foreground", "Background", "Orphan", "nil"' % policy)])
            new = copy.deepcopy(old)
            meta = new["metadata"]
            finalizers = list(meta.get("finalizers") or [])
            if rtype.plural == "namespaces" and rtype.group == "" and name in ("default", "kube-system", "kube-public"):
                raise ApiError(403, "Forbidden", 'namespaces "%s" is forbidden: this namespace may not be deleted' % name,
                               {"name": name, "kind": "namespaces"})
            if rtype.plural == "namespaces" and rtype.group == "":
                new.setdefault("status", {})["phase"] = "Terminating"
                if "kubernetes" in ((new.get("spec") or {}).get("finalizers") or []) and not meta.get("deletionTimestamp"):
                    meta["deletionTimestamp"] = now_iso()
                    meta["deletionGracePeriodSeconds"] = 0
                    if ctx.dry_run:
                        return new, False
                    return self._commit(rtype, "MODIFIED", new, old), False
            if policy == "Orphan" and not ctx.dry_run:
                self._orphan_dependents(meta.get("uid"))
            if policy == "Foreground" and self._has_dependents(meta.get("uid")):
                if "foregroundDeletion" not in finalizers:
                    finalizers.append("foregroundDeletion")
            if finalizers:
                if meta.get("deletionTimestamp") and finalizers == meta.get("finalizers"):
                    return old, False
                meta["finalizers"] = finalizers
                meta.setdefault("deletionTimestamp", now_iso())
                meta.setdefault("deletionGracePeriodSeconds", 0)
                if ctx.dry_run:
                    return new, False
                return self._commit(rtype, "MODIFIED", new, old), False
            if ctx.dry_run:
                return old, True
            meta.setdefault("deletionTimestamp", now_iso())
            self._commit(rtype, "DELETED", new, old)
            return new, True

    def _has_dependents(self, uid):
        for bucket in self.objects.values():
            for obj in bucket.values():
                if uid in _owner_uids(obj):
                    return True
        return False

    def _orphan_dependents(self, uid):
        for (group, plural), bucket in list(self.objects.items()):
            rtype = self.registry.lookup_group_resource(group, plural)
            for obj in list(bucket.values()):
                if uid in _owner_uids(obj):
                    new = copy.deepcopy(obj)
                    refs = [r for r in new["metadata"]["ownerReferences"] if r.get("uid") != uid]
                    if refs:
                        new["metadata"]["ownerReferences"] = refs
                    else:
                        new["metadata"].pop("ownerReferences")
                    if rtype is not None:
                        self._commit(rtype, "MODIFIED", new, obj)

    # ---- controller-side writes ----------------------------------------------------------------

    def system_write(self, rtype, new, old=None, manager="kube-controller-manager", subresource="status"):
        """A controller's write: no validation; skipped when nothing changed."""
        with self.lock:
            if old is not None and _strip_for_compare(new) == _strip_for_compare(old):
                return old
            new.setdefault("apiVersion", rtype.api_version())
            new.setdefault("kind", rtype.kind)
            meta = new.setdefault("metadata", {})
            if old is None:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", now_iso())
                if rtype.generation:
                    meta.setdefault("generation", 1)
                ssa.track_update(None, new, manager, self.schema_for(rtype), new["apiVersion"])
                return self._commit(rtype, "ADDED", new)
            if rtype.status and isinstance(new.get("status"), dict):
                zeros = self.status_zeros(rtype)
                if any(k not in new["status"] for k in zeros):
                    new["status"] = dict(zeros, **new["status"])
            meta["managedFields"] = old["metadata"].get("managedFields") or []
            ssa.track_update(old, new, manager, self.schema_for(rtype), new["apiVersion"], subresource)
            if meta.get("deletionTimestamp") and _finalized(rtype, new):
                return self._commit(rtype, "DELETED", new, old)
            return self._commit(rtype, "MODIFIED", new, old)

    def system_delete(self, rtype, obj):
        with self.lock:
            try:
                self.delete(rtype, obj["metadata"].get("namespace", ""), obj["metadata"]["name"],
                            Context("kube-controller-manager"), {"propagationPolicy": "Background"})
            except ApiError:
                pass

    # ---- watch ----------------------------------------------------------------------------------

    def events_after(self, rv):
        """Events with resourceVersion > rv (caller holds the lock). None when rv is too old."""
        if rv < self.compacted_rv:
            return None
        if not self.events or self.events[-1][0] <= rv:
            return []
        out = []
        for event in reversed(self.events):
            if event[0] <= rv:
                break
            out.append(event)
        out.reverse()
        return out

    # ---- state ----------------------------------------------------------------------------------

    def snapshot(self):
        with self.lock:
            return {"resourceVersion": self.rv,
                    "objects": [[g, p, obj] for (g, p), bucket in sorted(self.objects.items()) for obj in bucket.values()]}

    def restore(self, data):
        with self.lock:
            self.objects = {}
            for group, plural, obj in data.get("objects", []):
                meta = obj.get("metadata") or {}
                self.objects.setdefault((group, plural), {})[(meta.get("namespace", ""), meta.get("name"))] = obj
            self.rv = int(data.get("resourceVersion", 0))
            self.events.clear()
            self.compacted_rv = self.rv
            self.crd_dirty = True
            self.gc_dirty = True
            self.cond.notify_all()

    def clear(self):
        with self.lock:
            self.objects = {}
            self.events.clear()
            self.compacted_rv = self.rv
            self.crd_dirty = True
            self.epoch += 1
            self.cond.notify_all()

    def sync_crds(self):
        """Serve the custom resources of Established CRDs (called after CRD writes)."""
        with self.lock:
            if not self.crd_dirty:
                return False
            self.crd_dirty = False
            types = []
            for crd in self.iter_objects("apiextensions.k8s.io", "customresourcedefinitions"):
                conds = (crd.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                    rtype = crd_resource_type(crd)
                    if rtype is not None and rtype.plural:
                        types.append(rtype)
            self.registry.set_custom(types)
            return True


def template_hash(template):
    """A stable short hash of a pod template (the pod-template-hash label)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    alphabet = string.ascii_lowercase[:22] + "0123456789"
    num = int(digest[:16], 16)
    out = ""
    for _attempt in range(10):
        out += alphabet[num % len(alphabet)]
        num //= len(alphabet)
    return out


def match_rule(rule, kind, namespace, name):
    """Does a control-API readiness rule apply to an object?"""
    if rule.get("kind") and rule["kind"].lower() not in (kind.lower(),):
        return False
    if rule.get("namespace") and not fnmatch.fnmatchcase(namespace or "", rule["namespace"]):
        return False
    if rule.get("name") and not fnmatch.fnmatchcase(name, rule["name"]):
        return False
    return True
