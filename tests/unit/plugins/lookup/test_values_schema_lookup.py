"""values_schema lookup: its keywords are the documented options, nothing else."""

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.lookup import values_schema as values_schema_lookup


@pytest.fixture
def lookup(lookup_plugin):
    """The plugin with its documented options registered, as the plugin loader would do."""
    return lookup_plugin(values_schema_lookup, repository_credentials={"type": "list", "elements": "dict"})  # from the doc fragment


@pytest.fixture
def values_file(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("replicas: 1\n")
    return str(path)


def test_the_schema_of_a_values_file(lookup, values_file):
    assert lookup.run([values_file])[0]["properties"]["replicas"]["type"] == "integer"


def test_an_unknown_keyword_is_refused_naming_the_nearest_option(lookup, values_file):
    """ouput= used to be ignored and the JSON Schema returned instead of the CRD (issue 36)."""
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run([values_file], ouput="crd", resutl="all")
    assert str(err.value).startswith("values_schema lookup: ouput is not known; did you mean output? allowed: api_version, ")
    assert str(err.value).endswith("(and 1 more problem, listed in errors)")
