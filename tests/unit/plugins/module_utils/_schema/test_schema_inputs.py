"""values_schema's parameters in one validation pass, and every reader of its inputs bounded (issue 36)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

from schema_helpers import run_engine

# the values file of issue 36: 8 lines, under 300 bytes, 9**8 nodes once expanded (52 s and 2.3 GB, then "valid")
BOMB = "\n".join(["a: &a [x,x,x,x,x,x,x,x,x]"] + ["%s: &%s [%s]" % (c, c, ",".join(["*" + p] * 9)) for p, c in zip("abcdef", "bcdefg")]
                 + ["h: [%s]" % ",".join(["*g"] * 9)]) + "\n"


def refusal(**params):
    with pytest.raises(AicrError) as err:
        run_engine(params)
    return err.value


def test_every_parameter_problem_is_listed_before_a_chart_is_pulled(tmp_path):
    """The chart would be pulled from a repository nobody answers at; the parameters are refused first, all of them."""
    error = refusal(output="crd", chart="demo", repository="http://127.0.0.1:9/charts", group="x y", kind="thing", plural="Things",
                    api_version="V1", domain="_bad_", versions=["1.0", ""], severities={"descripton": "fatal"}, scope="Global",
                    set=["=1"], k8s_schema_version="1.20", draft="draft-04")
    fields = [e["field"] for e in error.details["errors"]]
    assert fields == ["draft", "scope", "k8s_schema_version", "severities.descripton", "severities.descripton", "group", "kind", "plural",
                      "api_version", "domain", "versions[1]", "set"]
    assert error.msg.startswith("draft: 'draft-04' is not allowed; ")
    messages = [e["message"] for e in error.details["errors"]]
    assert "severities: descripton is not known; did you mean description? allowed: " in messages[3]
    assert messages[7] == ("plural: 'Things' is not a DNS-1035 label; allowed: a DNS-1035 label: lowercase letters, digits and '-', starting with a "
                           "letter and ending with a letter or digit, at most 63 characters")


@pytest.mark.parametrize("params, message", [
    ({"output": "compare", "values_files": ["v.yaml"]}, "old_crd: required with output=compare; allowed: a CRD file, a mapping, or the name of a live CRD"),
    ({"output": "validate", "schema": 5}, "schema: a int is not allowed; use a JSON Schema mapping or the path of one"),
    ({"output": "crd", "values_files": "values.yaml"}, "values_files: a str is not allowed; use a list"),
    ({"output": "crd", "name": "x", "versions": ["1.0", "1.0"], "values_files": ["v.yaml"]},
     "versions: ['1.0', '1.0'] lists a version twice; allowed: each version once"),
    ({"output": "validate", "schema": {}, "set_string": ["a[0].b"]}, "set_string: 'a[0].b' is not key=value"),
    ({"output": "validate", "schema": {}, "values": ["a"]}, "values: a list is not allowed; use a mapping"),
    # a name was folded into the CRD's group (my-stack-x.bundles.aicr.io) without a word
    ({"output": "crd", "values_files": ["v.yaml"], "name": "My Stack/../x"},
     "name: 'My Stack/../x' is not a DNS-1123 label; allowed: a DNS-1123 label: lowercase letters, digits and '-', starting and ending "
     "with a letter or digit, at most 63 characters"),
])
def test_one_parameter_problem(params, message):
    assert refusal(**params).msg == message


def test_the_alias_bomb_values_file_is_refused_not_validated(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 300 and BOMB.count("\n") == 8
    error = refusal(output="validate", values_files=[str(path)], schema={"type": "object"})
    assert error.msg.startswith("values file %s: refused, its aliases expand to " % path)
    assert error.details["limit_variable"] == "AICR_RUNTIME_MAX_ALIAS_NODES"


def test_a_bomb_in_a_comment_is_refused_naming_the_values_file(tmp_path):
    """A commented-out example is read as YAML too (it types a null leaf)."""
    flow = "[&a [1, 1, 1, 1, 1, 1, 1, 1, 1], %s]" % ", ".join("&%s [%s]" % (c, ", ".join(["*" + p] * 9)) for p, c in zip("abcde", "bcdef"))
    path = tmp_path / "values.yaml"
    path.write_text("workers: # %s\nreplicas: 1\n" % flow)
    error = refusal(output="json_schema", values_files=[str(path)])
    assert error.msg.startswith("values file %s: a YAML comment: refused, its aliases expand to " % path)


def test_inline_values_and_set_expressions_are_held_to_the_depth_limit():
    deep = {}
    node = deep
    for _level in range(300):
        node["a"] = {}
        node = node["a"]
    assert refusal(output="validate", schema={"type": "object"}, values=deep).msg.startswith(
        "values: refused, nesting deeper than 200 levels: past the depth limit of 200")
    assert refusal(output="validate", schema={"type": "object"}, set=[".".join(["a"] * 300) + "=1"]).msg.startswith(
        "set: refused, nesting deeper than 200 levels: past the depth limit of 200")


def test_a_crd_or_schema_given_as_a_mapping_is_held_to_the_limits(monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "50")
    big = {"type": "object", "enum": list(range(100))}
    assert refusal(output="validate", schema=big).msg.startswith("schema: refused, more than 50 nodes: past the nodes limit of 50")
    assert refusal(output="compare", old_crd=big, new_crd={}).msg.startswith("old_crd: refused, more than 50 nodes")
