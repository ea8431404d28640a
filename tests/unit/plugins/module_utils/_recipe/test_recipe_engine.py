"""Engine rules: criteria, matching, merges, mixins, profiles, values, order, and the resolve output."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import match
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import merge
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import order
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

from recipe_helpers import make_catalog, mixin, overlay


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    catalog_mod.clear_process_cache()
    yield


# -- criteria ----------------------------------------------------------------------------

@pytest.mark.parametrize("raw,expected", [
    (" EKS ", "eks"), ("self-managed", "any"), ("self", "any"), ("vanilla", "any"), ("", "any"), (None, "any"),
    ("ANY", "any"), ("openshift", "ocp"),
])
def test_service_normalisation(raw, expected):
    registered = {"service": {"ocp"}}
    assert crit.parse_dimension("service", raw, registered) == expected


@pytest.mark.parametrize("raw", ["al2", "AL2023", "amazonlinux"])
def test_os_aliases(raw):
    assert crit.parse_dimension("os", raw) == "amazonlinux"


def test_bad_value_names_valid_ones():
    with pytest.raises(AicrError) as err:
        crit.parse_dimension("accelerator", "h999", {"accelerator": {"l40s"}})
    assert err.value.msg == ("criteria.accelerator: invalid accelerator type 'h999' "
                             "(valid: a100, b200, gb200, gb300, h100, h200, l40, l40s, rtx-pro-6000)")
    assert err.value.details["field"] == "criteria.accelerator"


def test_catalog_values_are_accepted():
    assert crit.parse_dimension("os", "OL", {"os": {"ol"}}) == "ol"
    assert crit.parse_dimension("os", "ol", {}) == "ol"  # one of AICR v0.19.0's own OS values
    assert crit.parse_dimension("os", "Haiku", {"os": {"haiku"}}) == "haiku"
    with pytest.raises(AicrError):
        crit.parse_dimension("os", "haiku", {})


def test_unknown_criteria_key():
    with pytest.raises(AicrError) as err:
        crit.parse_criteria({"gpu": "h100"})
    assert err.value.msg == "criteria: gpu is not known; allowed: accelerator, intent, nodes, os, platform, service"


def test_a_misspelt_criteria_key_names_the_nearest_and_every_problem_is_listed():
    with pytest.raises(AicrError) as err:
        crit.parse_criteria({"servce": "eks", "accelerator": "h1000", "os": "windows", "nodes": -1})
    assert err.value.msg == ("criteria: servce is not known; did you mean service? allowed: accelerator, intent, nodes, os, platform, service "
                             "(and 3 more problems, listed in errors)")
    assert [e["field"] for e in err.value.details["errors"]] == ["criteria.servce", "criteria.accelerator", "criteria.os", "criteria.nodes"]
    assert err.value.details["errors"][1]["value"] == "h1000" and "h100" in err.value.details["errors"][1]["allowed"]


@pytest.mark.parametrize("raw", [-1, "x", True])
def test_bad_nodes(raw):
    with pytest.raises(AicrError):
        crit.parse_nodes(raw)


def test_match_is_asymmetric():
    assert crit.matches({"service": "eks"}, {"service": "eks", "accelerator": "h100"})
    assert not crit.matches({"service": "eks"}, {"service": "any"})
    assert crit.matches({"service": "any", "intent": ""}, {"service": "any"})
    assert not crit.matches({"service": "gke"}, {"service": "eks"})


def test_specificity_and_string():
    assert crit.specificity({"service": "eks", "accelerator": "any", "os": "", "intent": "training"}) == 2
    q = crit.parse_criteria({"service": "eks", "accelerator": "h100", "nodes": 4})
    assert crit.criteria_string(q) == "criteria(service=eks, accelerator=h100, nodes=4)"
    assert crit.criteria_string(crit.parse_criteria({})) == "criteria(any)"


def test_recipe_name():
    q = crit.parse_criteria({"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu", "platform": "kubeflow"})
    assert crit.recipe_name(q) == "h100-eks-ubuntu-training-kubeflow"
    assert crit.recipe_name(crit.parse_criteria({"service": "eks", "intent": "training"})) == "eks-training"
    assert crit.recipe_name(crit.parse_criteria({})) == "base"


# -- merges --------------------------------------------------------------------------------

def test_merge_ref_rules():
    base = merge.clean_ref({"name": "x", "type": "Helm", "source": "https://a", "version": "1", "overrides": {"a": {"b": 1, "c": 2}},
                            "dependencyRefs": ["p"], "manifestFiles": ["m1"], "cleanup": True, "patches": ["p1"]})
    overlay_ref = merge.clean_ref({"name": "x", "version": "2", "source": "", "overrides": {"a": {"b": None, "d": 4}},
                                   "dependencyRefs": ["p", "q"], "manifestFiles": ["m2", "m1"], "preManifestFiles": ["pre"],
                                   "cleanup": False, "healthCheckSkip": True, "patches": ["p2"]})
    out = merge.merge_ref(base, overlay_ref)
    assert out["version"] == "2" and out["source"] == "https://a"
    assert out["overrides"] == {"a": {"b": None, "c": 2, "d": 4}}
    assert out["dependencyRefs"] == ["p", "q"]
    assert out["manifestFiles"] == ["m1", "m2"]
    assert out["preManifestFiles"] == ["pre"]
    assert out["cleanup"] is True and out["healthCheckSkip"] is True
    assert out["patches"] == ["p2"]
    assert base["overrides"] == {"a": {"b": 1, "c": 2}}, "the base ref must not be mutated"


def test_merge_spec_constraints_and_order():
    spec = merge.initial_spec({"constraints": [{"name": "b", "value": "1"}], "componentRefs": [{"name": "z"}, {"name": "a"}]})
    assert [r["name"] for r in spec["componentRefs"]] == ["z", "a"], "base order is kept until a merge"
    merge.merge_spec(spec, {"constraints": [{"name": "b", "value": "2"}, {"name": "a", "value": "3"}], "componentRefs": [], "mixins": ["m", "m"]})
    assert spec["constraints"] == [{"name": "a", "value": "3"}, {"name": "b", "value": "2"}]
    assert [r["name"] for r in spec["componentRefs"]] == ["a", "z"]
    assert spec["mixins"] == ["m"]


def test_validation_phase_merge():
    base = {"checks": ["a", "b"], "constraints": [{"name": "x", "value": "1"}], "timeout": "5m"}
    assert merge.merge_validation_phase(base, {"checks": ["b", "c"], "constraints": [{"name": "x", "value": "2"}, {"name": "y", "value": "3"}]}) == {
        "timeout": "5m", "checks": ["a", "b", "c"], "constraints": [{"name": "x", "value": "2"}, {"name": "y", "value": "3"}]}
    cleared = merge.merge_validation_phase(base, {"checks": [], "constraints": []})
    assert cleared["checks"] == [] and cleared["constraints"] == []
    assert merge.merge_validation_phase(base, None) is base


# -- small catalog resolutions -----------------------------------------------------------------

def _cat(tmp_path, **kw):
    return make_catalog(tmp_path / "cat", **kw)


def test_registry_defaults_chart_and_oci(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"})])
    out = resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    comps = dict((c["name"], c) for c in out["components"])
    assert comps["alpha"]["chart"] == "alpha-chart" and comps["alpha"]["chart_ref"] == "alpha-chart"
    assert comps["alpha"]["version"] == "1.0.0" and comps["alpha"]["namespace"] == "alpha-ns"
    assert comps["beta"]["chart_ref"] == "oci://registry.example/charts/beta" and comps["beta"]["oci"] is True
    refs = dict((r["name"], r) for r in out["recipe"]["componentRefs"])
    assert refs["alpha"]["healthCheckAsserts"].startswith("apiVersion: chainsaw")
    assert "healthCheckAsserts" not in refs["beta"]
    assert out["recipe"]["deploymentOrder"] == ["alpha", "beta"]
    assert comps["beta"]["dependencies"] == ["alpha"]
    assert out["recipe_name"] == "eks"


def test_values_precedence_and_null_delete(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[
        {"name": "alpha", "valuesFile": "components/alpha/values-big.yaml", "overrides": {"drop": None, "image": {"pullPolicy": "Always"}}}])])
    out = resolve_mod.resolve(root, {"service": "eks"}, component_overrides={"alpha": {"values": {"replicas": 5, "image": {"tag": None}}}},
                              persist_cache=False)
    alpha = out["components"][0]
    assert alpha["values"] == {"replicas": 5, "image": {"pullPolicy": "Always"}}
    assert alpha["values_files"] == ["components/alpha/values.yaml", "components/alpha/values-big.yaml"]


def test_manifest_only_component_and_paths(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[
        {"name": "gamma", "type": "Helm", "manifestFiles": ["components/gamma/manifests/cm.yaml"], "dependencyRefs": ["alpha"]}])])
    out = resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    gamma = [c for c in out["components"] if c["name"] == "gamma"][0]
    assert gamma["manifest_only"] is True and gamma["chart"] == "" and gamma["chart_ref"] == ""
    assert gamma["manifest_files"] == ["components/gamma/manifests/cm.yaml"]
    assert gamma["manifest_paths"] == [str(tmp_path / "cat" / "components" / "gamma" / "manifests" / "cm.yaml")]
    assert gamma["namespace"] == "gamma-ns"


def test_missing_manifest_file_is_an_error(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "alpha", "manifestFiles": ["components/alpha/manifests/nope.yaml"]}])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert "components/alpha/manifests/nope.yaml not found" in err.value.msg


def test_missing_values_file_is_an_error(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "alpha", "valuesFile": "components/alpha/nope.yaml"}])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg.startswith("component alpha valuesFile: values file components/alpha/nope.yaml not found")


def test_unknown_dependency_names_components(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "alpha", "dependencyRefs": ["ghost"]}])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg == ("merged recipe componentRefs: component 'alpha' references unknown dependency 'ghost' "
                             "(known components: alpha, beta)")


def test_dependency_cycle_from_overlay(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "alpha", "dependencyRefs": ["beta"]}])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg == "merged recipe componentRefs: circular dependency detected: alpha -> beta -> alpha"


def test_disabled_component_kept_but_not_ordered(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "alpha", "overrides": {"enabled": False}}])])
    out = resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert [r["name"] for r in out["recipe"]["componentRefs"]] == ["alpha", "beta"]
    assert out["recipe"]["deploymentOrder"] == ["beta"]
    assert out["components"][0]["external_dependencies"] == ["alpha"]
    assert "(external)" in out["graph"]


def test_skip_and_component_overrides(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"})])
    out = resolve_mod.resolve(root, {"service": "eks"}, skip_components=["alpha"],
                              component_overrides={"beta": {"version": "2.1.0", "namespace": "other"}}, persist_cache=False)
    assert out["recipe"]["deploymentOrder"] == ["beta"]
    beta = out["components"][0]
    assert beta["version"] == "2.1.0" and beta["namespace"] == "other"
    out = resolve_mod.resolve(root, {"service": "eks"}, component_overrides={"alpha": {"enabled": False}}, persist_cache=False)
    assert out["recipe"]["deploymentOrder"] == ["beta"]


@pytest.mark.parametrize("kwargs,fragment", [
    ({"skip_components": ["ghost"]}, "skip_components: component 'ghost' is not in the resolved recipe (components: alpha, beta)"),
    ({"component_overrides": {"ghost": {}}}, "component_overrides: component 'ghost' is not in the resolved recipe"),
    ({"component_overrides": {"alpha": {"chart": "x"}}}, "component_overrides.alpha: chart is not known; allowed: enabled, namespace, values, version"),
    ({"component_overrides": {"alpha": {"vesion": "1"}}}, "component_overrides.alpha: vesion is not known; did you mean version?"),
    ({"component_overrides": {"alpha": {"values": [1]}}}, "component_overrides.alpha.values: expected a mapping of Helm values, got list"),
    ({"component_overrides": {"alpha": {"enabled": "no"}}}, "component_overrides.alpha.enabled: expected a boolean, got 'no'"),
])
def test_user_input_errors(tmp_path, kwargs, fragment):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"})])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False, **kwargs)
    assert fragment in err.value.msg


def test_mixins_merge_once_and_conflicts(tmp_path):
    m = mixin("os-x", constraints=[{"name": "OS.release.ID", "value": "x"}], refs=[{"name": "alpha", "namespace": "mixed"}])
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, mixins=["os-x"]),
                                    overlay("svc-x", {"service": "eks", "os": "x"}, base="svc", mixins=["os-x"])],
                mixins=[m])
    out = resolve_mod.resolve(root, {"service": "eks", "os": "x"}, persist_cache=False)
    assert {"name": "OS.release.ID", "value": "x"} in out["recipe"]["constraints"]
    assert out["components"][0]["namespace"] == "mixed"
    assert out["recipe"]["metadata"]["appliedOverlays"] == ["base", "svc", "svc-x"]


def test_mixin_constraint_conflict(tmp_path):
    m = mixin("dup", constraints=[{"name": "K8s.server.version", "value": ">= 2"}])
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, mixins=["dup"])], mixins=[m])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg == "mixin 'dup' (mixins/dup.yaml) constraint 'K8s.server.version' conflicts with inheritance chain or another mixin"


def test_mixin_identity_field_conflict(tmp_path):
    m = mixin("bad", refs=[{"name": "alpha", "version": "9"}])
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, mixins=["bad"])], mixins=[m])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert "sets identity/sourcing field 'version'" in err.value.msg


def test_unknown_mixin(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, mixins=["ghost"])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg == "mixin 'ghost' not found in recipes/mixins/ (known: none)"


def test_ancestors_pruned_and_sorted(tmp_path):
    root = _cat(tmp_path, overlays=[
        overlay("eks", {"service": "eks"}), overlay("eks-training", {"service": "eks", "intent": "training"}, base="eks"),
        overlay("h100-any", {"accelerator": "h100"}), overlay("generic", {"intent": "any"})])
    cat = catalog_mod.load_catalog(root, persist=False)
    q = crit.parse_criteria({"service": "eks", "intent": "training", "accelerator": "h100"}, cat.registered)
    names = [d["metadata"]["name"] for d in match.find_matching(cat, q)]
    assert names == ["generic", "h100-any", "eks-training"]


def test_coverage_error_text(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("eks", {"service": "eks"}), overlay("gke-cos", {"service": "gke", "os": "cos"})])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks", "os": "cos"}, persist_cache=False)
    assert err.value.msg == "no recipe provides os 'cos' for criteria(service=eks, os=cos)"
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"os": "cos"}, persist_cache=False)
    assert err.value.msg == "os 'cos' for criteria(os=cos) requires service (valid: gke)"


def test_empty_criteria_are_refused_as_aicr_does(tmp_path):
    """AICR's CLI refuses a query stating nothing (it would resolve base alone); a node count is enough."""
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(_cat(tmp_path), {}, persist_cache=False)
    assert err.value.msg == ("no criteria provided: specify at least one of --service, --accelerator, --intent, --os, --platform, --nodes, "
                             "--config, or use --snapshot to load from a snapshot file")
    assert err.value.details["field"] == "criteria"
    with pytest.raises(AicrError):
        resolve_mod.resolve(_cat(tmp_path), {"service": "any", "intent": " ANY "}, persist_cache=False)
    out = resolve_mod.resolve(_cat(tmp_path), {"nodes": 2}, persist_cache=False)
    assert out["recipe"]["metadata"]["appliedOverlays"] == ["base"]
    assert out["recipe"]["criteria"] == {"service": "any", "accelerator": "any", "intent": "any", "os": "any", "platform": "any", "nodes": 2}


def test_topological_order_tie_break():
    refs = [{"name": "c"}, {"name": "b", "dependencyRefs": ["c"]}, {"name": "a", "dependencyRefs": ["c"]}, {"name": "d"}]
    assert order.deployment_order(refs) == ["c", "a", "b", "d"]


def test_install_false_disables():
    assert not order.is_enabled({"name": "x", "overrides": {"install": False}})
    assert order.is_enabled({"name": "x", "overrides": {"enabled": "false"}}), "non-bool gates are ignored, like AICR"


# -- real catalog specifics ---------------------------------------------------------------

def test_os_guard_message(aicr_catalog_dir):
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), {"service": "oke", "accelerator": "l40s", "intent": "training"}, persist_cache=False)
    assert err.value.msg == "service 'oke' has no OS-agnostic recipe for accelerator 'l40s'; specify an OS (valid: ol)"
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), {"service": "gke"}, persist_cache=False)
    assert err.value.msg == "service 'gke' has no OS-agnostic recipe for accelerator ''; specify an OS (valid: cos)"


def test_platform_combinations_message(aicr_catalog_dir):
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), {"platform": "nim"}, persist_cache=False)
    assert err.value.msg == ("platform 'nim' requires additional criteria; supported combinations: (service=ocp, intent=inference), "
                             "(service=eks, accelerator=h100, intent=inference, os=ubuntu), "
                             "(service=eks, accelerator=rtx-pro-6000, intent=inference, os=ubuntu)")


def test_no_recipe_provides_os(aicr_catalog_dir):
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), {"service": "eks", "accelerator": "h100", "intent": "training", "os": "cos"},
                            persist_cache=False)
    assert err.value.msg == "no recipe provides os 'cos' for criteria(service=eks, accelerator=h100, intent=training, os=cos)"


def test_profile_default_and_selection(aicr_catalog_dir):
    q = {"service": "aks", "accelerator": "h100", "intent": "training", "os": "ubuntu"}
    out = resolve_mod.resolve(str(aicr_catalog_dir), q, persist_cache=False)
    rec = out["recipe"]
    assert rec["apiVersion"] == "aicr.run/v1alpha3"
    assert rec["metadata"]["selectedProfile"]["name"] == "gpuStack"
    assert rec["metadata"]["selectedProfile"]["value"] == "azure-managed"
    gpu = [c for c in out["components"] if c["name"] == "gpu-operator"][0]
    assert gpu["values"]["driver"]["enabled"] is False
    out = resolve_mod.resolve(str(aicr_catalog_dir), q, profile="gpuStack=operator-managed", persist_cache=False)
    gpu = [c for c in out["components"] if c["name"] == "gpu-operator"][0]
    assert gpu["values"]["driver"]["enabled"] is True
    assert {"name": "K8s.aks-gpu-pools.gpu-driver", "value": "None"} in out["recipe"]["constraints"]


@pytest.mark.parametrize("profile,fragment", [
    ("gpuStack=missing", 'profile "gpuStack" has no value "missing"; valid values: [azure-managed operator-managed]'),  # AICR's words
    ("other=x", 'resolved composition declares profile "gpuStack", not "other"'),
    ("gpuStack", "profile: 'gpuStack' must use the exact name=value form"),  # the one validation pass, before the catalog is read
])
def test_profile_errors(aicr_catalog_dir, profile, fragment):
    q = {"service": "aks", "accelerator": "h100", "intent": "training", "os": "ubuntu"}
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), q, profile=profile, persist_cache=False)
    assert fragment in err.value.msg


def test_profile_without_declaration(aicr_catalog_dir):
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(str(aicr_catalog_dir), {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"},
                            profile="gpuStack=x", persist_cache=False)
    assert err.value.msg == 'profile "gpuStack" was selected, but the resolved composition declares no profile'


def test_slurm_accounting_default(aicr_catalog_dir):
    out = resolve_mod.resolve(str(aicr_catalog_dir), {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu",
                                                      "platform": "slurm"}, persist_cache=False)
    rec = out["recipe"]
    assert rec["configuration"] == {"slurm": {"accounting": {"mode": "disabled"}}}
    assert rec["apiVersion"] == "aicr.run/v1alpha3"
    for name in ("mariadb-operator-crds", "mariadb-operator", "slurm-accounting-mariadb"):
        assert name not in rec["deploymentOrder"]
    slurm = [c for c in out["components"] if c["name"] == "slinky-slurm"][0]
    assert slurm["values"]["accounting"]["enabled"] is False
    assert "slurm-accounting-mariadb" in slurm["external_dependencies"]


def test_real_recipe_components_shape(aicr_catalog_dir):
    out = resolve_mod.resolve(str(aicr_catalog_dir), {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"},
                              persist_cache=False)
    comps = dict((c["name"], c) for c in out["components"])
    assert comps["nodewright-operator"]["chart_ref"].startswith("oci://")
    assert comps["gpu-operator"]["chart"] == "gpu-operator"
    assert comps["gpu-operator"]["repository"] == "https://helm.ngc.nvidia.com/nvidia"
    assert comps["nodewright-customizations"]["manifest_only"] is True
    assert out["recipe_name"] == "h100-eks-ubuntu-training"
    assert out["graph"].startswith("flowchart TD\n")


@pytest.mark.parametrize("ref,fragment", [
    ({"name": "alpha", "patches": ["p.yaml"]}, "component 'alpha' declares patches"),
    ({"name": "alpha", "tag": "v1"}, "component 'alpha' is Helm but carries Kustomize field(s)"),
    ({"name": "alpha", "version": "v"}, "Helm component 'alpha' has chart version 'v'"),
    ({"name": "gamma", "chart": "gamma-chart"}, "Helm component 'gamma' has a chart name ('gamma-chart') but no source repository"),
    ({"name": "gamma"}, "Helm component 'gamma' has no deployable primary"),
    ({"name": "delta", "type": "Kustomize", "source": "https://git.example/x"}, "component 'delta' is Kustomize but has no path"),
    ({"name": "delta", "type": "Operator"}, "component 'delta' has unsupported type 'Operator'"),
])
def test_incoherent_refs_are_rejected(tmp_path, ref, fragment):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[ref])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert err.value.msg.startswith("recipe has incoherent component ref(s): ")
    assert fragment in err.value.msg


def test_disabled_incoherent_ref_is_ignored(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "gamma", "overrides": {"enabled": False}}])])
    out = resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert "gamma" not in out["recipe"]["deploymentOrder"]


def test_helm_source_without_version(tmp_path):
    root = _cat(tmp_path, overlays=[overlay("svc", {"service": "eks"}, refs=[{"name": "delta", "type": "Helm", "source": "https://x"}])])
    with pytest.raises(AicrError) as err:
        resolve_mod.resolve(root, {"service": "eks"}, persist_cache=False)
    assert "Helm component 'delta' has no chart version" in err.value.msg
