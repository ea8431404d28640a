"""option_problems lookup: a module's own option checks on the controller, before a role writes anything (issue 36)."""

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.lookup import option_problems

ROLES = option_problems.__file__.rsplit("/plugins/", 1)[0] + "/roles"


@pytest.fixture
def lookup(lookup_plugin):
    """The plugin with its documented options registered, as the plugin loader would do."""
    return lookup_plugin(option_problems)


def test_good_options_have_no_problem(lookup):
    assert lookup.run(["gated_release"], options={"concurrency": 4, "timeout": 60, "poll_interval": 0.2, "preflight": "auto"}) == [[]]
    assert lookup.run(["stack_info"], options={"resync_interval": "5m", "backend": "configmap", "namespace": "aicr-system"}) == [[]]
    assert lookup.run(["crd_publish"], options={"wait_timeout": 30, "wait_sleep": 1}) == [[]]
    assert lookup.run(["gated_release"], options={}) == [[]], "left out: the module's defaults"


def test_every_problem_is_one_line_of_the_module_s_own_wording(lookup):
    [problems] = lookup.run(["gated_release"], options={"concurrency": 0, "timeout": -1, "poll_interval": float("nan"), "preflight": "sometimes"})
    assert problems == ["concurrency: 0 is not allowed; use 1 to 64",
                        "timeout: -1 is not allowed; use more than 0 and at most 604800 seconds",
                        "poll_interval: nan is not allowed; use a number",
                        "preflight: 'sometimes' is not allowed; use one of auto, live, never"]
    assert lookup.run(["stack_info"], options={"resync_interval": "soon"}) == [
        ["resync_interval: 'soon' is not allowed; allowed: seconds or a duration like 30s, 5m, 1h30m"]]
    assert lookup.run(["crd_publish"], options={"wait_timeout": 0}) == [["wait_timeout: 0 is not allowed; use more than 0 and at most 86400 seconds"]]


def test_called_from_a_role_a_problem_names_the_role_s_variable(lookup):
    variables = {"role_path": ROLES + "/stack_reconcile"}
    [problems] = lookup.run(["gated_release"], variables=variables, options={"concurrency": 0, "preflight": "auto", "stack": "Bad Name"})
    assert problems[0].startswith("stack: 'Bad Name' "), "stack_reconcile has no stack_reconcile_stack: the option's name stays"
    assert problems[1] == "stack_reconcile_concurrency: 0 is not allowed; use 1 to 64"


@pytest.mark.parametrize("terms, keywords, message", [
    (["gated_relase"], {"options": {}},
     "option_problems lookup: module: gated_relase is not known; did you mean gated_release? allowed: crd_publish, gated_release, stack_info"),
    ([], {"options": {}}, "option_problems lookup: _terms: give one module, one of crd_publish, gated_release, stack_info; got 0"),
    (["gated_release"], {"options": {"concurency": 0}},
     "option_problems lookup: gated_release options: concurency is not known; did you mean concurrency? allowed: "),
    (["gated_release"], {"options": {}, "optons": {}}, "option_problems lookup: optons is not known; did you mean options? allowed: options"),
    (["gated_release"], {"optons": {}}, "option_problems lookup: optons is not known; did you mean options? allowed: options"),
])
def test_wrong_input_to_the_lookup_is_an_error_naming_it(lookup, terms, keywords, message):
    with pytest.raises(AnsibleLookupError) as err:
        lookup.run(terms, **keywords)
    assert str(err.value).startswith(message)


def test_options_that_are_no_mapping_are_refused():
    with pytest.raises(option_problems.AicrError) as err:
        option_problems.problems_of("stack_info", "resync_interval=5m")
    assert err.value.msg == "option_problems lookup: options: a str is not allowed; use a mapping of stack_info's options"


def test_on_failure_is_checked_as_the_stack_reconcile_role_passes_it(lookup):
    """The role hands on_failure to the lookup (issue 39): it must be an option the lookup checks, not an unknown one."""
    assert lookup.run(["gated_release"], options={"on_failure": "rollback"}) == [[]]
    [problems] = lookup.run(["gated_release"], options={"on_failure": "retry"})
    assert len(problems) == 1 and problems[0].startswith("on_failure: 'retry' is not allowed"), problems
