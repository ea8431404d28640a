"""recipe lookup: terms, options, result selection and errors."""

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.lookup import recipe as recipe_lookup


@pytest.fixture
def lookup(lookup_plugin):
    """The plugin with its documented options registered, as the plugin loader would do."""
    return lookup_plugin(recipe_lookup)


@pytest.fixture
def catalog_dir(shared_dir):
    return str(shared_dir / "aicr" / "catalog")


def test_terms_to_criteria():
    assert recipe_lookup.criteria_from_terms(["service=eks", "os=ubuntu"], {"service": "gke", "intent": "training"}) == {
        "service": "eks", "intent": "training", "os": "ubuntu"}
    with pytest.raises(AnsibleLookupError):
        recipe_lookup.criteria_from_terms(["eks"], {})
    with pytest.raises(AnsibleLookupError):
        recipe_lookup.criteria_from_terms(["gpu=h100"], {})


def test_deployment_order(lookup, catalog_dir, tmp_path):
    out = lookup.run(["service=eks", "accelerator=h100", "os=ubuntu", "intent=training", "platform=kubeflow"],
                     catalog=catalog_dir, cache_dir=str(tmp_path), result="deployment_order")
    assert out[0][0] == "aws-ebs-csi-driver" and "kubeflow-trainer" in out[0]


def test_all_and_parts(lookup, catalog_dir, tmp_path):
    whole = lookup.run([], catalog=catalog_dir, criteria={"service": "kind", "intent": "training", "accelerator": "h100"}, cache_dir=str(tmp_path))
    assert set(whole[0]) >= {"recipe", "components", "recipe_name", "catalog_digest", "graph"}
    name = lookup.run([], catalog=catalog_dir, criteria={"service": "kind", "intent": "training", "accelerator": "h100"}, result="recipe_name",
                      cache_dir=str(tmp_path))
    assert name == ["h100-kind-training"]


def test_errors_become_lookup_errors(lookup, catalog_dir, tmp_path):
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run(["service=gke"], catalog=catalog_dir, cache_dir=str(tmp_path))
    assert str(err.value) == "service 'gke' has no OS-agnostic recipe for accelerator ''; specify an OS (valid: cos)"


def test_result_choice_is_validated(lookup, catalog_dir):
    with pytest.raises(Exception) as err:
        lookup.run([], catalog=catalog_dir, result="bogus")
    assert "bogus" in str(err.value)


def test_an_unknown_keyword_is_refused_naming_the_nearest_option(lookup, catalog_dir, tmp_path):
    """critera= used to be ignored and the base recipe returned (issue 36)."""
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run([], catalog=catalog_dir, critera={"service": "eks"}, cache_dir=str(tmp_path))
    assert str(err.value).startswith("recipe lookup: critera is not known; did you mean criteria? allowed: cache_dir, catalog, ")


def test_use_cache_is_a_boolean_never_a_string_read_as_false(lookup, catalog_dir, tmp_path):
    """use_cache='perhaps' used to be read as false (Ansible's non-strict bool) and the catalog resolved (issue 36)."""
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run([], catalog=catalog_dir, criteria={"service": "kind", "intent": "training"}, use_cache="perhaps", cache_dir=str(tmp_path))
    assert str(err.value) == "recipe lookup: use_cache: 'perhaps' is not allowed; use true or false"


def test_node_scheduling_is_written_into_the_values_as_the_module_does(lookup, catalog_dir, tmp_path):
    """The lookup had no node_scheduling keyword (issue 38): it is recipe_resolve's option, the same engine."""
    scheduling = {"accelerated": {"node_selector": {"nodeGroup": "gpu"}, "tolerations": ["nvidia.com/gpu=present:NoSchedule"]}}
    comps = lookup.run(["service=eks", "accelerator=h100", "os=ubuntu", "intent=training"], catalog=catalog_dir, cache_dir=str(tmp_path),
                       result="components", node_scheduling=scheduling)[0]
    operator = [c for c in comps if c["name"] == "gpu-operator"][0]["values"]
    assert operator["daemonsets"]["nodeSelector"] == {"nodeGroup": "gpu"}
    assert operator["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]


def test_node_scheduling_is_checked_as_the_module_checks_it(lookup, catalog_dir, tmp_path):
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run(["service=eks"], catalog=catalog_dir, cache_dir=str(tmp_path),
                   node_scheduling={"accelerated": {"tolerations": [{"key": "gpu", "effect": "Sometimes"}]}})
    assert str(err.value).startswith("node_scheduling.accelerated.tolerations[0].effect: 'Sometimes' is not allowed")
