"""Every health check of the real AICR catalog (``$AICR_SHARED/aicr/catalog/checks/*/health-check.yaml``), parsed and
evaluated by ``_release.health.run_check`` against synthetic clusters: one where everything the check asserts holds
(it passes), and for every operation one where exactly that operation does not hold (it fails, naming that step and
operation). The synthetic objects are built from each check's own assertion tree; the JMESPath expressions are
solved from the table below, so an expression the catalog adds later fails this test until it is in the table."""

import copy
import os
import re
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import assertions
from ansible_collections.aicr.runtime.plugins.module_utils._release import health
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import NotServed

SHARED = Path(os.environ.get("AICR_SHARED") or Path(__file__).resolve().parents[6] / "shared")  # the rule of tests/conftest.py
CHECKS = sorted((SHARED / "aicr" / "catalog" / "checks").glob("*/health-check.yaml"))
CLUSTER_SCOPED = {"CustomResourceDefinition", "ClusterPolicy", "NicClusterPolicy", "ResourceFlavor", "ClusterQueue", "Skyhook", "Namespace"}
COMPONENT_NAMESPACE = "component-ns"

_CONDITION = re.compile(r"^\(?conditions(?: \|\| `\[\]`\))?\[\?type == '(\w+)'(?: && status == 'True')?\]")
_WAITING = re.compile(r"^\((init)?[cC]ontainerStatuses \|\| `\[\]`\)\[\?state\.waiting\.reason == ")


def solve(text, holds):
    """A fragment of the parent mapping for which the expression ``text`` holds (``holds``) or does not."""
    found = _CONDITION.match(text)
    if found:
        return {"conditions": [{"type": found.group(1), "status": "True" if holds else "False"}]}
    found = _WAITING.match(text)
    if found:
        key = "initContainerStatuses" if found.group(1) else "containerStatuses"
        return {key: [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}} if holds else {"running": {}}}]}
    table = {
        "availableReplicas > `0`": ({"availableReplicas": 1}, {"availableReplicas": 0}),
        "availableReplicas >= `1`": ({"availableReplicas": 1}, {"availableReplicas": 0}),
        "desiredNumberScheduled > `0`": ({"desiredNumberScheduled": 2}, {"desiredNumberScheduled": 0}),
        "numberReady == desiredNumberScheduled": ({"numberReady": 2}, {"numberReady": 1}),
        "replicas > `0`": ({"replicas": 2}, {"replicas": 0}),
        "readyReplicas >= replicas": ({"readyReplicas": 2}, {"readyReplicas": 1}),
        "keys(data)[?@ == 'password'] | length(@) == `1`": ({"data": {"password": "cGFzcw=="}}, {"data": {"username": "c2x1cm0="}}),
        "contains(\"topology.conf\", 'SwitchName') && !contains(\"topology.conf\", 'aicr-preseed')":
            ({"topology.conf": "SwitchName=s1 Nodes=n[1-2]"}, {"topology.conf": "# aicr-preseed SwitchName=placeholder"}),
    }
    assert text in table, "expression not in the solver's table: (%s)" % text
    return copy.deepcopy(table[text][0 if holds else 1])


def expressions(node, path=()):
    """(path of the parent mapping, expression text) of every ``(expr)`` key of a compiled tree."""
    kind, spec = node
    found = []
    if kind == "map":
        for key, text, expr, _foreach, child in spec:
            if expr is not None:
                found.append((path, expr.text))
            else:
                found.extend(expressions(child, path + (text,)))
    return found


def build(node, broken=None, path=()):
    """An object matching the tree (every expression solved to hold), except the expression ``broken`` (path, text)."""
    kind, spec = node
    if kind == "map":
        out = {}
        for key, text, expr, _foreach, child in spec:
            if expr is not None:
                for k, v in solve(expr.text, (path, expr.text) != broken).items():
                    if isinstance(v, list) and isinstance(out.get(k), list):
                        out[k] = out[k] + v
                    else:
                        out[k] = v
            else:
                out[text] = build(child, broken, path + (text,))
        return out
    if kind == "list":
        return [build(child, broken, path) for child in spec]
    if kind == "scalar":
        return spec
    raise AssertionError("right-hand side expressions are not used by the catalog")


class Store(object):
    """The read side of the run's client (``is_namespaced``, ``get``, ``list`` with a label selector), in memory."""

    def __init__(self, objects):
        self.objects = [copy.deepcopy(o) for o in objects]
        self.reads = 0

    def is_namespaced(self, api_version, kind):
        return kind not in CLUSTER_SCOPED

    def _hits(self, api_version, kind, namespace):
        for obj in self.objects:
            meta = obj["metadata"]
            if obj["apiVersion"] == api_version and obj["kind"] == kind and (namespace is None or meta.get("namespace") == namespace):
                yield obj

    def get(self, api_version, kind, name, namespace=None):
        self.reads += 1
        return next((copy.deepcopy(o) for o in self._hits(api_version, kind, namespace) if o["metadata"].get("name") == name), None)

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.reads += 1
        wanted = dict(p.split("=", 1) for p in (label_selector or "").split(",") if p)
        return [copy.deepcopy(o) for o in self._hits(api_version, kind, namespace)
                if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]


def merged(base, extra):
    """``extra`` deep-merged over ``base`` (two operations may assert on the same object)."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else copy.deepcopy(value)
    return out


def identity(obj):
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])


def assert_object(op, i, broken=None):
    obj = build(op.tree.node, broken=broken)
    obj["metadata"] = dict(obj.get("metadata") or {}, name=op.name or "synthetic-%d" % i)
    if op.kind not in CLUSTER_SCOPED:
        obj["metadata"]["namespace"] = op.namespace or COMPONENT_NAMESPACE
    return obj


def healthy_objects(check):
    """One object per assert operation (matching it; merged when two assert on the same object) and a healthy Pod for
    every namespace an error operation looks at."""
    objects = {}
    for i, op in enumerate(check.operations):
        if op.op == "assert":
            obj = assert_object(op, i)
            objects[identity(obj)] = merged(objects.get(identity(obj), {}), obj)
        elif op.kind == "Pod":
            ns = op.namespace or COMPONENT_NAMESPACE
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "healthy-%d" % i, "namespace": ns},
                   "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}],
                              "initContainerStatuses": [{"name": "i", "state": {"terminated": {"reason": "Completed"}}}]}}
            objects[identity(pod)] = pod
    return list(objects.values())


def run(check, objects):
    clock = [0.0]
    return health.run_check(Store(objects), check, COMPONENT_NAMESPACE, deadline=0.0, poll_interval=1, clock=lambda: clock[0],
                            sleep=lambda s: pytest.fail("no retry expected past the deadline"))


def test_the_catalog_has_its_40_checks():
    assert len(CHECKS) == 40, [p.parent.name for p in CHECKS]


@pytest.mark.parametrize("path", CHECKS, ids=[p.parent.name for p in CHECKS])
def test_catalog_check_passes_on_a_healthy_cluster_and_fails_on_each_broken_operation(path):
    check = assertions.parse_check(path.read_text(), path.parent.name)
    assert check.timeout in (300.0, 420.0)
    if check.no_op:
        assert check.operations == [] and run(check, [])["status"] == health.PASSED
        return
    assert check.operations, "a check without operations must carry aicr/no-op-check"
    healthy = healthy_objects(check)
    passed = run(check, healthy)
    assert passed["status"] == health.PASSED and passed["operations"] == len(check.operations)
    for i, op in enumerate(check.operations):
        if op.op == "assert":
            exprs = expressions(op.tree.node)
            target = identity(assert_object(op, i))
            objects = [o for o in healthy if identity(o) != target]
            if exprs:  # the object is there but the first expression does not hold
                others = [assert_object(o, j) for j, o in enumerate(check.operations) if j != i and o.op == "assert"]
                base = {}
                for other in others:
                    if identity(other) == target:
                        base = merged(base, other)
                objects.append(merged(base, assert_object(op, i, broken=exprs[0])))
        else:
            bad = build(op.tree.node)
            bad["metadata"] = dict(bad.get("metadata") or {}, name="bad-%d" % i, namespace=op.namespace or COMPONENT_NAMESPACE)
            objects = healthy + [bad]
        with pytest.raises(health.HealthCheckFailed) as failure:
            run(check, objects)
        entry = failure.value.entry
        assert entry["status"] == health.FAILED
        assert (entry["step"], entry["operation"]) == (op.step, op.describe(COMPONENT_NAMESPACE)), (i, entry)
        assert entry["step"] in entry["message"] and op.kind in entry["message"]
        if op.op == "assert" and exprs:
            assert "(%s)" % exprs[0][1] in entry["expression"] and entry["actual"] != entry["expected"], entry
            assert entry["resource"].startswith(op.kind + " ")
        elif op.op == "assert":
            assert entry["actual"] == "none found" and "no resource found" in entry["message"]
        else:
            assert entry["resource"] == "Pod %s/bad-%d" % (op.namespace or COMPONENT_NAMESPACE, i)
            assert entry["expected"] == "no match"


def test_counts_of_the_catalog_checks():
    """The figures quoted in the docs: 40 checks, 4 no-op, 36 with operations (assert and error counted)."""
    parsed = [assertions.parse_check(p.read_text(), p.parent.name) for p in CHECKS]
    ops = [o for c in parsed for o in c.operations]
    assert (len(parsed), sum(1 for c in parsed if c.no_op)) == (40, 4)
    assert (sum(1 for o in ops if o.op == "assert"), sum(1 for o in ops if o.op == "error")) == (118, 138)


def test_a_kind_the_cluster_does_not_serve_has_no_candidates():
    check = assertions.parse_check(CHECKS[0].read_text(), CHECKS[0].parent.name)

    class Unserved(Store):
        def is_namespaced(self, api_version, kind):
            raise NotServed("not served", status=404)

    with pytest.raises(health.HealthCheckFailed) as failure:
        health.run_check(Unserved([]), check, COMPONENT_NAMESPACE, 0.0, 1, lambda: 0.0, lambda s: None)
    assert "no resource found" in failure.value.entry["message"]


def test_the_catalog_is_where_the_tests_expect_it():
    assert Path(CHECKS[0]).is_file()
