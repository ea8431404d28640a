"""unknown_variables lookup: its own wrong input is refused naming what is wrong (the role checks are in tests/unit/roles)."""

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.lookup import unknown_variables

ROLES = unknown_variables.__file__.rsplit("/plugins/", 1)[0] + "/roles"


@pytest.mark.parametrize("terms, variables, keywords, message", [
    ([], {}, {}, "unknown_variables lookup: role_path is not defined; call it from a task of a role"),
    (["cluster_runtime"], {}, {}, "unknown_variables lookup: _terms: 1 given; it takes no terms (call it from a task of a role)"),
    ([], {}, {"role": "cluster_runtime"}, "unknown_variables lookup: role: not an option; it takes no options (call it from a task of a role)"),
])
def test_wrong_input_names_what_is_wrong(terms, variables, keywords, message):
    with pytest.raises(AnsibleLookupError) as err:
        unknown_variables.LookupModule(loader=None, templar=None).run(terms, variables=variables, **keywords)
    assert str(err.value) == message


def test_from_a_role_a_misspelling_is_named_with_the_nearest_variable():
    variables = {"role_path": ROLES + "/cluster_runtime", "cluster_runtime_critera": {}, "cluster_runtime_catalog": "/c"}
    [problems] = unknown_variables.LookupModule(loader=None, templar=None).run([], variables=variables)
    assert problems == ["cluster_runtime_critera: not a variable of role cluster_runtime (its variables are the options of its "
                        "meta/argument_specs.yml); did you mean cluster_runtime_criteria?"]
