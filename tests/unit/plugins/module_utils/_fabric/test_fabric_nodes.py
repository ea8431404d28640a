"""The fabric cluster view's pure parts (quantities, references) and the credentials Role it advises; its reads against
the lab's kube-apiserver are tests/integration/module_utils/_fabric/test_fabric_nodes.py."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import FABRIC_CREDENTIALS_ROLE, parse_quantity, split_ref

COLLECTION = Path(__file__).resolve().parents[5]


@pytest.mark.parametrize("value, expected", [(None, 0), ("2", 2), (3, 3), ("1.0", 1), ("lots", 0)])
def test_parse_quantity(value, expected):
    assert parse_quantity(value) == expected


def test_split_ref():
    assert split_ref("a/b", "x", "o") == ("a", "b")
    with pytest.raises(AicrError):
        split_ref("a/b/c", "x", "o")


def test_the_advised_credentials_role_is_the_one_shipped():
    kind, name, path = FABRIC_CREDENTIALS_ROLE
    documents = yaml.safe_load_all((COLLECTION / path).read_text(encoding="utf-8"))
    role = next(doc for doc in documents if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name)
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]} in role["rules"]
    assert name in (COLLECTION / "docs" / "rbac.md").read_text(encoding="utf-8")
