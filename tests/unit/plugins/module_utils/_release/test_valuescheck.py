"""Values checked against every chart before the run's first change (issue 36): a rollout starts with every chart's
values valid, or does not start."""

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from release_helpers import comp, engine, make_charts

SCHEMA = {"type": "object", "properties": {"replicas": {"type": "integer"}}}


def fake(fakes, schemas=None):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    helm.schemas = schemas or {}
    return cluster, helm


def test_a_chart_that_cannot_be_pulled_refuses_the_rollout_before_anything_is_installed(fakes):
    cluster, helm = fake(fakes, {"x": SCHEMA})
    pull = helm.pull

    def failing(chart_ref, repo, version, dest, extra_flags=None, timeout=300):
        if chart_ref == "y":
            raise AicrError("helm pull y failed: chart \"y\" version \"1.0.0\" not found in https://charts.example/repo repository")
        return pull(chart_ref, repo, version, dest, extra_flags=extra_flags, timeout=timeout)

    helm.pull = failing
    mark = len(cluster.audit)
    result = engine(cluster, helm, [comp("x"), comp("y", ["x"])], validate_values=True).run()
    phases = dict((c["name"], (c["phase"], c["message"])) for c in result["components"])
    assert phases["y"] == ("Failed", "component y: helm pull y failed: chart \"y\" version \"1.0.0\" not found in https://charts.example/repo repository")
    assert phases["x"] == ("Pending", "not started: the values of y were refused before anything was installed")
    assert result["errors"] == [{"field": "chart", "component": "y", "message": phases["y"][1]}]
    assert helm.upgrades() == [] and cluster.audit[mark:] == []


def test_a_schema_that_cannot_be_applied_refuses_naming_the_component(fakes):
    cluster, helm = fake(fakes, {"x": {"type": "object", "properties": {"replicas": {"$ref": "#/definitions/missing"}}}})
    result = engine(cluster, helm, [comp("x", values={"replicas": 1})], validate_values=True).run()
    [x] = result["components"]
    assert x["phase"] == "Failed" and x["message"].startswith("values: component x: the chart's values.schema.json cannot be applied (schema: ")
    assert helm.upgrades() == []


def test_every_refused_component_is_listed_in_deployment_order(fakes):
    cluster, helm = fake(fakes, {"x": SCHEMA, "y": SCHEMA, "z": SCHEMA})
    recipe = [comp("z", values={"replicas": "a"}), comp("y", ["z"], values={"replicas": 1}), comp("x", ["y"], values={"replicas": "b"})]
    result = engine(cluster, helm, recipe, validate_values=True, check_mode=True).run()
    assert [e["component"] for e in result["errors"]] == ["z", "x"]
    assert result["failed_message"].startswith("gated_release: 2 of 3 components refused before anything was installed (nothing was changed): z (")
    assert "; x (values: component x: " in result["failed_message"]


def test_charts_without_a_schema_and_unchanged_releases_pass(fakes):
    cluster, helm = fake(fakes)
    first = engine(cluster, helm, [comp("x", values={"replicas": "any"})], validate_values=True).run()
    assert "failed_message" not in first and first["components"][0]["phase"] == "Ready"
    helm.schemas = {"x": SCHEMA}  # the chart's schema is read only for a release that will be installed or upgraded
    again = engine(cluster, helm, [comp("x", values={"replicas": "any"})], validate_values=True).run()
    assert "failed_message" not in again and again["components"][0]["phase"] == "Unchanged"


def test_without_validate_values_nothing_is_pulled_up_front(fakes):
    cluster, helm = fake(fakes, {"x": SCHEMA})
    result = engine(cluster, helm, [comp("x", values={"replicas": 1})], validate_values=False).run()
    assert "failed_message" not in result and [c[0] for c in helm.calls] == ["upgrade"]
