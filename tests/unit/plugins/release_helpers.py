"""Helpers of the gated_release engine tests: components, the fake charts, an engine (or a run context) over the fakes."""

import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._release.context import RunContext
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.aicr.io"},
       "spec": {"group": "example.aicr.io", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}, "versions": [{"name": "v1"}]}}


def write(tmp_path, name, docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def comp(name, deps=(), chart=None, values=None, pre=(), post=(), namespace="apps", version="1.0.0"):
    return {"name": name, "type": "Helm", "chart": name if chart is None else chart, "repository": "https://charts.example/repo",
            "version": version, "namespace": namespace, "values": values or {}, "dependencies": list(deps),
            "pre_manifest_paths": list(pre), "manifest_paths": list(post), "manifest_only": chart == ""}


def make_charts(fakes, delays=None):
    delays = delays if delays is not None else {}

    def chart_for(name):
        def render(values, release, namespace):
            docs = [fakes.deployment(release, delay=delays.get(name, 0.0), fail=values.get("fail"))]
            if name == "crds":
                docs.append(dict(CRD))
            return docs
        return render

    return dict((n, chart_for(n)) for n in ("crds", "operator", "agent", "monitoring", "jobs", "x", "y", "z"))


def engine(cluster, helm, recipe, **opts):
    opts.setdefault("poll_interval", 0.01)
    opts.setdefault("timeout", 10)
    opts.setdefault("stack", "test")
    plan = build_plan(recipe, skip_components=opts.pop("skip_components", None), component_overrides=opts.pop("component_overrides", None),
                      skip_deployment_order=opts.pop("skip_deployment_order", False))
    return GatedRelease(cluster, helm, plan, Options(**opts))


def context(cluster, helm, recipe, workdir=None, inventory=None, **opts):
    """A run context (``_release.context.RunContext``) over the fakes, for a collaborator built alone (not through
    GatedRelease); ``workdir``: the run's scratch directory (a test's tmp_path)."""
    opts.setdefault("poll_interval", 0.01)
    opts.setdefault("timeout", 10)
    opts.setdefault("stack", "test")
    ctx = RunContext(cluster, helm, build_plan(recipe), Options(**opts), inventory=inventory)
    ctx.workdir = str(workdir) if workdir is not None else None
    return ctx
