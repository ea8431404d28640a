"""Every lookup's run() boilerplate is EngineLookup's (issue 37): keywords checked first, options loaded, an engine
error in one line."""

import importlib
from pathlib import Path

import pytest

from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup

LOOKUPS = sorted(p.stem for p in (Path(__file__).resolve().parents[4] / "plugins" / "lookup").glob("*.py"))


@pytest.mark.parametrize("name", LOOKUPS)
def test_every_lookup_is_an_engine_lookup_and_keeps_its_run(name):
    plugin = importlib.import_module("ansible_collections.aicr.runtime.plugins.lookup." + name).LookupModule
    assert issubclass(plugin, EngineLookup) and plugin.run is EngineLookup.run
    assert plugin.name == "%s lookup" % name


class LookupModule(EngineLookup):  # the class name is how Ansible tells a lookup
    name = "example lookup"
    error_prefix = "example lookup: "

    def evaluate(self, terms, variables):
        if terms == ["bad"]:
            raise AicrError("count: 0 is not allowed; use 1 or more", field="count")
        return [self.get_option("count"), variables.get("seen")]


@pytest.fixture
def example():
    C.config.initialize_plugin_configuration_definitions("lookup", "aicr.runtime.example", {"count": {"type": "int", "default": 1}})
    plugin = LookupModule(loader=None, templar=None)
    plugin._load_name = "aicr.runtime.example"  # pylint: disable=protected-access
    return plugin


def test_options_loaded_and_variables_given(example):
    assert example.run([], {"seen": True}, count=3) == [3, True]
    assert example.run([]) == [1, None]


def test_a_misspelled_keyword_is_named(example):
    with pytest.raises(AnsibleLookupError, match="cuont"):
        example.run([], cuont=3)


def test_an_engine_error_is_one_line_with_the_prefix(example):
    with pytest.raises(AnsibleLookupError) as error:
        example.run(["bad"])
    assert error.value.message == "example lookup: count: 0 is not allowed; use 1 or more"
