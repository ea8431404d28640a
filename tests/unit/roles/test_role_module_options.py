"""A role variable handed to a module option is declared as that option is (issue 37: one declaration per option).

The roles' ``meta/argument_specs.yml`` are checked by Ansible before the role runs, the modules' argument specs when the
module runs: when the two disagree, a value one accepts is refused by the other, in other words and later
(``composable_gpu_timeout: 0.5`` was refused by the role although fabric_device takes a float). For every task of every
role that calls a module of this collection, each option given as ``{{ <role variable> ... }}`` is compared with the
module's own declaration (``ansible-doc``, fragments merged: what validate-modules holds equal to the argument spec):
the same type (a module's ``raw`` takes anything), the same list elements, and the same choices (a role may add ``""``
when the task turns an empty value into ``omit``)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common import rolevars

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
ONE_VARIABLE = re.compile(r"^\{\{\s*([a-z_][a-z0-9_]*)\s*(\|[^}]*)?\}\}$")


@pytest.fixture(scope="module")
def module_options():
    """{module: its documented options}, as ansible-doc reads them from the repository (one process for every module)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "dev"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-t", "module", "--json"] + ["aicr.runtime.%s" % m for m in MODULES],
                         env=env, capture_output=True, text=True, timeout=300, check=True)
    return dict((name.split(".")[-1], doc["doc"]["options"]) for name, doc in json.loads(run.stdout).items())


def module_calls(tasks):
    """(module, its parameters) of every task calling a module of this collection, blocks included."""
    for task in tasks or []:
        for section in ("block", "rescue", "always"):
            yield from module_calls(task.get(section))
        for key, params in task.items():
            if key.startswith("aicr.runtime.") and isinstance(params, dict):
                yield key.rsplit(".", 1)[1], params


def option_values(options, params, path=()):
    """(option path, its documentation or None, the value the task gives), suboptions followed into."""
    for name, value in params.items():
        spec = options.get(name)
        if spec is not None and isinstance(value, dict) and spec.get("suboptions"):
            yield from option_values(spec["suboptions"], value, path + (name,))
        else:
            yield path + (name,), spec, value


def disagreements(option, variable, filters):
    """How a role variable's declaration disagrees with the module option it is given to (empty: they agree)."""
    found = []
    module_type, role_type = option.get("type", "str"), variable.get("type", "str")
    if module_type != "raw" and module_type != role_type:
        found.append("type %s, the role's %s" % (module_type, role_type))
    if module_type == "list" and option.get("elements") != variable.get("elements"):
        found.append("elements %s, the role's %s" % (option.get("elements"), variable.get("elements")))
    declared_default = option.get("default") is not None and "default" in variable
    if not filters and module_type != "raw" and declared_default and _normal(option.get("default"), module_type) != _normal(variable["default"], module_type):
        found.append("default %r, the role's %r" % (option.get("default"), variable["default"]))
    if option.get("choices"):
        allowed = set(str(c) for c in option["choices"])
        if "default(omit" in (filters or ""):
            allowed.add("")  # an empty value is omitted: the module's default
        if set(str(c) for c in variable.get("choices") or ()) != allowed and set(str(c) for c in variable.get("choices") or ()) != allowed - {""}:
            found.append("choices %s, the role's %s" % (sorted(option["choices"]), variable.get("choices")))
    return found


def _normal(value, kind):
    """A default as the module would take it (a role's ``4`` for a float option is ``4.0``; an empty list or mapping is none)."""
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return None if value in ([], {}) and kind in ("list", "dict") else value


@pytest.mark.parametrize("role", ROLES)
def test_every_role_variable_given_to_a_module_is_declared_as_the_option(role, module_options):
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    _declared, own = rolevars.role_names(str(REPO / "roles" / role))
    problems, compared = [], 0
    for path in sorted((REPO / "roles" / role / "tasks").glob("*.yml")):
        for module, params in module_calls(yaml.safe_load(path.read_text())):
            for option_path, option, value in option_values(module_options[module], params):
                match = ONE_VARIABLE.match(value) if isinstance(value, str) else None
                if not match or match.group(1) in own or not match.group(1).startswith(role + "_"):
                    continue
                where = "%s: %s option %s <- %s" % (path.name, module, ".".join(option_path), match.group(1))
                if option is None:
                    problems.append("%s: the module has no such option" % where)
                elif match.group(1) not in specs:
                    problems.append("%s: the role does not declare the variable" % where)
                else:
                    compared += 1
                    problems += ["%s: %s" % (where, d) for d in disagreements(option, specs[match.group(1)], match.group(2))]
    assert not problems, "\n".join(problems)
    assert compared, "no role variable of %s reaches a module option: the test reads the tasks wrong" % role


def test_a_disagreement_is_named():
    assert disagreements({"type": "float"}, {"type": "int"}, None) == ["type float, the role's int"]
    assert disagreements({"type": "list", "elements": "str"}, {"type": "list", "elements": "dict"}, None) == ["elements str, the role's dict"]
    assert disagreements({"type": "str", "choices": ["a", "b"]}, {"type": "str", "choices": ["a"]}, None)
    assert disagreements({"type": "str", "choices": ["a", "b"]}, {"type": "str", "choices": ["", "a", "b"]}, "| default(omit, true)") == []
    assert disagreements({"type": "raw"}, {"type": "dict"}, None) == []


@pytest.mark.parametrize("role", ROLES)
def test_every_role_default_is_the_one_its_argument_spec_declares(role):
    """defaults/main.yml and meta/argument_specs.yml both give a variable's default: they say the same (a templated
    default, such as one picked up from a shared inventory name, is the role's to document; a required variable's is a
    placeholder)."""
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    wrong = ["%s: defaults/main.yml %r, meta/argument_specs.yml %r" % (name, value, specs[name].get("default"))
             for name, value in sorted(defaults.items())
             if not (isinstance(value, str) and "{{" in value) and name in specs and not specs[name].get("required")
             and _normal(value, "raw") != _normal(specs[name].get("default"), "raw")]
    assert not wrong, "\n".join(wrong)
