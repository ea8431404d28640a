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


# The Kubernetes fields named `key` that name a taint, a label or a key of a ConfigMap/Secret are shown (issue 15:
# the default `key` hid every toleration in a diff); a `key` that holds a value stays hidden.
K8S_VALUES = {
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute", "tolerationSeconds": 30}],
    "daemonset": {"nodeTolerations": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
    "env": [{"name": "DB_HOST", "valueFrom": {"configMapKeyRef": {"name": "db", "key": "host"}}},
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password", "optional": False}}}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                              "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}}}]}},
    "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "app.yaml", "path": "app.yaml", "mode": 420}]}}],
}


def test_kubernetes_key_fields_are_shown_by_the_default_rule():
    sensitive = Sensitive()
    assert sensitive.redact(K8S_VALUES) == K8S_VALUES
    assert sensitive.secret_strings(K8S_VALUES) == set()
    before, after = sensitive.redact_pair(K8S_VALUES, dict(K8S_VALUES, tolerations=[{"key": "other", "operator": "Exists"}]))
    assert before == K8S_VALUES and after["tolerations"] == [{"key": "other", "operator": "Exists"}]


@pytest.mark.parametrize("values", [
    {"key": "sk-live-0123456789"},
    {"auth": {"key": "sk-live-0123456789"}},
    {"openai": {"name": "prod", "key": "sk-live-0123456789"}},  # {name, key} outside a *KeyRef: a credential, not a reference
    {"tls": {"key": "sk-live-0123456789", "cert": "c"}},
    {"auth": {"key": "sk-live-0123456789", "operator": "x", "endpoint": "https://api"}},  # a key not alone with a toleration's fields
    {"signing": {"privateKey": "sk-live-0123456789"}},
    {"apiKey": "sk-live-0123456789"},
    {"API_KEY": "sk-live-0123456789"},
    {"tolerations": [{"key": {"nested": "sk-live-0123456789"}, "operator": "Exists"}]},  # only a string names a field
])
def test_a_key_that_holds_a_value_is_still_hidden(values):
    sensitive = Sensitive()
    assert "sk-live-0123456789" not in repr(sensitive.redact(values))
    assert "sk-live-0123456789" not in repr(sensitive.redact_pair(values, values))
    assert "sk-live-0123456789" in sensitive.secret_strings(values)


def test_a_dotted_path_hides_a_kubernetes_key_field_anyway():
    sensitive = Sensitive(["tolerations.key"])
    assert sensitive.redact({"tolerations": [{"key": "team-a", "operator": "Exists"}]}) == {"tolerations": [{"key": HIDDEN, "operator": "Exists"}]}
    assert Sensitive(["topologyKey"]).is_sensitive(("podAffinityTerm", "topologyKey")), "an explicit name is an explicit name"


# issue 35: credentials, passwd, auth and connection strings are secret by default; URLs with userinfo are masked by value.
@pytest.mark.parametrize("key", ["credentials", "awsCredentials", "gcp_credentials", "passwd", "dbPasswd", "DB_PASSWD", "auth", "basicAuth",
                                 "proxy_auth", "x-auth", "dsn", "sentryDsn", "DATABASE_DSN", "connectionString", "dbConnectionString",
                                 "CONNECTION_STRING", "connection_string", "DBPassword"])
def test_new_default_names_match_at_word_boundaries(key):
    assert Sensitive().is_sensitive(("a", key), {key: "s3cr3t-value"})


@pytest.mark.parametrize("key", ["author", "authors", "oauth", "authority", "credentialsFile", "credentialsSecretName", "dsnFile", "connection",
                                 "passwdFile", "url", "uri"])
def test_new_default_names_do_not_catch_other_words(key):
    assert not Sensitive().is_sensitive(("a", key), {key: "visible"})


def test_auth_hides_a_credential_string_not_a_settings_block():
    values = {"auth": {"enabled": True, "existingSecret": "", "password": "pw-123456", "database": "app"},
              "auths": {"registry.example": {"auth": "dXNlcjpwYXNz"}}, "proxy": {"auth": "user:pass"}}
    assert Sensitive().redact(values) == {
        "auth": {"enabled": True, "existingSecret": HIDDEN, "password": HIDDEN, "database": "app"},
        "auths": {"registry.example": {"auth": HIDDEN}}, "proxy": {"auth": HIDDEN}}
    assert Sensitive().secret_strings(values) == {"pw-123456", "dXNlcjpwYXNz", "user:pass"}


@pytest.mark.parametrize("text,shown", [
    ("postgres://app:pw-123456@db:5432/x", "postgres://app:<hidden>@db:5432/x"),
    ("https://ghp_0123456789@github.com/org/repo.git", "https://<hidden>@github.com/org/repo.git"),
    ("--db=mysql://root:pw-123456@10.0.0.1/app --cache=redis://:pw-654321@cache:6379", "--db=mysql://root:<hidden>@10.0.0.1/app "
     "--cache=redis://:<hidden>@cache:6379"),
    ("https://example.com/@user/path", "https://example.com/@user/path"),
    ("admin@example.com", "admin@example.com"),
])
def test_urls_with_userinfo_are_masked_by_value_under_any_key(text, shown):
    values = {"database_url": text, "backend": {"uri": text}, "mirrors": [text], "webhookUrl": text}
    redacted = Sensitive().redact(values)
    assert redacted == {"database_url": shown, "backend": {"uri": shown}, "mirrors": [shown], "webhookUrl": shown}
    secrets = Sensitive().secret_strings(values)
    assert all(s not in shown for s in secrets) and ("pw-123456" in secrets or "ghp_0123456789" in secrets) == (shown != text)


def test_a_changed_url_password_is_marked_changed_in_a_diff():
    before, after = Sensitive().redact_pair({"url": "https://u:old-pass@h/x"}, {"url": "https://u:new-pass@h/x"})
    assert before == {"url": "https://u:<hidden>@h/x"} and after == {"url": "https://u:<changed>@h/x"}
    assert Sensitive().redact_pair({"url": "https://u:p-1234@h/x"}, {"url": "https://u:p-1234@h/y"}) == (
        {"url": "https://u:<hidden>@h/x"}, {"url": "https://u:<hidden>@h/y"})


def test_a_flag_under_a_sensitive_name_is_shown():
    # the real AICR catalog has serviceAccount.automountServiceAccountToken: true - no secret, and not worth <hidden>
    values = {"serviceAccount": {"automountServiceAccountToken": True}, "token": None, "grafana": {"adminPassword": "admin"}}
    assert Sensitive().redact(values) == {"serviceAccount": {"automountServiceAccountToken": True}, "token": None,
                                          "grafana": {"adminPassword": HIDDEN}}
    assert Sensitive().redact_pair({"token": True}, {"token": "now-a-s3cret"}) == ({"token": HIDDEN}, {"token": CHANGED})
