"""The ClusterStack CRD: the shipped YAML is what the Python definition renders, and it is structural."""

from pathlib import Path

import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._schema import structural
from ansible_collections.aicr.runtime.plugins.module_utils._stack import crd

SHIPPED = Path(__file__).resolve().parents[5] / "roles" / "stack_reconcile" / "files" / "clusterstack-crd.yml"


def test_regenerating_gives_the_shipped_file():
    assert SHIPPED.read_text() == crd.render_yaml(), "run: python -c 'from ...stack import crd; print(crd.render_yaml())' > " + str(SHIPPED)


def test_crd_is_structural_and_cluster_scoped_with_printer_columns():
    doc = yaml.safe_load(SHIPPED.read_text())
    assert structural.check_crd(doc) == []
    spec = doc["spec"]
    assert doc["metadata"]["name"] == "clusterstacks.runtime.aicr.io" and spec["scope"] == "Cluster"
    version = spec["versions"][0]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Phase", "Recipe", "Ready", "Age"]
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(props["spec"]["properties"]) >= {"criteria", "profile", "catalog", "skipComponents", "componentOverrides", "repositoryMirrors",
                                                "devices", "suspend", "autoUpdate", "resyncInterval"}
    status = props["status"]["properties"]
    assert status["phase"]["enum"] == ["Pending", "Resolving", "Attaching", "Deploying", "Ready", "Degraded", "Failed"]
    assert set(status["components"]["items"]["properties"]) >= {"name", "kind", "namespace", "chart", "version", "revision", "ready", "phase",
                                                                "blockedBy", "lastTransitionTime"}
    assert set(status["devices"]["items"]["properties"]) == {"node", "type", "model", "resUUID", "serial", "state"}
    assert set(status["recipe"]["properties"]) == {"name", "catalogVersion", "catalogDigest", "appliedOverlays", "resolvedAt"}
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_checker_would_catch_a_broken_definition():
    broken = crd.build_crd()
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["suspend"] = {"description": "no type"}
    assert structural.check_crd(broken), "a node without a type is not structural"
