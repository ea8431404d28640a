"""Run a module's ``main()`` in this process, as Ansible would run it, for the module tests."""

import json

import pytest

from ansible.module_utils import _internal as ansible_internal
from ansible.module_utils.testing import patch_module_args


def run_main(module, capsys, args):
    """``(exit code, result dict)`` of ``module.main()`` with ``args`` as its module arguments.

    A module runs target-side: once a test of this process imported controller code (a lookup plugin, ansible's
    display), ansible-core marks the process as the controller, and ``module.warn`` then prints instead of returning
    its warnings in the result - so the flag is put back to what a module process has for the call."""
    was_controller = ansible_internal.is_controller
    ansible_internal.is_controller = False
    try:
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exc:
                module.main()
    finally:
        ansible_internal.is_controller = was_controller
    return exc.value.code, json.loads(capsys.readouterr().out)
