"""Every module that reaches the API server, through its ``main()`` (issue 36):

- against an API server that accepts the connection and never answers (``silent_server``), the task fails in one line
  naming the deadline that ran out - gated_release's ``overall_timeout``, fabric_device's ``timeout``, the API request
  timeout elsewhere - instead of five attempts of 30 s each (154 s whatever the task's timeout);
- a kubeconfig that is not YAML, not a mapping, lacks clusters or contexts, or whose context does not exist fails in
  one line naming ``kubeconfig`` and the file (never ``unexpected ScannerError``), without quoting its secrets.

The pytest timeouts only stop a test that would otherwise hang; nothing is timed.
"""

import re

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube import client as client_mod
from ansible_collections.aicr.runtime.plugins.modules import cluster_facts, crd_publish, fabric_device, gated_release, stack_info, stack_status

from modules_testlib import run_main

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.aicr.io"},
       "spec": {"group": "example.aicr.io", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
RECIPE = {"recipe_name": "silent", "components": [{"name": "a", "type": "Helm", "chart": "a", "repository": "https://charts.example/r",
                                                   "version": "1.0.0", "namespace": "apps", "values": {}, "dependencies": []}]}


FABRIC = {"provider": "fti_cm", "endpoint": "127.0.0.1:9", "tenant_id": "t", "cluster_id": "c", "machine_id": "m-0", "model": "A100", "count": 1,
          "credentials_secret": {"name": "fabric", "namespace": "aicr-system"}}
# module: (its arguments besides kubeconfig, the deadline a request it sends meets)
MODULES = {
    cluster_facts: ({}, "the API request timeout (0.5s)"),
    stack_info: ({}, "the API request timeout (0.5s)"),
    stack_status: ({"name": "silent", "phase": "Pending"}, "the API request timeout (0.5s)"),
    crd_publish: ({"definition": CRD}, "the API request timeout (0.5s)"),
    fabric_device: (dict(FABRIC, timeout=0.5), "timeout (0.5s)"),  # its own timeout bounds each request
    gated_release: ({"recipe": RECIPE, "overall_timeout": 1}, "overall_timeout (1s)"),
}
IDS = [m.__name__.rsplit(".", 1)[-1] for m in MODULES]


def arguments(module, tmp_path, kubeconfig):
    args = dict(MODULES[module][0], kubeconfig=kubeconfig)
    if module is gated_release:  # helm is never reached: the version probe runs in the background, checked before a change
        args.update(helm_binary=str(tmp_path / "no-such-helm"), cache_dir=str(tmp_path / "cache"))
    return args


@pytest.mark.timeout(120)
@pytest.mark.parametrize("module", list(MODULES), ids=IDS)
def test_a_server_that_never_answers_fails_the_task_naming_the_deadline(module, silent_server, tmp_path, capsys, monkeypatch):
    if module is not gated_release:  # its overall_timeout (1 s) governs: its requests keep the default 30 s
        monkeypatch.setattr(client_mod, "REQUEST_TIMEOUT", 0.5)  # what a module without a timeout of its own gives a request
    code, result = run_main(module, capsys, arguments(module, tmp_path, silent_server.kubeconfig(tmp_path / "kubeconfig")))
    assert code == 1 and result["failed"], result
    msg = result["msg"]
    assert re.search(r"failed: no answer within %s\)?$" % re.escape(MODULES[module][1]), msg), msg
    assert "\n" not in msg and "unexpected" not in msg, msg
    assert silent_server.accepted == 1, "one request, never sent again: %d connections" % silent_server.accepted


SECRET = "s3cr3t-token-never-shown"
GOOD = ("apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        "clusters:\n- name: lab\n  cluster: {server: 'https://127.0.0.1:9'}\n"
        "users:\n- name: me\n  user: {token: %s}\n"
        "contexts:\n- name: lab\n  context: {cluster: lab, user: me}\n" % SECRET)
KUBECONFIGS = [
    ("not-yaml", "apiVersion: v1\nusers:\n- name: me\n  user: {token: %s\nclusters: [\n" % SECRET,
     r"kubeconfig: {path} is not YAML \(line \d+, column \d+: .*\)$", "kubeconfig"),
    ("a-list", "- %s\n- two\n" % SECRET, r"kubeconfig: {path} is not a kubeconfig: its top level is a list, not a mapping$", "kubeconfig"),
    ("empty", "", r"kubeconfig: {path} is empty$", "kubeconfig"),
    ("no-clusters", "apiVersion: v1\nkind: Config\nusers:\n- name: me\n  user: {token: %s}\n" % SECRET,
     r"kubeconfig: {path} is not a kubeconfig: it has no clusters and no contexts \(a kubeconfig lists clusters, users and contexts\)$", "kubeconfig"),
    ("no-such-user", GOOD.replace("users:\n- name: me", "users:\n- name: somebody"),
     r"kubeconfig: context lab of {path} names user me, which is not in its users \(somebody\)$", "kubeconfig"),
    ("ghost-context", GOOD, r"kubeconfig: {path} has no context ghost \(its contexts: lab\)$", "context"),
    ("no-server", GOOD.replace("cluster: {server: 'https://127.0.0.1:9'}", "cluster: 'text'"), r"kubeconfig: cluster lab of {path} has no server$",
     "kubeconfig"),
    ("bad-certificate-data", GOOD.replace("{server: 'https://127.0.0.1:9'}", "{server: 'https://127.0.0.1:9', certificate-authority-data: '%s'}" % SECRET),
     r"kubeconfig: {path} could not be loaded by the Kubernetes client \(binascii.Error: a field has the wrong type or value\)$", "kubeconfig"),
]


@pytest.mark.parametrize("module", list(MODULES), ids=IDS)
@pytest.mark.parametrize("case, text, expected, field", KUBECONFIGS, ids=[k[0] for k in KUBECONFIGS])
def test_a_kubeconfig_that_is_not_one_fails_in_one_line_naming_the_file(module, case, text, expected, field, tmp_path, capsys):
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    args = arguments(module, tmp_path, str(path))
    if case == "ghost-context":
        args["context"] = "ghost"
    code, result = run_main(module, capsys, args)
    assert code == 1 and result["failed"], result
    assert re.match(expected.format(path=re.escape(str(path))), result["msg"]), result["msg"]
    assert result.get("field") == field, result
    assert SECRET not in str(result), "a kubeconfig secret in the result"
