"""gated_release's one validation pass (issue 36): every parameter and the recipe's shape checked before the cluster is
reached, every problem listed in ``errors``, each in one line naming the field, the value (never a values' content) and
what is allowed."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan


def comp(name, deps=(), **extra):
    return dict({"name": name, "type": "Helm", "chart": name, "repository": "https://charts.example/repo", "version": "1.0.0",
                 "namespace": "apps", "values": {}, "dependencies": list(deps)}, **extra)


def refusal(call, *args, **kwargs):
    with pytest.raises(AicrError) as err:
        call(*args, **kwargs)
    assert "\n" not in err.value.msg
    return err.value


@pytest.fixture
def unreachable(tmp_path):
    """A kubeconfig whose API server never answers (nothing listens on 127.0.0.1:1)."""
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t0ken-never-used"}}]}))
    return str(path)


def test_a_dependency_on_no_component_of_the_recipe_is_refused_not_taken_as_satisfied():
    """It was dropped from the gate: ``dependencies: [ghost]`` (a typo of ``agent``...) deployed at once."""
    error = refusal(build_plan, [comp("crds"), comp("operator", ["crds", "crsd"])])
    assert error.msg == ("recipe: component operator: dependency 'crsd' is not a component of the recipe; did you mean crds? allowed: one of "
                         "crds, operator (what the recipe does not deploy goes in external_dependencies)")
    assert error.details["errors"][0]["value"] == "crsd" and error.details["errors"][0]["allowed"] == ["crds", "operator"]


def test_skipped_disabled_and_external_dependencies_still_count_as_satisfied():
    plan = build_plan([comp("a"), comp("b", enabled=False), comp("c", ["a", "b", "d"], external_dependencies=["cert-manager"]), comp("d")],
                      skip_components=["d"], component_overrides={"a": {"enabled": True}})
    assert plan.order == ["a", "c"] and plan.deps == {"a": [], "c": ["a"]}


@pytest.mark.parametrize("values", ["replicaCount: 3\npassword: hunter2hunter2", ["password", "hunter2hunter2"], 7])
def test_values_that_are_not_a_mapping_are_refused_naming_the_type_never_the_content(values):
    """It was ``AttributeError: 'str' object has no attribute 'get'`` once the values were merged."""
    error = refusal(build_plan, [comp("a", values=values)])
    assert error.msg == "recipe: component a: values a %s is not allowed; allowed: a mapping of Helm values" % type(values).__name__
    assert "hunter2" not in json.dumps(error.details, default=str)


def test_override_values_that_are_not_a_mapping_never_show_their_content():
    error = refusal(build_plan, [comp("a")], component_overrides={"a": {"values": "password: hunter2hunter2"}})
    assert error.msg.startswith("component_overrides: a: values (a str) is not allowed; allowed: a mapping of ")
    assert "hunter2" not in json.dumps(error.details, default=str)


@pytest.mark.parametrize("recipe, wanted", [
    ("components", "recipe: expected a dict or a list, got str"),
    ({"recipe_name": "x"}, "recipe: expected the output of recipe_resolve (a dict with 'components') or its components list; got a dict with recipe_name"),
    ({"components": "a,b"}, "recipe.components: a str is not allowed; allowed: a list of components"),
    (["a"], "recipe: components[0]: a str is not allowed; allowed: a mapping with name"),
    ([{"chart": "a"}], "recipe: every component needs a name; components[0] has none"),
    ([{"name": ["a"]}], "recipe: every component needs a name; components[0] has a list"),
    ([comp("a"), comp("a")], "recipe: component a is listed more than once; allowed: each component once"),
    ([comp("a", dependencies="b")], "recipe: component a: dependencies 'b' (a str) is not allowed; allowed: a list of non-empty strings"),
    ([comp("a", chart={"name": "a"})], "recipe: component a: chart {'name': 'a'} (a dict) is not allowed; allowed: a string"),
    ([comp("a", manifest_only="yes")], "recipe: component a: manifest_only 'yes' (a str) is not allowed; allowed: a boolean"),
])
def test_a_recipe_of_the_wrong_shape_is_refused_naming_the_field(recipe, wanted):
    assert refusal(build_plan, recipe).msg.startswith(wanted)


def test_every_problem_of_the_recipe_and_its_overrides_is_listed_at_once():
    recipe = [comp("a", values="x"), comp("b", ["ghost"]), comp("B"), "c"]
    error = refusal(build_plan, recipe, skip_components=["nope"], component_overrides={"zz": {}, "a": {"colour": 1, "enabled": "no"}})
    messages = [e["message"] for e in error.details["errors"]]
    assert len(messages) == 8, messages
    assert error.msg.endswith("(and 7 more problems, listed in errors)")
    assert any(m.startswith("recipe: component a: values") for m in messages)
    assert any("dependency 'ghost'" in m for m in messages)
    assert any("component name 'B' is not allowed" in m for m in messages)
    assert any(m.startswith("recipe: components[3]") for m in messages)
    assert "component_overrides: unknown components ['zz']; the recipe has ['a', 'b', 'B']" in messages
    assert "skip_components: unknown components ['nope']; the recipe has ['a', 'b', 'B']" in messages
    assert any(m.startswith("component_overrides: a has unknown keys ['colour']") for m in messages)
    assert any(m.startswith("component_overrides: a: enabled 'no' is not allowed") for m in messages)


def test_a_dependency_cycle_and_a_self_dependency_are_refused():
    assert "dependency cycle" in refusal(build_plan, [comp("a", ["a"])]).msg
    assert "dependency cycle" in refusal(build_plan, [comp("a", ["b"]), comp("b", ["a"])]).msg


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "soon", True])
def test_health_check_timeout_is_a_positive_number(value):
    error = refusal(Options, health_check_timeout=value)
    assert error.msg.startswith("health_check_timeout: ") and "is not allowed" in error.msg


@pytest.mark.parametrize("value", ["My NS", "a/b", "-x", "x" * 64])
def test_the_lease_namespace_is_a_dns1123_label(value):
    error = refusal(Options, lease_namespace=value)
    assert error.msg.startswith("lease_namespace: ") and "DNS-1123" in error.msg


def test_every_problem_is_reported_before_an_unreachable_api_server_is_contacted(unreachable):
    """With a kubeconfig whose server never answers, every problem of the input is still listed - none is hidden behind
    ``connection refused``, and nothing is contacted to find them."""
    params = {"recipe": {"recipe_name": "demo", "components": [comp("crds"), comp("operator", ["ghost"]), comp("agent", values="replicaCount: lots")]},
              "kubeconfig": unreachable, "concurrency": 0, "timeout": -1, "poll_interval": 0, "lease_duration": 5, "lease_namespace": "My NS",
              "health_check_timeout": float("nan"), "preflight": "sometimes", "stack": "Demo", "values_schemas": {}, "render_cache": False}
    error = refusal(execute, params)
    fields = [e["field"] for e in error.details["errors"]]
    assert fields == ["stack", "recipe", "recipe", "concurrency", "timeout", "poll_interval", "lease_duration", "lease_namespace",
                      "health_check_timeout", "preflight"], error.details["errors"]
    assert "refused" not in json.dumps(error.details["errors"]) and "127.0.0.1" not in json.dumps(error.details["errors"])


def test_a_dependency_on_no_component_is_refused_before_the_cluster_is_reached(unreachable):
    """It was taken as satisfied, and the run then failed on ``connection refused`` (or, on a reachable cluster, deployed)."""
    params = {"recipe": [comp("crds"), comp("operator", ["ghost"])], "kubeconfig": unreachable, "render_cache": False}
    error = refusal(execute, params)
    assert error.msg.startswith("recipe: component operator: dependency 'ghost' is not a component of the recipe")


def test_with_a_good_input_the_unreachable_server_is_what_fails(unreachable):
    """The control of the two tests above: the same kubeconfig, nothing wrong with the input - the server is reached for."""
    params = {"recipe": [comp("crds"), comp("operator", ["crds"])], "kubeconfig": unreachable, "render_cache": False, "timeout": 1,
              "overall_timeout": 2}
    try:
        result = execute(params, check_mode=True)
    except AicrError as exc:
        text = exc.msg
    else:
        text = result.get("failed_message") or ""
    assert "127.0.0.1:1" in text or "refused" in text, text
