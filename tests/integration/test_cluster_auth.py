"""Every way users authenticate to a cluster, through ansible-playbook against the lab's real, TLS-only API server.

Each case rolls out one helm component with gated_release and then reads the API server's audit log: every
request the collection made — its Python client (user agent ``aicr-runtime``) *and* helm — must come from the
identity the case configured. A helm call that silently used other credentials would show up as another user.

* a client-certificate kubeconfig (file), and the same as a dict with inline CA, certificate and key data;
* a bearer token of a ServiceAccount (TokenRequest);
* an exec credential plugin printing an ExecCredential — and one that fails: the task fails naming the
  plugin, and nothing reaches the API server as ``system:anonymous``;
* ``context`` choosing among several contexts (the current one has no rights);
* in-cluster configuration as AWX container groups run (``KUBERNETES_SERVICE_HOST``/``PORT``, the
  service-account token and CA files at their standard path, in a private mount namespace);
* a CA that did not sign the server's certificate, and an expired client certificate: one-line messages.
"""

import base64
import datetime
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from aicr_lab import pki
from aicr_lab.controlplane.cluster import write_kubeconfig

from lab_support import dump, example_catalog

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
RELEASE_ROLES = ["aicr-runtime:release", "aicr-runtime:example-charts", "aicr-runtime:stack"]

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm").exists(), reason="helm not installed (make helm)")]


@pytest.fixture
def service_account(kube):
    """A ServiceAccount bound to the shipped release roles; yields (user name, a fresh token)."""
    name = "aicr-release"
    ns = kube.namespace
    kube.rest.create("/api/v1/namespaces/%s/serviceaccounts" % ns, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    bindings = []
    for role in RELEASE_ROLES:
        binding = "%s-%s" % (ns, role.replace(":", "-"))
        kube.rest.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})
        bindings.append(binding)
    token = kube.rest.create("/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, name),
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    yield "system:serviceaccount:%s:%s" % (ns, name), token["status"]["token"]
    for binding in bindings:
        kube.rest.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s" % binding)


class DirectRun:
    """ansible-playbook run as a plain process (under a wrapper such as ``unshare``): rc, output, the task's result."""

    def __init__(self, process, result_file):
        self.rc = process.returncode
        self.stdout = process.stdout + process.stderr
        self._result = json.loads(result_file.read_text(encoding="utf-8")) if result_file.is_file() else {}

    def result(self, task_name):
        assert task_name == "Roll out" and self._result, self.stdout[-3000:]
        return self._result


def _run_directly(wrapper, extravars, envvars, installed_collection, tmp_path):
    result_file = tmp_path / ("result-%s.json" % uuid.uuid4().hex[:6])
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(dict(extravars, result_file=str(result_file))), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed_collection.parents[2]), ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_NOCOLOR="1", PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    env.update(envvars or {})
    for key in [k for k, v in env.items() if v == ""]:
        del env[key]
    argv = list(wrapper) + [str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                            str(Path(__file__).parent / "playbooks" / "cluster_auth.yml"), "-e", "@%s" % vars_file]
    process = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    return DirectRun(process, result_file)


@pytest.fixture
def rollout(run_playbook, installed_collection, kube, tmp_path, example_repo):
    """Run the one-component rollout with connection settings; returns (run, audit entries of the run)."""
    catalog = example_catalog(tmp_path, kube.namespace)

    def run(envvars=None, wrapper=None, **connection):
        extravars = {"catalog": str(catalog), "helm_binary": str(BIN / "helm"), "mirrors": {EXAMPLE_REPO: example_repo.url},
                     "stack": "auth-%s" % uuid.uuid4().hex[:6], "lease_namespace": kube.namespace}
        extravars.update(connection)
        mark = kube.audit_mark()
        if wrapper:
            result = _run_directly(wrapper, extravars, envvars, installed_collection, tmp_path)
        else:
            result = run_playbook("cluster_auth.yml", extravars=extravars, envvars=envvars)
        entries = [e for e in kube.audit(since=mark) if e["userAgent"].startswith(("aicr-runtime", "Helm", "helm"))
                   or e["user"] == "system:anonymous"]
        return result, entries

    return run


def _by_client(entries):
    """{"python": users, "helm": users} of the audited requests."""
    users = {"python": set(), "helm": set()}
    for entry in entries:
        users["helm" if entry["userAgent"].lower().startswith("helm") else "python"].add(entry["user"])
    return users


def assert_one_identity(result, entries, user):
    assert result.rc == 0, result.stdout[-3000:]
    assert result.result("Roll out")["components"][0]["phase"] == "Ready", dump(result.result("Roll out"))
    users = _by_client(entries)
    assert users == {"python": {user}, "helm": {user}}, users


def _kubeconfig_dict(kube, identity="release"):
    """The identity's kubeconfig with CA, certificate and key inline (``*-data``)."""
    with open(kube.kubeconfig_for(identity), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    cluster = config["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = base64.b64encode(Path(cluster.pop("certificate-authority")).read_bytes()).decode()
    user = config["users"][0]["user"]
    for key in ("client-certificate", "client-key"):
        user[key + "-data"] = base64.b64encode(Path(user.pop(key)).read_bytes()).decode()
    return config


def test_client_certificate_kubeconfig_file(rollout, kube):
    assert_one_identity(*rollout(kubeconfig=kube.kubeconfig_for("release")), user=kube.user("release"))


def test_kubeconfig_as_a_dict_with_inline_ca_and_certificate(rollout, kube):
    assert_one_identity(*rollout(kubeconfig=_kubeconfig_dict(kube)), user=kube.user("release"))


def test_service_account_token(rollout, kube, service_account, tmp_path):
    user, token = service_account
    path = write_kubeconfig(tmp_path / "token.kubeconfig", kube.server, kube.ca_file, {"token": token})
    assert_one_identity(*rollout(kubeconfig=path), user=user)


def _exec_plugin(tmp_path, body):
    script = tmp_path / "credential-plugin"
    script.write_text("#!%s\n%s" % (sys.executable, body), encoding="utf-8")
    script.chmod(0o700)
    return str(script)


def test_exec_credential_plugin(rollout, kube, service_account, tmp_path):
    user, token = service_account
    token_file = tmp_path / "plugin-token"
    token_file.write_text(token, encoding="utf-8")
    plugin = _exec_plugin(tmp_path, "import json, os, sys\n"
                                    "token = open(os.environ['PLUGIN_TOKEN_FILE']).read()\n"
                                    "json.dump({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',\n"
                                    "           'status': {'token': token}}, sys.stdout)\n")
    path = write_kubeconfig(tmp_path / "exec.kubeconfig", kube.server, kube.ca_file, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": plugin, "interactiveMode": "Never",
        "env": [{"name": "PLUGIN_TOKEN_FILE", "value": str(token_file)}]}})
    assert_one_identity(*rollout(kubeconfig=path), user=user)


def test_a_failing_exec_plugin_fails_the_task_naming_the_plugin(rollout, kube, tmp_path):
    plugin = _exec_plugin(tmp_path, "import sys\nsys.stderr.write('token service unavailable\\n')\nsys.exit(3)\n")
    path = write_kubeconfig(tmp_path / "exec.kubeconfig", kube.server, kube.ca_file, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": plugin, "interactiveMode": "Never"}})
    result, entries = rollout(kubeconfig=path)
    assert result.rc != 0
    msg = result.result("Roll out")["msg"]
    assert "exec credential plugin %s failed" % plugin in msg and "\n" not in msg, msg
    assert entries == [], "requests were sent without credentials: %s" % dump(entries)


def _two_context_kubeconfig(kube, path):
    """A kubeconfig file with one context per identity (``nobody`` current, ``release`` selectable); returns its path."""
    contexts = {}
    for identity in ("nobody", "release"):
        with open(kube.kubeconfig_for(identity), encoding="utf-8") as handle:
            contexts[identity] = yaml.safe_load(handle)
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "nobody", "clusters": [], "users": [], "contexts": []}
    for identity, single in contexts.items():
        config["clusters"].append(dict(single["clusters"][0], name=identity))
        config["users"].append(dict(single["users"][0], name=identity))
        config["contexts"].append({"name": identity, "context": {"cluster": identity, "user": identity}})
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def test_context_selects_the_identity(rollout, kube, tmp_path):
    path = _two_context_kubeconfig(kube, tmp_path / "two-contexts.kubeconfig")
    assert_one_identity(*rollout(kubeconfig=path, context="release"), user=kube.user("release"))


# Every variable helm itself reads that could send it to another API server, identity, CA, namespace, context or
# release store than the Python client's, set to something wrong (issue 15, item 4).
WRONG_HELM_ENVIRONMENT = {
    "HELM_KUBEAPISERVER": "https://127.0.0.1:1", "HELM_KUBETOKEN": "not-a-token", "HELM_KUBECAFILE": "/nonexistent/ca.crt",
    "HELM_KUBEASUSER": "system:admin", "HELM_KUBEASGROUPS": "system:masters", "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "true",
    "HELM_KUBETLS_SERVER_NAME": "wrong.example", "HELM_KUBECONTEXT": "no-such-context", "HELM_NAMESPACE": "kube-system",
    "HELM_DRIVER": "configmap", "HELM_DRIVER_SQL_CONNECTION_STRING": "postgres://nowhere", "HELM_CONFIG_HOME": "/nonexistent/config",
    "HELM_REGISTRY_CONFIG": "/nonexistent/registry.json", "HELM_REPOSITORY_CONFIG": "/nonexistent/repositories.yaml",
}


def _release_is_a_secret_in(kube, namespace):
    """The rolled-out release is stored by helm's secret driver in the component's namespace (not as a ConfigMap, not elsewhere)."""
    secrets = kube.rest.get("/api/v1/namespaces/%s/secrets" % namespace, labelSelector="owner=helm")["items"]
    configmaps = kube.rest.get("/api/v1/namespaces/%s/configmaps" % namespace, labelSelector="owner=helm")["items"]
    return bool(secrets) and not configmaps


@pytest.mark.parametrize("source", ["kubeconfig option", "KUBECONFIG variable"])
def test_helm_environment_variables_change_nothing(rollout, kube, source):
    """With every HELM_* variable (and, with the option, KUBECONFIG) set wrong, helm still reaches the Python client's
    cluster as the same identity, installs into the component's namespace and stores the release as a Secret."""
    envvars = dict(WRONG_HELM_ENVIRONMENT)
    if source == "kubeconfig option":
        envvars["KUBECONFIG"] = kube.kubeconfig_for("nobody")
        result, entries = rollout(envvars=envvars, kubeconfig=kube.kubeconfig_for("release"))
    else:
        envvars["KUBECONFIG"] = kube.kubeconfig_for("release")
        result, entries = rollout(envvars=envvars)
    assert_one_identity(result, entries, user=kube.user("release"))
    assert _release_is_a_secret_in(kube, kube.namespace)
    assert not kube.rest.get("/api/v1/namespaces/kube-system/secrets", labelSelector="owner=helm")["items"]


def test_awx_k8s_auth_bearer_token_credential(rollout, kube, service_account):
    """AWX's Kubernetes bearer-token credential injects K8S_AUTH_HOST/API_KEY/SSL_CA_CERT/VERIFY_SSL (as kubernetes.core
    reads them): the Python client and helm both use it, before $KUBECONFIG (here the identity with no rights)."""
    user, token = service_account
    envvars = {"K8S_AUTH_HOST": kube.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_SSL_CA_CERT": kube.ca_file, "K8S_AUTH_VERIFY_SSL": "true",
               "KUBECONFIG": kube.kubeconfig_for("nobody")}
    result, entries = rollout(envvars=envvars)
    assert_one_identity(result, entries, user=user)
    assert token not in result.stdout


def test_awx_k8s_auth_kubeconfig_and_context(rollout, kube, tmp_path):
    """A custom AWX credential type injecting a kubeconfig file (K8S_AUTH_KUBECONFIG) and a context (K8S_AUTH_CONTEXT)."""
    path = _two_context_kubeconfig(kube, tmp_path / "awx.kubeconfig")
    envvars = {"K8S_AUTH_KUBECONFIG": path, "K8S_AUTH_CONTEXT": "release", "KUBECONFIG": kube.kubeconfig_for("nobody")}
    assert_one_identity(*rollout(envvars=envvars), user=kube.user("release"))


def _can_unshare():
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs `unshare --mount` (root) to place service-account files at their standard path")
def test_in_cluster_service_account(rollout, kube, service_account, tmp_path):
    user, token = service_account
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    (secrets / "token").write_text(token, encoding="utf-8")
    shutil.copy(kube.ca_file, str(secrets / "ca.crt"))
    (secrets / "namespace").write_text(kube.namespace, encoding="utf-8")
    home = tmp_path / "home"  # no ~/.kube/config: the collection must fall through to in-cluster
    home.mkdir()
    # a private mount namespace: /run (where /var/run/secrets lives) is a fresh tmpfs for ansible only
    wrapper = ["unshare", "--mount", "sh", "-c",
               'mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && '
               'mount --bind "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"', str(secrets)]
    host, port = "127.0.0.1", kube.server.rsplit(":", 1)[1]
    envvars = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "HOME": str(home), "KUBECONFIG": ""}
    assert_one_identity(*rollout(envvars=envvars, wrapper=wrapper), user=user)


def test_a_ca_that_did_not_sign_the_server_fails_in_one_line(rollout, kube, tmp_path):
    stranger = pki.Authority(tmp_path / "stranger", "ca", "not the lab's CA")
    with open(kube.kubeconfig_for("release"), encoding="utf-8") as handle:
        user = yaml.safe_load(handle)["users"][0]["user"]
    path = write_kubeconfig(tmp_path / "wrong-ca.kubeconfig", kube.server, stranger.cert_path, user)
    result, entries = rollout(kubeconfig=path)
    assert result.rc != 0
    msg = result.result("Roll out")["msg"]
    assert "TLS: certificate verify failed" in msg and "\n" not in msg and len(msg) < 400, msg
    assert entries == []


def test_an_expired_client_certificate_fails_in_one_line(rollout, kube, tmp_path):
    authority = kube.plane.authority
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)
    cert, key = authority.issue("expired-release", kube.user("release"), organizations=("aicr-lab:users",), client=True,
                                not_before=past - datetime.timedelta(days=1), not_after=past)
    path = write_kubeconfig(tmp_path / "expired.kubeconfig", kube.server, kube.ca_file, {"client-certificate": cert, "client-key": key})
    result, _entries = rollout(kubeconfig=path)
    assert result.rc != 0
    msg = result.result("Roll out")["msg"]
    assert "401" in msg and "refused the credentials" in msg and "\n" not in msg, msg
    os.unlink(key)


def _unanswered(run_playbook, kube, kubeconfig, overall_timeout=600):
    extravars = {"kubeconfig": kubeconfig, "target_namespace": kube.namespace, "stack": kube.namespace, "overall_timeout": overall_timeout,
                 "helm_binary": str(BIN / "helm4")}
    return run_playbook("unanswered.yml", extravars=extravars)


def test_an_api_server_that_never_answers_fails_the_task_when_overall_timeout_runs_out(run_playbook, kube):
    """Issue 36: a server that accepted the connection and never answered held the task 154 s, whatever overall_timeout
    said. Through the fault proxy every request of the collection is held (the TLS handshake and the request go through;
    the answer never comes within the test): the task fails at overall_timeout naming it, and nothing was written."""
    mark = kube.audit_mark()
    with kube.fault_proxy() as proxy:
        proxy.add_delay(3600, user_agent="aicr-runtime")
        run = _unanswered(run_playbook, kube, proxy.kubeconfig_for(kube.kubeconfig_for("release")), overall_timeout=5)
        held = [r for r in proxy.requests if r["fault"] == "delay"]
    assert run.rc != 0 and run.failed_tasks == ["Roll out"], run.stdout[-3000:]
    msg = run.result("Roll out")["msg"]
    assert msg.endswith("failed: no answer within overall_timeout (5s)") and "\n" not in msg, msg
    assert len(held) == 1, "one request held, not sent again past the deadline: %s" % held
    assert kube.audit(since=mark, mutating=True, user=kube.user("release")) == []


def test_a_kubeconfig_that_is_not_yaml_fails_naming_the_file(run_playbook, kube, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nusers:\n- name: me\n  user: {token: not-shown\nclusters: [\n", encoding="utf-8")
    run = _unanswered(run_playbook, kube, str(path))
    assert run.rc != 0
    msg = run.result("Roll out")["msg"]
    assert msg.startswith("kubeconfig: %s is not YAML (line " % path) and "ScannerError" not in run.stdout and "not-shown" not in run.stdout, msg
