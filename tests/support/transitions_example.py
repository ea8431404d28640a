"""The example recipe the ``on_transition`` tests of both suites run on the fake cluster and helm (``doubles``)."""

import pytest
import yaml


def comp(name, deps=(), chart=None, post=()):
    return {"name": name, "type": "Helm", "chart": name if chart is None else chart, "repository": "https://charts.example/repo",
            "version": "1.0.0", "namespace": "apps", "values": {}, "dependencies": list(deps), "manifest_paths": list(post),
            "manifest_only": chart == ""}


def charts(fakes, delays):
    def chart_for(name):
        return lambda values, release, namespace: [fakes.deployment(release, delay=delays.get(name, 0.0))]
    return dict((n, chart_for(n)) for n in ("crds", "operator", "agent", "monitoring", "x", "y"))


@pytest.fixture
def example(tmp_path, fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes, {"crds": 0.05, "operator": 0.05}))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}))
    recipe = {"recipe_name": "example", "components": [
        comp("crds"), comp("operator", ["crds"]), comp("agent", ["operator"]), comp("monitoring"), comp("config", ["crds"], chart="", post=[str(cfg)]),
    ]}
    return cluster, helm, recipe
