"""The survey_spec filter against every role's real argument specs and edge cases."""

from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.aicr.runtime.plugins.filter.survey_spec import survey_spec

ROLES = Path(__file__).resolve().parents[4] / "roles"

SPEC = {
    "short_description": "Demo",
    "description": ["First line.", "Second line."],
    "options": {
        "demo_name": {"type": "str", "required": True, "description": "Name."},
        "demo_token": {"type": "str", "no_log": True, "description": "Secret."},
        "demo_count": {"type": "int", "default": 3},
        "demo_ratio": {"type": "float", "default": 0.5},
        "demo_enabled": {"type": "bool", "default": False},
        "demo_state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "demo_features": {"type": "list", "elements": "str", "choices": ["a", "b"], "default": ["a"]},
        "demo_values": {"type": "dict", "default": {"x": 1}},
        "demo_items": {"type": "list", "elements": "str", "default": []},
    },
}


def by_variable(spec):
    return {question["variable"]: question for question in spec["spec"]}


def test_types_map_to_awx_question_types():
    questions = by_variable(survey_spec(SPEC))
    assert questions["demo_name"]["type"] == "text" and questions["demo_name"]["required"] is True
    assert questions["demo_token"]["type"] == "password"
    assert questions["demo_count"] == dict(questions["demo_count"], type="integer", default=3)
    assert questions["demo_ratio"]["type"] == "float"
    assert questions["demo_enabled"]["type"] == "multiplechoice"
    assert questions["demo_enabled"]["choices"] == ["true", "false"] and questions["demo_enabled"]["default"] == "false"
    assert questions["demo_state"]["choices"] == ["present", "absent"] and questions["demo_state"]["default"] == "present"
    assert questions["demo_features"]["type"] == "multiselect" and questions["demo_features"]["default"] == "a"
    assert questions["demo_values"]["type"] == "textarea" and questions["demo_values"]["default"] == '{"x": 1}'
    assert questions["demo_items"]["default"] == ""


def test_description_and_name():
    spec = survey_spec(SPEC, name="Job")
    assert spec["name"] == "Job"
    assert spec["description"] == "First line. Second line."


def test_only_filters_questions():
    spec = survey_spec(SPEC, only=["demo_name", "demo_count"])
    assert [q["variable"] for q in spec["spec"]] == ["demo_name", "demo_count"]


@pytest.mark.parametrize("bad", [None, {}, {"description": "no options"}])
def test_rejects_input_that_is_not_an_entry_point(bad):
    with pytest.raises(AnsibleFilterError, match="entry point"):
        survey_spec(bad)


def test_unknown_option_type_is_named():
    with pytest.raises(AnsibleFilterError, match="demo_x.*'bytes'"):
        survey_spec({"options": {"demo_x": {"type": "bytes"}}})


@pytest.mark.parametrize("argument_specs", sorted(ROLES.glob("*/meta/argument_specs.yml")), ids=lambda p: p.parts[-3])
def test_every_role_entry_point_converts(argument_specs):
    document = yaml.safe_load(argument_specs.read_text())
    for entry_point, spec in document["argument_specs"].items():
        survey = survey_spec(spec)
        assert survey["spec"], entry_point
        for question in survey["spec"]:
            assert question["type"] in ("text", "password", "textarea", "integer", "float", "multiplechoice", "multiselect")
            assert question["question_description"], "%s: option %s has no description" % (argument_specs, question["variable"])
