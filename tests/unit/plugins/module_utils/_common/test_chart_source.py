"""What reaches helm's argv from a component (``_common.component.check_chart_source``): chart names, repository URLs
(OCI references in particular) and versions, refused before helm runs in one line naming the field and the component."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source, normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from ansible_collections.aicr.runtime.plugins.module_utils._schema import sources


def comp(**fields):
    found = {"name": "web", "type": "Helm", "chart": "c", "repository": "https://charts.example/repo", "version": "1.0.0",
             "namespace": "apps", "values": {}, "dependencies": []}
    found.update(fields)
    return found


@pytest.mark.parametrize("field, value", [
    ("chart", "--post-renderer=/tmp/x"), ("chart", "-c"), ("chart", "../../etc/passwd"), ("chart", "a b"), ("chart", ".hidden"),
    ("chart", "c\n--debug"), ("repository", "-x"), ("repository", "ftp://h/charts"), ("repository", "https://h/charts x"),
    ("repository", "oci://Registry.example/UPPER"), ("repository", "oci://r:5000/a//b"), ("version", "--devel"), ("version", "1.0;rm"),
])
def test_what_helm_would_misread_is_refused_naming_the_field_and_component(field, value):
    with pytest.raises(AicrError) as error:
        build_plan({"components": [comp(**{field: value})]})
    msg = error.value.msg
    assert "\n" not in msg and msg.startswith("recipe: component web: %s " % field) and "is not allowed; allowed: " in msg
    assert error.value.details["field"] == field and error.value.details["component"] == "web"


def test_an_oci_chart_is_lower_case_as_the_registry_wants():
    with pytest.raises(AicrError, match=r"^recipe: component web: chart 'GPU-Operator' is not allowed"):
        build_plan({"components": [comp(chart="GPU-Operator", repository="oci://ghcr.io/nvidia")]})


@pytest.mark.parametrize("chart, repository, version", [
    ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.3.3"), ("kai-scheduler", "oci://ghcr.io/kai-scheduler/kai-scheduler", "v0.14.1"),
    ("nvidia/gpu-operator", "oci://registry.example:5000", "1.0.0"),
    ("kube-prometheus-stack", "https://prometheus-community.github.io/helm-charts/", ">=84.0.0 <85.0.0"),
    ("My_Chart.v2", "http://127.0.0.1:8080/charts", "~1.2"), ("local", "file:///srv/charts", ""), ("local", "/srv/charts", "^1"),
])
def test_real_chart_sources_are_accepted(chart, repository, version):
    [planned] = build_plan({"components": [comp(chart=chart, repository=repository, version=version)]}).components
    assert (planned.chart, planned.repository) == (chart, repository)


def test_mirrors_and_values_schema_pulls_are_held_to_the_same_rule():
    with pytest.raises(AicrError) as error:
        normalize_mirrors({"https://up": "--insecure"})
    assert error.value.msg.startswith("repository_mirrors: the mirror of https://up: repository '--insecure' is not allowed; allowed: an https://")
    with pytest.raises(AicrError, match=r"^chart: chart '-x' is not allowed; allowed: a helm chart name"):
        sources.pull("-x", "1.0.0", "https://charts.example/repo", helm_binary="/nonexistent/helm")
    with pytest.raises(AicrError, match=r"^chart: chart 'C:1' is not allowed"):
        sources.pull("oci://ghcr.io/x/C:1", None, None, helm_binary="/nonexistent/helm")
    with pytest.raises(AicrError, match=r"^chart -x: chart '-x' is not allowed"):
        chart_source("-x", "https://charts.example/repo", {})
