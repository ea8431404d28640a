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
