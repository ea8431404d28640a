"""The lab's control plane is a real, secure Kubernetes: TLS, RBAC, real controllers, kwok stages, audit log."""

import http.client
import json


from aicr_lab.controlplane import processes


def _deployment(name, namespace, annotations=None, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}}}


def _job(name, namespace, annotations=None):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"annotations": annotations or {}},
                                                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}


def _watch_until(rest, path, predicate, timeout=30):
    """Watch one collection until an event's object satisfies ``predicate``; return that object."""
    listing = rest.get(path)
    for item in listing.get("items", []):
        if predicate(item):
            return item
    conn = http.client.HTTPSConnection(rest.host, rest.port, context=rest.context, timeout=timeout + 5)
    conn.request("GET", "%s?watch=true&resourceVersion=%s&timeoutSeconds=%d" % (path, listing["metadata"]["resourceVersion"], timeout),
                 headers={"Accept": "application/json"})
    response = conn.getresponse()
    buffered = b""
    while True:
        chunk = response.read1(65536)
        if not chunk:
            break
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            event = json.loads(line)
            if predicate(event["object"]):
                conn.close()
                return event["object"]
    conn.close()
    raise AssertionError("no object of %s matched within %ss" % (path, timeout))


def _condition(obj, kind):
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return condition["status"]
    return None


def test_free_ports_are_below_the_ephemeral_range():
    # the kernel gives ephemeral ports to outgoing connections: one picked there could be taken before the server binds it
    low = processes._ephemeral_low()  # pylint: disable=protected-access
    ports = [processes.free_port() for _attempt in range(50)]
    assert all(processes.LOWEST_PORT <= port < low for port in ports), (low, ports)
