"""Run a module's ``main()`` in this process, as Ansible would run it, for the module tests."""

import json

import pytest

from ansible.module_utils.testing import patch_module_args


def run_main(module, capsys, args):
    """``(exit code, result dict)`` of ``module.main()`` with ``args`` as its module arguments."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)
