"""Which values are secret (key names at word boundaries, dotted paths), and how a diff shows them."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import CHANGED, HIDDEN, Sensitive


@pytest.mark.parametrize("key", ["password", "PASSWORD", "adminPassword", "db_password", "db-password", "token", "apiKey", "API_KEY",
                                 "openaiApiKey", "APIKEY", "key", "clientSecret", "existingSecret"])
def test_default_names_match_at_word_boundaries(key):
    assert Sensitive().is_sensitive(("a", key))


@pytest.mark.parametrize("key", ["monkey", "tokenFile", "secretName", "passwordFile", "replicas", "keyboard", "HOTKEY"])
def test_other_keys_are_not_secret(key):
    assert not Sensitive().is_sensitive(("a", key))


def test_dotted_paths_and_wildcards():
    sensitive = Sensitive(["auth.users.*.credential"])
    assert sensitive.is_sensitive(("auth", "users", "alice", "credential"))
    assert not sensitive.is_sensitive(("other", "users", "alice", "credential"))
    assert not sensitive.is_sensitive(("auth", "users", "alice", "password")), "the given list replaces the defaults"


def test_redact_pair_hides_unchanged_and_marks_changed_secrets_everywhere_below():
    before = {"a": 1, "db": {"password": "p1", "nested": [{"token": "t1"}]}, "auth": {"secret": {"deep": "s"}}, "gone": {"apiKey": "g"}}
    after = {"a": 2, "db": {"password": "p2", "nested": [{"token": "t1"}, {"token": "t3"}]}, "auth": {"secret": {"deep": "s"}}, "new": {"key": "n"}}
    b, a = Sensitive().redact_pair(before, after)
    assert b == {"a": 1, "db": {"password": HIDDEN, "nested": [{"token": HIDDEN}]}, "auth": {"secret": HIDDEN}, "gone": {"apiKey": HIDDEN}}
    assert a == {"a": 2, "db": {"password": CHANGED, "nested": [{"token": HIDDEN}, {"token": HIDDEN}]}, "auth": {"secret": HIDDEN},
                 "new": {"key": HIDDEN}}
    assert Sensitive().redact_pair(None, {"password": "x"}) == (None, {"password": HIDDEN})


def test_secret_strings_for_no_log_skip_short_and_boolean_leaves():
    found = Sensitive().secret_strings({"db": {"password": "longenough", "token": "abc"}, "auth": {"secret": {"x": "s3cr3t!", "on": True}},
                                        "plain": "visible-value"})
    assert found == {"longenough", "s3cr3t!"}


def test_rule_problems_name_path_and_rule_never_the_value():
    schema = {"type": "object", "required": ["name"], "additionalProperties": False,
              "properties": {"replicas": {"type": "integer", "minimum": 1}, "mode": {"enum": ["a", "b"]}, "name": {"type": "string"}}}
    problems = validation.rule_problems(schema, {"replicas": 0, "mode": "TOPSECRET-mode", "extraSecret": "TOPSECRET-extra"})
    assert problems == ["values.(root): violates additionalProperties (not allowed here: extraSecret, mode, replicas)",
                        "values.(root): violates required: name",
                        "values.mode: violates enum (one of a, b)",
                        "values.replicas: violates minimum 1"]
    assert "TOPSECRET" not in repr(problems)
