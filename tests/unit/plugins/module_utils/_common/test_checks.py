# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import NAME_RULES, Problems, nearest, check_lookup_keywords, unknown_name_message
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


def test_zero_is_a_value_not_the_default():
    problems = Problems()
    assert problems.number("concurrency", 0, default=4, minimum=1, integer=True) == 0
    with pytest.raises(AicrError) as caught:
        problems.raise_if_any()
    assert caught.value.msg == "concurrency: 0 is not allowed; use 1 or more"
    assert caught.value.details["field"] == "concurrency"
    assert caught.value.details["errors"][0]["value"] == 0


def test_none_takes_the_default_and_nothing_is_reported():
    problems = Problems()
    assert problems.number("concurrency", None, default=4, minimum=1, integer=True) == 4
    assert problems.positive("timeout", None, default=600) == 600
    problems.raise_if_any()


@pytest.mark.parametrize("value", [0, -1, -0.5])
def test_positive_refuses_zero_and_negatives(value):
    problems = Problems()
    problems.positive("wait_timeout", value, default=300)
    assert problems.errors[0]["message"].startswith("wait_timeout: %s is not allowed; use a positive number of seconds" % value)


@pytest.mark.parametrize("value", [True, "lots", [1], float("nan"), float("inf"), 2.5])
def test_not_a_number(value):
    problems = Problems()
    problems.number("count", value, minimum=0, integer=True)
    assert len(problems.errors) == 1 and problems.errors[0]["field"] == "count"


def test_numeric_string_is_accepted_as_ansible_would_convert_it():
    problems = Problems()
    assert problems.number("count", "3", minimum=0, integer=True) == 3
    assert not problems


def test_every_problem_is_listed_and_the_message_is_one_line():
    problems = Problems()
    problems.positive("timeout", -1)
    problems.choice("state", "gone", ["present", "absent"])
    problems.known_keys("", {"critera": {}}, ["criteria", "catalog"])
    with pytest.raises(AicrError) as caught:
        problems.raise_if_any()
    assert "\n" not in caught.value.msg
    assert caught.value.msg.endswith("(and 2 more problems, listed in errors)")
    assert [e["field"] for e in caught.value.details["errors"]] == ["timeout", "state", "critera"]
    assert "did you mean criteria?" in caught.value.details["errors"][2]["message"]


def test_secret_values_are_not_listed():
    problems = Problems()
    problems.add("password", "is too short", value="hunter2", secret=True)
    assert "value" not in problems.errors[0]


def test_range_messages():
    problems = Problems()
    problems.number("lease_duration", 5, minimum=15, maximum=3600, integer=True, unit="seconds")
    problems.number("concurrency", "lots", minimum=1, maximum=64, integer=True)
    assert [e["message"] for e in problems.errors] == [
        "lease_duration: 5 is not allowed; use 15 to 3600 seconds",
        "concurrency: 'lots' is not allowed; use an integer (1 to 64)"]


def test_nearest():
    assert nearest("critera", ["criteria", "catalog", "snapshot"]) == "criteria"
    assert nearest("zzz", ["criteria"]) is None
    assert unknown_name_message("lookup", "critera", ["criteria", "catalog"]) == \
        "lookup: critera is not known; did you mean criteria? allowed: catalog, criteria"


def test_choice_suggests_the_nearest():
    problems = Problems()
    problems.choice("state", "presnt", ["present", "absent"])
    assert problems.errors[0]["message"] == "state: 'presnt' is not allowed; did you mean present? use one of present, absent"


@pytest.mark.parametrize("rule, good, bad", [
    ("dns-label", ["a", "gpu-prod", "0abc"], ["A", "a_b", "a.b", "-a", "a" * 64, ""]),
    ("dns-1035-label", ["v1alpha1", "things"], ["1a", "Things", "a-", "a.b"]),
    ("dns-subdomain", ["nvidia.com", "node-0", "a.b.c"], ["Node-0", "a..b", "a_b", ".a", "a" * 254]),
])
def test_names_by_kubernetes_rules_are_never_folded(rule, good, bad):
    problems = Problems()
    for value in good:
        problems.name("n", value, rule)
    assert not problems
    for value in bad:
        problems.name("n", value, rule)
    assert len(problems.errors) == len(bad) and all(e["value"] == v for e, v in zip(problems.errors, bad))
    assert problems.errors[0]["message"].endswith("; allowed: %s" % NAME_RULES[rule][3])


def test_types():
    problems = Problems()
    assert problems.mapping("values", {"a": 1}) and not problems.mapping("values", None)
    assert not problems.mapping("values", ["a"])
    problems.text("chart", "")
    problems.text("chart", 5)
    problems.text("message", "", empty=True)
    assert [e["message"] for e in problems.errors] == ["values: a list is not allowed; use a mapping", "chart: '' is not allowed; use a non-empty string",
                                                       "chart: 5 is not allowed; use a non-empty string"]


def test_another_check_s_error_keeps_its_value_and_what_is_allowed():
    problems = Problems()
    problems.extend(AicrError("criteria.os: invalid os type 'win'", field="criteria.os", value="win", allowed=["cos", "ubuntu"]))
    assert problems.errors == [{"field": "criteria.os", "message": "criteria.os: invalid os type 'win'", "value": "win", "allowed": ["cos", "ubuntu"]}]


def test_a_lookup_s_unknown_keywords_are_refused_naming_the_nearest():
    with pytest.raises(AicrError) as caught:
        check_lookup_keywords("recipe lookup", {"critera": {}, "catalog": "/c"}, {"_terms": {}, "catalog": {"type": "path"}, "criteria": {"type": "dict"}})
    assert caught.value.msg == "recipe lookup: critera is not known; did you mean criteria? allowed: catalog, criteria"
    check_lookup_keywords("recipe lookup", {"catalog": "/c"}, {"catalog": {"type": "path"}})


def test_a_lookup_s_boolean_keyword_is_a_boolean_never_a_string_read_as_false():
    """Ansible reads use_cache='perhaps' as false (non-strict); the lookup refuses it, naming the keyword (issue 36)."""
    definitions = {"use_cache": {"type": "bool"}, "result": {"type": "str"}}
    with pytest.raises(AicrError) as caught:
        check_lookup_keywords("recipe lookup", {"use_cache": "perhaps", "result": "perhaps"}, definitions)
    assert caught.value.msg == "recipe lookup: use_cache: 'perhaps' is not allowed; use true or false"
    assert caught.value.details["field"] == "use_cache"
    for value in (True, False, "yes", "off", "True", 0, 1):
        check_lookup_keywords("recipe lookup", {"use_cache": value}, definitions)
