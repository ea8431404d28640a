"""``_common.validation``: jsonschema imported on first use only, and reported as missing when it is not installed."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._entry import module
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

PREFIX = "ansible_collections.aicr.runtime.plugins."


def _fresh_python(code):
    """Run ``code`` in a new interpreter that sees the collection as this one does; its stdout as JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_importing_what_the_gated_release_module_imports_loads_no_jsonschema():
    # the module process of a no-op re-run: the module's own imports, then nothing validates, no health check is read and
    # nothing has connected yet (the collection's own code is imported at the top of each file; the third-party packages
    # these need only sometimes are imported on first use)
    loaded = _fresh_python(
        "import json, sys\n"
        "import %smodules.gated_release\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'jmespath', 'kubernetes'))))" % PREFIX)
    assert loaded == []


def test_validate_imports_jsonschema_when_it_validates():
    answer = _fresh_python(
        "import json, sys\n"
        "from %smodule_utils._common import validation\n"
        "before = 'jsonschema' in sys.modules\n"
        "problems = validation.validate({'type': 'object', 'properties': {'a': {'type': 'integer'}}}, {'a': 'x'})\n"
        "print(json.dumps([before, 'jsonschema' in sys.modules, [p['path'] for p in problems]]))" % PREFIX)
    assert answer == [False, True, ["a"]]


def test_guard_reports_jsonschema_present():
    assert module.guard("jsonschema") == (True, None)
    assert validation.HAS_JSONSCHEMA is True


def test_missing_jsonschema_is_an_error_naming_the_package():
    # None in sys.modules makes `import jsonschema` raise ImportError, as on a host without the package
    answer = _fresh_python(
        "import json, sys\n"
        "sys.modules['jsonschema'] = None\n"
        "from %smodule_utils._common import validation\n"
        "from %smodule_utils._entry import module\n"
        "from %smodule_utils._common.errors import AicrError\n"
        "present, error = module.guard('jsonschema')\n"
        "try:\n"
        "    validation.validate({'type': 'object'}, {})\n"
        "    message = None\n"
        "except AicrError as exc:\n"
        "    message = str(exc)\n"
        "print(json.dumps([present, 'jsonschema' in (error or ''), message]))" % (PREFIX, PREFIX, PREFIX))
    assert answer == [False, True, "the Python package 'jsonschema' is required to validate values"]


def test_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError):
        validation.NO_SUCH_NAME  # pylint: disable=pointless-statement,no-member


def test_a_bad_schema_is_still_reported():
    with pytest.raises(AicrError, match="not a valid JSON Schema"):
        validation.validate({"type": 12}, {})
