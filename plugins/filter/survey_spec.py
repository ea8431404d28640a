# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: survey_spec
short_description: Turn a role's argument spec into an AWX / AAP job template survey
version_added: 0.1.0
description:
  - Converts one entry point of a role's C(meta/argument_specs.yml) into the survey specification
    (JSON) that AWX and Ansible Automation Platform job templates accept, so a job template can be
    created from the role's own documentation.
  - C(str) options become C(text) questions (C(password) when C(no_log)), C(int) C(integer), C(float)
    C(float), C(bool) a C(multiplechoice) of C(true)/C(false), options with C(choices) a
    C(multiplechoice) (C(multiselect) for lists), C(list)/C(dict) options a C(textarea) holding YAML or JSON.
  - Survey answers arrive as extra vars; a blank answer to an optional question is the empty string,
    which the roles of this collection treat as unset.
options:
  _input:
    description: The argument spec of one entry point (C(argument_specs.<entry>) of the role).
    type: dict
    required: true
  name:
    description: Survey name.
    type: str
    default: ""
  only:
    description: Option names to include (all when empty).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Write the survey of the cluster_runtime role
  ansible.builtin.copy:
    dest: /tmp/cluster_runtime.survey.json
    content: "{{ (lookup('ansible.builtin.file', role_path ~ '/meta/argument_specs.yml') | from_yaml).argument_specs.main
                 | aicr.runtime.survey_spec(name='Converge a cluster') | to_nice_json }}"
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The survey specification (name, description, spec list of questions).
  type: dict
"""

import json

from ansible.errors import AnsibleFilterError

_SCALAR_TYPES = {"str": "text", "path": "text", "raw": "text", "int": "integer", "float": "float"}


def _description(option):
    text = option.get("description", "")
    if isinstance(text, list):
        text = " ".join(str(line) for line in text)
    return str(text)


def _default_answer(option, question_type):
    default = option.get("default")
    if default is None:
        return ""
    if question_type == "textarea":
        return json.dumps(default, sort_keys=True) if default not in ({}, []) else ""
    if isinstance(default, bool):
        return "true" if default else "false"
    if question_type == "multiselect":
        return "\n".join(str(item) for item in default)
    return default if question_type in ("integer", "float") else str(default)


def _question(variable, option):
    option_type = option.get("type", "str")
    choices = option.get("choices")
    if choices:
        question_type = "multiselect" if option_type == "list" else "multiplechoice"
        choices = [str(choice) for choice in choices]
    elif option_type == "bool":
        question_type = "multiplechoice"
        choices = ["true", "false"]
    elif option_type in ("list", "dict"):
        question_type = "textarea"
    elif option_type in _SCALAR_TYPES:
        question_type = _SCALAR_TYPES[option_type]
    else:
        raise AnsibleFilterError("survey_spec: option %s has type %r; supported: str, path, raw, int, float, bool, list, dict" % (variable, option_type))
    if option.get("no_log") and question_type == "text":
        question_type = "password"
    question = {
        "question_name": variable,
        "question_description": _description(option)[:1024],
        "variable": variable,
        "type": question_type,
        "required": bool(option.get("required", False)),
        "default": _default_answer(option, question_type),
    }
    if choices:
        question["choices"] = choices
    if question_type in ("text", "password", "textarea"):
        question["min"] = 0
        question["max"] = 65536
    return question


def survey_spec(argument_spec, name="", only=None):
    """Build an AWX survey spec from one entry point of a role's argument spec."""
    if not isinstance(argument_spec, dict) or "options" not in argument_spec:
        raise AnsibleFilterError("survey_spec: input must be one entry point of argument_specs (a dict with 'options')")
    wanted = set(only or [])
    questions = [
        _question(variable, option or {})
        for variable, option in argument_spec["options"].items()
        if not wanted or variable in wanted
    ]
    return {
        "name": name or argument_spec.get("short_description", "survey"),
        "description": _description(argument_spec)[:1024] or argument_spec.get("short_description", ""),
        "spec": questions,
    }


class FilterModule(object):
    """aicr.runtime filters."""

    def filters(self):
        return {"survey_spec": survey_spec}
