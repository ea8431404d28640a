"""A resolution's inputs in one validation pass (issue 36): every problem listed, before the catalog is read."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

from recipe_helpers import make_catalog, overlay


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    catalog_mod.clear_process_cache()
    yield


def refusal(catalog, **kwargs):
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(catalog, persist_cache=False, **kwargs)
    return err.value


def test_inputs_are_checked_before_the_catalog_is_read(tmp_path):
    """A missing catalog is not what the user hears about first: the inputs' problems are, all of them."""
    error = refusal(str(tmp_path / "no-such-catalog"), criteria={"servce": "eks", "nodes": -2, "os": 7}, profile="gpuStack",
                    skip_components=["", "ok"], component_overrides={"a": {"vesion": "1"}, "b": "x", "c": {"namespace": "Bad NS"}},
                    snapshot=5)
    fields = [e["field"] for e in error.details["errors"]]
    assert fields == ["criteria.servce", "criteria.os", "criteria.nodes", "profile", "skip_components[0]", "component_overrides.a.vesion",
                      "component_overrides.b", "component_overrides.c.namespace", "snapshot"]
    assert error.msg.startswith("criteria: servce is not known; did you mean service?")
    assert error.msg.endswith("(and 8 more problems, listed in errors)")
    assert "criteria.nodes: -2 is not allowed; use 0 to 100000" in [e["message"] for e in error.details["errors"]]
    assert not (tmp_path / "no-such-catalog").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"criteria": {"nodes": True}}, "criteria.nodes: True is not allowed; use an integer (0 to 100000)"),
    ({"criteria": {"service": "eks", "nodes": 0}}, None),  # 0 means unstated: a value, not a problem
    ({"criteria": "eks"}, "criteria: a str is not allowed; use a mapping"),
    ({"skip_components": "alpha"}, "skip_components: a str is not allowed; use a list of component names"),
    ({"component_overrides": {"alpha": {"namespace": "Other"}}},
     "component_overrides.alpha.namespace: 'Other' is not a DNS-1123 label; allowed: a DNS-1123 label"),
    ({"profile": "a=b=c"}, "profile: 'a=b=c' must use the exact name=value form (e.g. gpuStack=operator-managed)"),
])
def test_one_input_problem(tmp_path, kwargs, message):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    if message is None:
        resolve_mod.resolve(root, persist_cache=False, **kwargs)
        return
    assert refusal(root, **kwargs).msg.startswith(message)


def test_components_the_recipe_lacks_are_listed_together(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    error = refusal(root, criteria={"service": "eks"}, skip_components=["ghost"], component_overrides={"phantom": {}, "alpha": {"enabled": False}})
    assert [e["field"] for e in error.details["errors"]] == ["skip_components", "component_overrides"]
    assert error.msg == ("skip_components: component 'ghost' is not in the resolved recipe (components: alpha, beta) "
                         "(and 1 more problem, listed in errors)")


def test_every_bad_criteria_value_is_listed(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    error = refusal(root, criteria={"service": "ekss", "accelerator": "h1000"})
    assert [e["field"] for e in error.details["errors"]] == ["criteria.service", "criteria.accelerator"]
    assert error.msg.startswith("criteria.service: invalid service type 'ekss' (valid: ")
