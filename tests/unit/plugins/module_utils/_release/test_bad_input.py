"""Bad input to gated_release, refused in one line before any use: names that are not DNS-1123 labels, unbounded numbers."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan


def comp(name, namespace="apps"):
    return {"name": name, "type": "Helm", "chart": "c", "repository": "https://charts.example/repo", "version": "1.0.0",
            "namespace": namespace, "values": {}, "dependencies": []}


@pytest.mark.parametrize("name", ["../etc", "a/b", "Upper", "with space", "x" * 54, "-dash", ""])
def test_component_names_are_dns1123_labels_before_any_use(name):
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
    with pytest.raises(AicrError) as err:
        build_plan({"components": [comp(name or "ok", namespace="apps") if name else dict(comp("ok"), namespace="../x")]})
    assert "\n" not in err.value.msg and "DNS-1123" in err.value.msg


@pytest.mark.parametrize("field, value", [("timeout", 1e300), ("overall_timeout", 1e12), ("poll_interval", 1e9), ("concurrency", 10 ** 6),
                                          ("lease_duration", 10 ** 12), ("lease_duration", 1)])
def test_numbers_are_bounded(field, value):
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
    with pytest.raises(AicrError) as err:
        Options(**{field: value})
    assert err.value.msg.startswith("%s: " % field) and "is not allowed" in err.value.msg


@pytest.mark.parametrize("field, value", [("concurrency", 0), ("timeout", 0), ("overall_timeout", 0), ("poll_interval", 0),
                                          ("lease_duration", 0), ("concurrency", -1), ("timeout", -5), ("poll_interval", 0.0),
                                          ("concurrency", True), ("timeout", float("nan")), ("timeout", float("inf")),
                                          ("concurrency", "lots"), ("concurrency", 2.5), ("state", "presnt")])
def test_a_zero_or_a_wrong_type_is_refused_never_turned_into_the_default(field, value):
    """Issue 36: ``int(x or 4)`` made ``concurrency: 0`` deploy with 4 and accepted ``timeout: 0`` and ``lease_duration: 0``."""
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
    with pytest.raises(AicrError) as err:
        Options(**{field: value})
    assert err.value.msg.startswith("%s: " % field) and "is not allowed" in err.value.msg and "\n" not in err.value.msg
    assert err.value.details["field"] == field


def test_every_option_problem_is_listed_at_once():
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
    with pytest.raises(AicrError) as err:
        Options(state="gone", concurrency=0, timeout=-1, overall_timeout=0, poll_interval=0, lease_duration=5)
    fields = [e["field"] for e in err.value.details["errors"]]
    assert fields == ["state", "concurrency", "timeout", "overall_timeout", "poll_interval", "lease_duration"]
    assert err.value.msg.endswith("(and 5 more problems, listed in errors)")


def test_not_given_means_the_default_and_numeric_strings_are_numbers():
    options = Options(concurrency=None, timeout=None, lease_duration="30", poll_interval="0.25")
    got = (options.concurrency, options.timeout, options.overall_timeout, options.poll_interval, options.lease_duration)
    assert got == (4, 600.0, 3600.0, 0.25, 30)
