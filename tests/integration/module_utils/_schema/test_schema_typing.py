"""Where a null leaf's type legitimately comes from (the chart's commented-out example, Kubernetes well-known keys),
annotation property schemas that give no type, null defaults beside a composition, and recursive aliases."""

import time
import uuid


from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import crd as kube_crd
from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine, publish


# -- the chart's commented-out example ---------------------------------------------------------------------------


# -- Kubernetes well-known keys ----------------------------------------------------------------------------------


# -- annotation property schemas without a type, null beside a composition ----------------------------------------


# -- recursive aliases -------------------------------------------------------------------------------------------


def test_recursive_alias_crd_holds_nested_values_on_the_apiserver(kube, client, shared_dir):
    """The losisin recursive-alias CRD on the lab's real apiserver: accepted, and a custom resource nesting the
    recursion deeper than the schema does is read back unchanged (the cut keeps unknown fields)."""
    path = shared_dir / "values-schema-reference" / "losisin-helm-values-schema-json" / "testdata" / "anchors.yaml"
    domain = "t%s.aicr.io" % uuid.uuid4().hex[:8]
    crd = engine.run({"values_files": [str(path)], "output": "crd", "name": "anchors", "domain": domain})["crd"]
    name = crd["metadata"]["name"]
    try:
        result = publish.publish({"definition": crd, "kubeconfig": kube.kubeconfig_for("crd-publisher"), "wait_sleep": 0.05, "wait_timeout": 60})
        assert result["established"] is True
        spec = crd["spec"]
        values = {"app": {"settings": {"namespace": [{"settings": {"namespace": [{"settings": {"namespace": ["x"]}}]}}]}}}
        body = {"apiVersion": "%s/%s" % (spec["group"], spec["versions"][0]["name"]), "kind": spec["names"]["kind"],
                "metadata": {"name": "deep", "namespace": kube.namespace}, "spec": {"version": "1.0.0", "values": values}}
        path_cr = "/apis/%s/%s/namespaces/%s/%s" % (spec["group"], spec["versions"][0]["name"], kube.namespace, spec["names"]["plural"])
        admin = client("admin")
        deadline = time.monotonic() + 30
        while True:  # each apiserver swaps its CR handler asynchronously after Established
            try:
                admin.request("POST", path_cr, body=body)
                break
            except ClusterError as exc:
                if exc.status not in (404, 422) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert admin.request("GET", path_cr + "/deep")["spec"]["values"] == values
    finally:
        kube.rest.delete("%s/%s" % (kube_crd.BASE_PATH, name))
        deadline = time.monotonic() + 120
        while kube.get("%s/%s" % (kube_crd.BASE_PATH, name)) is not None:
            assert time.monotonic() < deadline, "CRD %s never deleted" % name
            time.sleep(0.05)
