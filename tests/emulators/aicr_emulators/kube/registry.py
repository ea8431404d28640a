"""Resource types the emulator serves: the built-in kinds and those of Established CRDs."""

import threading

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class ResourceType:
    """One REST resource (group, plural) served at one or more versions."""

    # pylint: disable=too-many-instance-attributes,too-many-arguments
    def __init__(self, group, versions, plural, kind, namespaced=True, short_names=None, status=False,
                 scale=False, generation=True, categories=None, singular=None, crd=None, verbs=None,
                 list_kind=None, storage_version=None):
        self.group = group
        self.versions = list(versions)
        self.storage_version = storage_version or self.versions[0]
        self.plural = plural
        self.kind = kind
        self.list_kind = list_kind or kind + "List"
        self.namespaced = namespaced
        self.short_names = list(short_names or [])
        self.status = status
        self.scale = scale
        self.generation = generation
        self.categories = list(categories or [])
        self.singular = singular or kind.lower()
        self.crd = crd  # the CRD object (dict) for custom resources
        self.verbs = list(verbs or VERBS)

    @property
    def group_resource(self):
        """``deployments.apps`` / ``configmaps`` as the apiserver names it in messages."""
        return self.plural + "." + self.group if self.group else self.plural

    @property
    def group_kind(self):
        return self.kind + "." + self.group if self.group else self.kind

    def api_version(self, version=None):
        version = version or self.storage_version
        return self.group + "/" + version if self.group else version

    def schema_for(self, version):
        """The CRD openAPIV3Schema of ``version`` (custom resources only)."""
        if not self.crd:
            return None
        for ver in self.crd.get("spec", {}).get("versions", []):
            if ver.get("name") == version:
                return (ver.get("schema") or {}).get("openAPIV3Schema")
        return None

    def crd_version(self, version):
        if not self.crd:
            return None
        for ver in self.crd.get("spec", {}).get("versions", []):
            if ver.get("name") == version:
                return ver
        return None

    def __repr__(self):
        return "ResourceType(%s/%s %s)" % (self.group, self.versions, self.plural)


def _r(group, version, plural, kind, **kw):
    versions = version if isinstance(version, list) else [version]
    return ResourceType(group, versions, plural, kind, **kw)


def builtin_types():
    """The built-in resource types (a fresh list each call)."""
    cluster = {"namespaced": False}
    cfg = {"generation": False}
    return [
        # core/v1
        _r("", "v1", "namespaces", "Namespace", short_names=["ns"], status=True, generation=False, **cluster),
        _r("", "v1", "pods", "Pod", short_names=["po"], status=True, categories=["all"]),
        _r("", "v1", "services", "Service", short_names=["svc"], status=True, categories=["all"], generation=False),
        _r("", "v1", "configmaps", "ConfigMap", short_names=["cm"], **cfg),
        _r("", "v1", "secrets", "Secret", **cfg),
        _r("", "v1", "serviceaccounts", "ServiceAccount", short_names=["sa"], **cfg),
        _r("", "v1", "nodes", "Node", short_names=["no"], status=True, generation=False, **cluster),
        _r("", "v1", "endpoints", "Endpoints", short_names=["ep"], **cfg),
        _r("", "v1", "events", "Event", short_names=["ev"], **cfg),
        _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=["pvc"], status=True, generation=False),
        _r("", "v1", "persistentvolumes", "PersistentVolume", short_names=["pv"], status=True, generation=False, **cluster),
        _r("", "v1", "replicationcontrollers", "ReplicationController", short_names=["rc"], status=True, scale=True,
           categories=["all"]),
        _r("", "v1", "limitranges", "LimitRange", short_names=["limits"], **cfg),
        _r("", "v1", "resourcequotas", "ResourceQuota", short_names=["quota"], status=True, generation=False),
        _r("", "v1", "podtemplates", "PodTemplate", **cfg),
        # apps/v1
        _r("apps", "v1", "deployments", "Deployment", short_names=["deploy"], status=True, scale=True, categories=["all"]),
        _r("apps", "v1", "replicasets", "ReplicaSet", short_names=["rs"], status=True, scale=True, categories=["all"]),
        _r("apps", "v1", "statefulsets", "StatefulSet", short_names=["sts"], status=True, scale=True, categories=["all"]),
        _r("apps", "v1", "daemonsets", "DaemonSet", short_names=["ds"], status=True, categories=["all"]),
        _r("apps", "v1", "controllerrevisions", "ControllerRevision", **cfg),
        # batch/v1
        _r("batch", "v1", "jobs", "Job", status=True, categories=["all"]),
        _r("batch", "v1", "cronjobs", "CronJob", short_names=["cj"], status=True, categories=["all"]),
        # autoscaling
        _r("autoscaling", ["v2", "v1"], "horizontalpodautoscalers", "HorizontalPodAutoscaler", short_names=["hpa"],
           status=True, categories=["all"]),
        # policy
        _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=["pdb"], status=True),
        # networking
        _r("networking.k8s.io", "v1", "ingresses", "Ingress", short_names=["ing"], status=True, generation=False),
        _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", generation=False, **cluster),
        _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short_names=["netpol"]),
        # discovery
        _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", **cfg),
        # rbac (stored, never enforced)
        _r("rbac.authorization.k8s.io", "v1", "roles", "Role", **cfg),
        _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", **cfg),
        _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", generation=False, **cluster),
        _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", generation=False, **cluster),
        # apiextensions
        _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
           short_names=["crd", "crds"], status=True, categories=["api-extensions"], **cluster),
        # admission (stored, never called)
        _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
           categories=["api-extensions"], **cluster),
        _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
           categories=["api-extensions"], **cluster),
        _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
           status=True, categories=["api-extensions"], **cluster),
        _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding",
           categories=["api-extensions"], **cluster),
        _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", short_names=["pc"], generation=False, **cluster),
        _r("coordination.k8s.io", "v1", "leases", "Lease", **cfg),
        # storage
        _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", short_names=["sc"], generation=False, **cluster),
        _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", generation=False, **cluster),
        _r("storage.k8s.io", "v1", "csinodes", "CSINode", generation=False, **cluster),
        _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", status=True, generation=False, **cluster),
        _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", **cfg),
        # dynamic resource allocation
        _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", **cluster),
        _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", **cluster),
        _r("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", status=True),
        _r("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"),
        # aggregation, node
        _r("apiregistration.k8s.io", "v1", "apiservices", "APIService", status=True, categories=["api-extensions"],
           generation=False, **cluster),
        _r("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", generation=False, **cluster),
        _r("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", short_names=["csr"],
           status=True, generation=False, **cluster),
        _r("events.k8s.io", "v1", "events", "Event", short_names=["ev"], **cfg),
        _r("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", status=True, **cluster),
        _r("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration",
           status=True, **cluster),
    ]


# Create-only review resources: answered, never stored.
REVIEW_TYPES = [
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False,
       verbs=["create"], generation=False),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False,
       verbs=["create"], generation=False),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", namespaced=False,
       verbs=["create"], generation=False),
    _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", verbs=["create"],
       generation=False),
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False, verbs=["create"], generation=False),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False, verbs=["create"],
       generation=False),
]


def crd_resource_type(crd):
    """The ResourceType a CRD defines (served versions only; storage version first)."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    served = [v["name"] for v in spec.get("versions", []) if v.get("served", True)]
    storage = [v["name"] for v in spec.get("versions", []) if v.get("storage")]
    versions = sorted(served, key=version_priority_key)
    if not versions:
        return None
    storage_version = storage[0] if storage else versions[0]
    status = any((v.get("subresources") or {}).get("status") is not None for v in spec.get("versions", []))
    scale = any((v.get("subresources") or {}).get("scale") is not None for v in spec.get("versions", []))
    return ResourceType(spec.get("group", ""), versions, names.get("plural"), names.get("kind"),
                        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                        short_names=names.get("shortNames"), status=status, scale=scale, generation=True,
                        categories=names.get("categories"), singular=names.get("singular") or names.get("kind", "").lower(),
                        crd=crd, list_kind=names.get("listKind"), storage_version=storage_version)


def version_priority_key(version):
    """Kubernetes version priority: GA > beta > alpha, then higher numbers first, then lexical."""
    import re  # pylint: disable=import-outside-toplevel
    match = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)


class Registry:
    """Thread-safe lookup of resource types by (group, version, plural) and (group, kind)."""

    def __init__(self):
        self._lock = threading.RLock()
        self.builtins = builtin_types()
        self.reviews = list(REVIEW_TYPES)
        self.custom = {}  # (group, plural) -> ResourceType
        self.generation = 0

    def all_types(self):
        with self._lock:
            return self.builtins + list(self.custom.values())

    def set_custom(self, crd_types):
        with self._lock:
            self.custom = {(t.group, t.plural): t for t in crd_types}
            self.generation += 1

    def lookup(self, group, version, plural):
        with self._lock:
            for rtype in self.builtins + self.reviews + list(self.custom.values()):
                if rtype.group == group and rtype.plural == plural and version in rtype.versions:
                    return rtype
        return None

    def lookup_group_resource(self, group, plural):
        with self._lock:
            for rtype in self.builtins + list(self.custom.values()):
                if rtype.group == group and rtype.plural == plural:
                    return rtype
        return None

    def by_kind(self, group, kind):
        with self._lock:
            for rtype in self.builtins + list(self.custom.values()):
                if rtype.group == group and rtype.kind == kind:
                    return rtype
        return None

    def groups(self):
        """[(group, [versions in priority order])] for /apis, core excluded."""
        order = []
        seen = {}
        with self._lock:
            for rtype in self.builtins + self.reviews + list(self.custom.values()):
                if not rtype.group:
                    continue
                if rtype.group not in seen:
                    seen[rtype.group] = []
                    order.append(rtype.group)
                for ver in rtype.versions:
                    if ver not in seen[rtype.group]:
                        seen[rtype.group].append(ver)
        return [(g, sorted(seen[g], key=version_priority_key)) for g in order]

    def types_in(self, group, version):
        with self._lock:
            return [t for t in self.builtins + self.reviews + list(self.custom.values())
                    if t.group == group and version in t.versions]
