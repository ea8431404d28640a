# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A role's variables: the ones a play defines with the role's prefix that the role does not know are refused.

Ansible validates a role's declared options (``meta/argument_specs.yml``) but says nothing of a variable it does not
declare: ``cluster_runtime_critera`` is simply never read, and the role plans a rollout of the ``base`` recipe. Each
role of the collection therefore checks, as its first task (the ``aicr.runtime.unknown_variables`` lookup), every
defined variable whose name starts with ``<role>_``:

- known: the options of every entry point of ``meta/argument_specs.yml`` - the one list of what a user may set;
- the role's own: what its task files set themselves (``register``, ``set_fact`` keys, ``loop_var``/``index_var``,
  task and block ``vars``), read from the tasks so that a result registered by an earlier run of the role (a host
  variable from then on) is never taken for a misspelling;
- anything else is refused, naming the nearest known variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import nearest

SET_FACT = ("set_fact", "ansible.builtin.set_fact", "ansible.legacy.set_fact")
_CACHE = {}  # role directory -> (the files' signature, declared, own): one read per process for the two uses of one task


def declared_variables(spec):
    """The options of every entry point of a parsed ``meta/argument_specs.yml``."""
    names = set()
    for entry in ((spec or {}).get("argument_specs") or {}).values():
        names.update((entry or {}).get("options") or {})
    return names


def own_variables(tasks):
    """What a parsed task file sets itself: ``register`` names, ``set_fact`` keys, loop variables, task and block ``vars``."""
    names = set()
    stack = [tasks]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("register"), str):
            names.add(item["register"])
        for key in SET_FACT:
            if isinstance(item.get(key), dict):
                names.update(name for name in item[key] if name != "cacheable")
        control = item.get("loop_control")
        if isinstance(control, dict):
            names.update(control[key] for key in ("loop_var", "index_var") if isinstance(control.get(key), str))
        if isinstance(item.get("vars"), dict):
            names.update(item["vars"])
        stack.extend(item[key] for key in ("block", "rescue", "always") if isinstance(item.get(key), list))
    return names


def unknown_variables(role, defined, declared, own):
    """One line per variable of ``defined`` with the prefix ``<role>_`` that is neither ``declared`` nor the role's ``own``,
    sorted; each names the nearest declared variable (compared without the prefix every one of them shares)."""
    prefix = role + "_"
    problems = []
    for name in sorted(n for n in defined if str(n).startswith(prefix) and n not in declared and n not in own):
        guess = nearest(name[len(prefix):], [d[len(prefix):] for d in declared if d.startswith(prefix)])
        problems.append("%s: not a variable of role %s (its variables are the options of its meta/argument_specs.yml)%s"
                        % (name, role, "; did you mean %s%s?" % (prefix, guess) if guess else ""))
    return problems


def role_files(role_path):
    """The argument spec and the task files of the role at ``role_path`` (sorted paths)."""
    tasks = []
    for directory, _dirs, files in os.walk(os.path.join(role_path, "tasks")):
        tasks.extend(os.path.join(directory, name) for name in files if name.endswith((".yml", ".yaml")))
    return os.path.join(role_path, "meta", "argument_specs.yml"), sorted(tasks)


def _read(path):
    with open(path, "rb") as handle:
        return deps.load(handle.read().decode("utf-8"), path)


def role_names(role_path):
    """(declared, own) variables of the role at ``role_path``, read once per process while its files are unchanged."""
    spec_path, task_paths = role_files(role_path)
    signature = tuple((path, os.stat(path).st_mtime_ns) for path in [spec_path] + task_paths)
    cached = _CACHE.get(role_path)
    if cached is None or cached[0] != signature:
        own = set()
        for path in task_paths:
            own |= own_variables(_read(path))
        cached = _CACHE[role_path] = (signature, declared_variables(_read(spec_path)), own)
    return cached[1], cached[2]
