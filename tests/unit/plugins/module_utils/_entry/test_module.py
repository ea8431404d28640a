"""call_engine owns the one result protocol of every engine (issue 37): warnings, failure and diff."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, diff=False):
        self.params = {}
        self.no_log_values = set()
        self._diff = diff
        self.warnings = []
        self.failed = None

    def warn(self, text):
        self.warnings.append(text)

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise Failed()


def test_warnings_become_ansible_warnings_and_diff_needs_diff_mode():
    module = FakeModule()
    result = call_engine(module, "x", lambda: {"changed": True, "warnings": ["w1", "w2"], "diff": {"before": 1, "after": 2}})
    assert result == {"changed": True}
    assert module.warnings == ["w1", "w2"]
    assert call_engine(FakeModule(diff=True), "x", lambda: {"diff": {"before": 1}}) == {"diff": {"before": 1}}


def test_warnings_kept_under_a_name_when_asked():
    module = FakeModule()
    assert call_engine(module, "x", lambda: {"warnings": ["w"]}, warnings_as="fabric_warnings") == {"fabric_warnings": ["w"]}
    assert call_engine(FakeModule(), "x", lambda: {}, warnings_as="fabric_warnings") == {"fabric_warnings": []}
    assert module.warnings == ["w"]


def test_a_failed_message_fails_the_task_with_the_rest_of_the_result():
    module = FakeModule()
    with pytest.raises(Failed):
        call_engine(module, "x", lambda: {"changed": True, "components": [1], "warnings": ["w"], "diff": {}, "failed_message": "component a failed"})
    assert module.failed == {"msg": "component a failed", "changed": True, "components": [1]}
    assert module.warnings == ["w"]


def test_an_engine_error_fails_in_one_line_with_its_details():
    module = FakeModule()

    def engine():
        raise AicrError("concurrency: 0 is not allowed; use 1 to 64", field="concurrency")
    with pytest.raises(Failed):
        call_engine(module, "x", engine, on_failure=lambda result: dict(result, shaped=True))
    assert module.failed["msg"] == "concurrency: 0 is not allowed; use 1 to 64"
    assert module.failed["field"] == "concurrency" and module.failed["shaped"] is True
