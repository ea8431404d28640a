"""The agentgateway source ranges as ``aicr bundle`` settles them (``_recipe.exposure``)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import exposure


@pytest.mark.parametrize("given", [{}, {"allowedSourceRanges": None}, {"allowedSourceRanges": []}])
def test_unset_ranges_become_the_private_default(given):
    values = {"agentgateway": dict(given, other=1)}
    exposure.settle_source_ranges(values)
    assert values == {"agentgateway": {"other": 1, "allowedSourceRanges": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]}}


@pytest.mark.parametrize("ranges", [["216.228.127.128/30"], ["0.0.0.0/0"], ["::/0", "10.1.0.0/16"]])
def test_a_list_of_cidrs_is_kept(ranges):
    values = {"agentgateway": {"allowedSourceRanges": list(ranges)}}
    exposure.settle_source_ranges(values)
    assert values["agentgateway"]["allowedSourceRanges"] == ranges


def test_other_components_are_left_alone():
    values = {"gpu-operator": {}}
    exposure.settle_source_ranges(values)
    assert values == {"gpu-operator": {}}


@pytest.mark.parametrize("bad, why", [("10.0.0.0/8", "got str, not a list"), ([8], "entry 8 is not a string"),
                                      (["10.0.0.1"], "'10.0.0.1' is not a valid CIDR"), (["nope/3"], "'nope/3' is not a valid CIDR")])
def test_anything_else_is_refused_naming_the_field(bad, why):
    with pytest.raises(AicrError) as err:
        exposure.settle_source_ranges({"agentgateway": {"allowedSourceRanges": bad}})
    assert str(err.value) == ('agentgateway: values.allowedSourceRanges must be a list of CIDR strings (%s); set it with '
                              'component_overrides.agentgateway.values.allowedSourceRanges, e.g. ["10.0.0.0/8"]' % why)
