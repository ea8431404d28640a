"""A chart's own CRDs created and upgraded by the engine (``chart_crds: managed``, issue 39 item 3): compared with the live
CRD by crd_publish's breaking-change rules, applied by its path before helm (told ``--skip-crds``), a breaking or foreign
one refused before anything of the rollout changes."""

import copy
import io
import json
import tarfile

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.chartcrds import chart_crds, crd_owner
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options
from release_helpers import comp, engine, make_charts

CRD_API = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
NAME = "gadgets.example.aicr.io"


def gadget_crd(fields=("size", "color")):
    props = dict((f, {"type": "string"}) for f in fields)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": NAME},
            "spec": {"group": "example.aicr.io", "scope": "Namespaced", "names": {"kind": "Gadget", "plural": "gadgets"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}}]}}


def fake(fakes, fields=("size", "color")):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    helm.chart_files = {"x": {"crds/gadgets.yaml": yaml.safe_dump(gadget_crd(fields))}}
    return cluster, helm


def live_fields(cluster):
    crd = cluster.get(*CRD_API, name=NAME)
    return sorted(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])


def run(cluster, helm, version="1.0.0", **opts):
    opts.setdefault("chart_crds", "managed")
    return engine(cluster, helm, [comp("x", version=version)], **opts).run()


def test_new_and_compatible_crds_are_applied_before_helm_which_skips_them(fakes):
    cluster, helm = fake(fakes)
    first = run(cluster, helm)
    assert "failed_message" not in first, first.get("failed_message")
    crd = cluster.get(*CRD_API, name=NAME)
    assert crd["metadata"]["labels"] == {"aicr.io/stack": "test", "aicr.io/component": "x", "app.kubernetes.io/managed-by": "aicr-runtime"}
    assert [m["manager"] for m in crd["metadata"]["managedFields"]] == ["aicr-runtime"]
    assert helm.flags["x"] == ["--skip-crds"] and helm.upgrades()[0][3].endswith(".tgz"), "helm installs the pulled chart, skipping its CRDs"
    assert first["chart_crds"] == [{"component": "x", "name": NAME, "action": "create", "breaking": False, "summary": "0 breaking change(s), 0 warning(s)"}]
    assert "create CRD %s of the chart of x by server-side apply" % NAME in first["actions"]
    # applied before the release: the CRD's apply comes before the release Secret
    kinds = [a[1] for a in cluster.mutations()]
    assert kinds.index("CustomResourceDefinition") < kinds.index("Secret")

    helm.chart_files["x"]["crds/gadgets.yaml"] = yaml.safe_dump(gadget_crd(("size", "color", "shape")))
    second = run(cluster, helm, version="1.1.0", diff=True)
    assert "failed_message" not in second, second.get("failed_message")
    assert live_fields(cluster) == ["color", "shape", "size"]
    assert second["chart_crds"][0]["action"] == "update"
    crd_diff = second["diff"][0]
    assert crd_diff["before_header"] == "CRD %s (live)" % NAME and "shape" in crd_diff["after"] and "shape" not in crd_diff["before"]


def test_a_removed_field_is_refused_before_anything_changes_naming_the_crd_and_the_field(fakes):
    cluster, helm = fake(fakes)
    run(cluster, helm)
    mark, upgrades = len(cluster.mutations()), len(helm.upgrades())
    helm.chart_files["x"]["crds/gadgets.yaml"] = yaml.safe_dump(gadget_crd(("size",)))
    for check in (True, False):
        result = run(cluster, helm, version="1.1.0", check_mode=check)
        [x] = result["components"]
        assert x["phase"] == "Failed"
        assert x["message"] == ("component x: allow_breaking_crd_changes: 2 breaking change(s) to the live CRD %s: "
                                "existingFieldRemoval ^.spec.color, type ^.spec.color; "
                                "allowed: compatible changes only, or %s or x listed in allow_breaking_crd_changes" % (NAME, NAME))
        assert result["errors"] == [{"field": "allow_breaking_crd_changes", "component": "x", "message": x["message"]}]
        assert result["failed_message"].startswith("gated_release: 1 of 1 components refused before anything was installed (nothing was changed)")
        assert result["changed"] is False
    assert len(cluster.mutations()) == mark and len(helm.upgrades()) == upgrades
    assert live_fields(cluster) == ["color", "size"]


@pytest.mark.parametrize("allow", [NAME, "x"])
def test_allow_breaking_crd_changes_names_the_crd_or_the_component(fakes, allow):
    cluster, helm = fake(fakes)
    run(cluster, helm)
    helm.chart_files["x"]["crds/gadgets.yaml"] = yaml.safe_dump(gadget_crd(("size",)))
    result = run(cluster, helm, version="1.1.0", allow_breaking_crd_changes=[allow])
    assert "failed_message" not in result, result.get("failed_message")
    assert live_fields(cluster) == ["size"]
    assert "update CRD %s of the chart of x by server-side apply (breaking change allowed)" % NAME in result["actions"]


def test_check_mode_reports_what_it_would_apply_and_writes_nothing(fakes):
    cluster, helm = fake(fakes)
    run(cluster, helm)
    helm.chart_files["x"]["crds/gadgets.yaml"] = yaml.safe_dump(gadget_crd(("size", "color", "shape")))
    mark = len(cluster.mutations())
    result = run(cluster, helm, version="1.1.0", check_mode=True, diff=True)
    assert result["chart_crds"][0]["action"] == "update" and result["actions"][0] == "would update CRD %s of the chart of x" % NAME
    assert "shape" in result["diff"][0]["after"]
    assert len(cluster.mutations()) == mark and live_fields(cluster) == ["color", "size"]


def test_a_crd_of_another_stack_or_manager_is_refused_unless_adopt(fakes):
    cluster, helm = fake(fakes)
    theirs = gadget_crd()
    theirs["metadata"]["labels"] = {"aicr.io/stack": "other"}
    cluster.apply(theirs, field_manager="aicr-runtime")
    result = run(cluster, helm)
    assert result["components"][0]["message"] == ("component x: chart CRD %s (gadgets.yaml) belongs to stack other, not stack test: it is not changed "
                                                  "(set adopt: true to take it over)" % NAME)
    assert helm.upgrades() == []
    adopted = run(cluster, helm, adopt=True)
    assert "failed_message" not in adopted and cluster.get(*CRD_API, name=NAME)["metadata"]["labels"]["aicr.io/stack"] == "test"


def test_crd_owner_rules():
    live = copy.deepcopy(gadget_crd())
    live["metadata"]["managedFields"] = [{"manager": "helm", "operation": "Update"},
                                         {"manager": "kube-apiserver", "operation": "Update", "subresource": "status"}]
    assert crd_owner(None, "s", False) is None
    assert crd_owner(live, "s", True) is None, "helm installed it with this stack's release: taken over"
    assert crd_owner(live, "s", False) == "no stack (field managers helm; not installed by a release of stack s)"
    live["metadata"]["managedFields"].append({"manager": "kubectl-edit", "operation": "Update"})
    assert crd_owner(live, "s", True) == "field managers kubectl-edit"


def test_helm_default_leaves_crds_to_helm(fakes):
    cluster, helm = fake(fakes)
    result = engine(cluster, helm, [comp("x")]).run()
    assert "chart_crds" not in result and helm.flags["x"] == [] and [c[0] for c in helm.calls] == ["upgrade"]
    assert cluster.get(*CRD_API, name=NAME) is None


def test_a_crds_document_of_another_kind_is_refused(fakes):
    cluster, helm = fake(fakes)
    helm.chart_files["x"]["crds/extra.yaml"] = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    result = run(cluster, helm)
    assert result["errors"][0]["field"] == "chart_crds"
    assert "crds/extra.yaml of the chart holds a ConfigMap; allowed with chart_crds: managed: CustomResourceDefinitions only" in result["errors"][0]["message"]
    assert helm.upgrades() == []


def _tgz(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_chart_crds_reads_subcharts_in_archives_and_directories(tmp_path):
    sub = _tgz({"sub/Chart.yaml": "name: sub\n", "sub/crds/a.yaml": yaml.safe_dump(gadget_crd()), "sub/crds/README.md": "not a manifest"})
    top = tmp_path / "top.tgz"
    other = gadget_crd()
    other["metadata"]["name"], other["spec"]["names"] = "things.example.aicr.io", {"kind": "Thing", "plural": "things"}
    buf = io.BytesIO(_tgz({"top/Chart.yaml": "name: top\n", "top/crds/t.json": yaml.safe_dump(other)}))
    with tarfile.open(fileobj=buf, mode="r:gz") as src, tarfile.open(str(top), "w:gz") as tar:
        for member in src:
            tar.addfile(member, src.extractfile(member))
        info = tarfile.TarInfo("top/charts/sub-1.0.0.tgz")
        info.size = len(sub)
        tar.addfile(info, io.BytesIO(sub))
    assert sorted(crd["metadata"]["name"] for _f, crd in chart_crds(str(top))) == [NAME, "things.example.aicr.io"]
    chart = tmp_path / "dir"
    (chart / "charts" / "unpacked" / "crds").mkdir(parents=True)
    (chart / "charts" / "unpacked" / "crds" / "g.yaml").write_text(yaml.safe_dump(gadget_crd()))
    (chart / "charts" / "sub-1.0.0.tgz").write_bytes(_tgz({"sub/crds/o.yaml": yaml.safe_dump(other)}))
    assert sorted(crd["metadata"]["name"] for _f, crd in chart_crds(str(chart))) == [NAME, "things.example.aicr.io"]


@pytest.mark.parametrize("kwargs, message", [
    ({"chart_crds": "yes"}, "chart_crds"),
    ({"allow_breaking_crd_changes": "widgets.example.aicr.io"}, "allow_breaking_crd_changes: 'widgets.example.aicr.io' is not allowed"),
    ({"allow_breaking_crd_changes": [""]}, "allow_breaking_crd_changes"),
])
def test_options_are_checked(kwargs, message):
    with pytest.raises(AicrError) as err:
        Options(**kwargs)
    assert err.value.msg.startswith(message), err.value.msg


def test_a_refusal_of_one_component_applies_no_crd_of_another_not_even_in_check_mode(fakes):
    cluster, helm = fake(fakes)
    helm.chart_files["y"] = {"crds/gadgets.yaml": yaml.safe_dump(gadget_crd())}
    helm.chart_files["x"]["crds/gadgets.yaml"] = yaml.safe_dump({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}})
    for check in (True, False):
        result = engine(cluster, helm, [comp("y"), comp("x", ["y"])], chart_crds="managed", check_mode=check).run()
        assert result["changed"] is False and result["chart_crds"] == [] and result["actions"] == []
        assert [e["component"] for e in result["errors"]] == ["x"]
    assert cluster.get(*CRD_API, name=NAME) is None and helm.upgrades() == []


def crd_named(plural):
    crd = gadget_crd()
    crd["metadata"]["name"] = "%s.example.aicr.io" % plural
    crd["spec"]["names"] = {"kind": plural.capitalize()[:-1], "plural": plural}
    return yaml.safe_dump(crd)


def subchart_tree():
    """A chart whose subcharts helm enables or not by their condition and tags (``charts/<sub>/``, one archived)."""
    deps = [{"name": "on", "condition": "on.enabled"}, {"name": "off", "condition": "off.enabled"},
            {"name": "tagged", "tags": ["extras"]}, {"name": "both", "tags": ["extras"], "condition": "both.enabled"},
            {"name": "sub", "alias": "renamed", "condition": "renamed.enabled,never.there"}, {"name": "own", "condition": "own.enabled"}]
    for dep in deps:
        dep["version"] = "1.0.0"  # helm matches a dependency to its subchart by name and version
    files = {"Chart.yaml": yaml.safe_dump({"apiVersion": "v2", "name": "x", "version": "1.0.0", "dependencies": deps}),
             "values.yaml": yaml.safe_dump({"on": {"enabled": True}, "off": {"enabled": False}, "tags": {"extras": False},
                                            "both": {"enabled": True}, "renamed": {"enabled": False}}),
             "charts/unlisted/crds/c.yaml": crd_named("unlisteds"),
             "charts/on/crds/c.yaml": crd_named("ons"),
             "charts/on/charts/inner/crds/c.yaml": crd_named("inners"),
             "charts/off/crds/c.yaml": crd_named("offs"),
             "charts/tagged/crds/c.yaml": crd_named("taggeds"),
             "charts/both/crds/c.yaml": crd_named("boths"),
             "charts/sub/crds/c.yaml": crd_named("subs")}
    for sub in ("unlisted", "off", "tagged", "both", "sub", "on/charts/inner"):
        files["charts/%s/Chart.yaml" % sub] = yaml.safe_dump({"apiVersion": "v2", "name": sub.rsplit("/", maxsplit=1)[-1], "version": "1.0.0"})
    files["charts/on/Chart.yaml"] = yaml.safe_dump({"apiVersion": "v2", "name": "on", "version": "1.0.0",
                                                    "dependencies": [{"name": "inner", "version": "1.0.0", "condition": "inner.enabled"}]})
    own = _tgz({"own/Chart.yaml": "apiVersion: v2\nname: own\nversion: 1.0.0\n", "own/values.yaml": "enabled: false\n", "own/crds/c.yaml": crd_named("owns")})
    return files, own


def tree_on_disk(tmp_path):
    files, own = subchart_tree()
    for name, text in files.items():
        (tmp_path / "x" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "x" / name).write_text(text)
    (tmp_path / "x" / "charts" / "own-1.0.0.tgz").write_bytes(own)
    return str(tmp_path / "x")


def installed(path, values):
    return sorted(crd["metadata"]["name"].split(".")[0] for _f, crd in chart_crds(path, values))


@pytest.mark.parametrize("values, expected", [
    ({}, ["boths", "inners", "ons", "unlisteds"]),
    ({"off": {"enabled": True}, "renamed": {"enabled": True}, "own": {"enabled": True}},
     ["boths", "inners", "offs", "ons", "owns", "subs", "unlisteds"]),
    ({"tags": {"extras": True}, "both": {"enabled": False}, "on": {"inner": {"enabled": False}}}, ["ons", "taggeds", "unlisteds"]),
    ({"on": {"enabled": False}}, ["boths", "unlisteds"]),
    (None, ["boths", "inners", "offs", "ons", "owns", "subs", "taggeds", "unlisteds"]),
], ids=["defaults", "conditions-on", "tags-and-nested", "parent-off", "no-values-all"])
def test_chart_crds_skips_subcharts_helm_does_not_install(tmp_path, values, expected):
    """helm's rules: a condition (the first of its paths holding a boolean, in the user's values over the chart's and the
    subchart's defaults, an alias by its alias) decides; otherwise tags (one true enables, all false disable); a subchart
    Chart.yaml does not list is always installed; a disabled subchart's own subcharts are not either."""
    assert installed(tree_on_disk(tmp_path), values) == expected


def test_a_disabled_subcharts_crds_are_not_applied(fakes):
    cluster, helm = fake(fakes)
    files, own = subchart_tree()
    del own
    helm.chart_files["x"] = files
    result = engine(cluster, helm, [comp("x", values={"off": {"enabled": False}, "on": {"inner": {"enabled": False}}})], chart_crds="managed").run()
    assert "failed_message" not in result, result.get("failed_message")
    assert sorted(e["name"].split(".")[0] for e in result["chart_crds"]) == ["boths", "ons", "unlisteds"]
    crds = sorted(o["metadata"]["name"].split(".")[0] for o in cluster.list(*CRD_API))
    assert "offs" not in crds and "inners" not in crds and "taggeds" not in crds and "ons" in crds, crds


def inventory_entry(cluster, name="x"):
    cm = cluster.get("v1", "ConfigMap", "aicr-runtime-test-inventory", "aicr-system")
    return json.loads(cm["data"]["inventory"])["components"].get(name)


def test_the_inventory_records_the_chart_crds_applied_and_absent_or_prune_never_delete_them(fakes):
    cluster, helm = fake(fakes)
    first = run(cluster, helm)
    assert inventory_entry(cluster)["chart_crds"] == [NAME] and first["components"][0]["chart_crds"] == [NAME]
    assert all(o["kind"] != "CustomResourceDefinition" for o in inventory_entry(cluster)["objects"]), "never an object to remove"
    writes = len(cluster.mutations())
    again = run(cluster, helm)  # nothing to do: nothing written, the record still shown
    assert len(cluster.mutations()) == writes and again["components"][0]["chart_crds"] == [NAME]
    pruned = engine(cluster, helm, [comp("y")], chart_crds="managed", prune=True).run()
    assert "failed_message" not in pruned, pruned.get("failed_message")
    assert cluster.get(*CRD_API, name=NAME) is not None, "prune left the CRD"
    run(cluster, helm)
    gone = engine(cluster, helm, [comp("x")], chart_crds="managed", state="absent").run()
    assert "failed_message" not in gone, gone.get("failed_message")
    assert cluster.get(*CRD_API, name=NAME) is not None, "state: absent left the CRD"
