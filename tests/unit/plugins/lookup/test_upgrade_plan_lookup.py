"""upgrade_plan lookup: many clusters in one call, result parts, errors."""

import copy

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.lookup import upgrade_plan as upgrade_lookup

from upgrade_helpers import CURRENT, catalog_version  # pylint: disable=import-error


@pytest.fixture
def lookup(lookup_plugin):
    return lookup_plugin(upgrade_lookup)


def test_fleet_across_terms(lookup, tmp_path):
    old, new = catalog_version(tmp_path, "v1"), catalog_version(tmp_path, "health")
    clusters = [dict(copy.deepcopy(CURRENT), name="c%d" % i) for i in range(3)]
    out = lookup.run([clusters[:2], clusters[2]], catalog=new, current_catalog=old, cache_dir=str(tmp_path), result="fleet")
    assert out[0]["review"]["clusters"] == ["c0", "c1", "c2"]
    assert lookup.run([clusters[0]], catalog=new, current_catalog=old, cache_dir=str(tmp_path), result="verdict") == ["review"]


def test_errors_name_the_field(lookup, tmp_path):
    old = catalog_version(tmp_path, "v1")
    with pytest.raises(AnsibleLookupError, match=r"clusters\[1\].name"):
        lookup.run([dict(CURRENT), dict(CURRENT)], catalog=old, current_catalog=old)
    with pytest.raises(AnsibleLookupError, match="catalg"):
        lookup.run([dict(CURRENT)], catalg=old)
