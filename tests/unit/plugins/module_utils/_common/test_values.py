"""The two values merges (``_common.values``): null deletes, null kept; neither changes its arguments."""

from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes, merge_null_kept


def test_merge_values_null_rules():
    dst = {"a": {"b": 1, "c": 2}, "d": 1}
    dst = merge_null_deletes(dst, {"a": {"b": None}, "d": None, "e": {"f": None}})
    assert dst == {"a": {"c": 2}, "e": {"f": None}}


def test_deep_merge_null_deletes():
    assert merge_null_deletes({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"c": None, "e": 3}, "d": [2]}) == {"a": {"b": 1, "e": 3}, "d": [2]}


def test_null_kept_and_arguments_untouched():
    base, override = {"a": {"b": 1}, "k": 1}, {"a": {"b": None, "c": 2}, "k": None}
    assert merge_null_kept(base, override) == {"a": {"b": None, "c": 2}, "k": None}
    assert merge_null_deletes(base, override) == {"a": {"c": 2}}
    assert base == {"a": {"b": 1}, "k": 1} and override == {"a": {"b": None, "c": 2}, "k": None}
