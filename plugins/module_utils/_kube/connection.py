# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One way to reach a cluster, shared by every engine and by helm.

The collection only ever knows a kubeconfig (a path, or its parsed content) and an optional
context. Without a kubeconfig, AWX's ``K8S_AUTH_*`` credential variables (:func:`from_k8s_auth`), then
``$KUBECONFIG``, then ``~/.kube/config``, then the in-cluster service account are tried, as kubectl and
kubernetes.core do. :func:`resolve` decides that once;
the Python client (:meth:`Connection.api_client`) and helm (:meth:`Connection.helm_kubeconfig`)
are then given the same cluster and the same identity
(:meth:`Connection.client` wraps the Python client in the collection's :class:`~.client.KubeClient`):

- a kubeconfig file or dict: helm gets that file (a dict is written to a private 0600 file) and
  the same context, so it runs the same exec credential plugin or presents the same certificate;
- in-cluster: helm gets a kubeconfig naming the same API server, CA file and service-account
  token file (client-go re-reads the token file, as the Python client does).

An exec credential plugin that fails is an error naming the plugin, never a silent fallback to
anonymous requests (the Python client logs the failure and goes on without credentials).

A kubeconfig is read first with the collection's bounded YAML loader and checked (:func:`check_kubeconfig`): one that is
not YAML, not a mapping, lacks clusters or contexts, or whose context (given, or its ``current-context``) does not exist or
names a cluster or user it lacks, is one line naming ``kubeconfig`` and the file (never the parser's exception, and never
its content: only names of contexts, clusters and users are quoted).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import first_line as _first_line
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import KubeClient

# The collection's one import of the kubernetes package (every request goes through _kube.client), made at the first
# connection (:func:`kubernetes_package`): importing it costs a module process about 0.5 s, which a run refused before it
# connects (a bad parameter, cluster_facts from a file) does not pay. Whether it is installed is known without importing it.
try:
    from importlib.util import find_spec

    HAS_KUBERNETES = find_spec("kubernetes") is not None
except (ImportError, ValueError):  # pragma: no cover - Python 3 has importlib.util; a broken entry in sys.modules
    HAS_KUBERNETES = False
KUBERNETES_IMPORT_ERROR = None if HAS_KUBERNETES else "ImportError: No module named 'kubernetes'"
_KUBERNETES = []  # (kubernetes.client, kubernetes.config, ConfigException), once imported


def kubernetes_package():
    """``(kubernetes.client, kubernetes.config, ConfigException)``, imported on first use; AicrError when it cannot be."""
    if not _KUBERNETES:
        if not HAS_KUBERNETES:
            raise AicrError("the Python package 'kubernetes' is required to talk to a cluster", exception=KUBERNETES_IMPORT_ERROR)
        try:
            from kubernetes import client as k8s_client  # pylint: disable=import-outside-toplevel
            from kubernetes import config as k8s_config  # pylint: disable=import-outside-toplevel
            from kubernetes.config.config_exception import ConfigException  # pylint: disable=import-outside-toplevel
        except ImportError:
            raise AicrError("the Python package 'kubernetes' is required to talk to a cluster", exception=traceback.format_exc())
        _KUBERNETES[:] = [k8s_client, k8s_config, ConfigException]
    return tuple(_KUBERNETES)


def require_kubernetes(why, field=None):
    """Raise ``AicrError("the Python package 'kubernetes' is required <why>")`` when it is not installed (nothing imported)."""
    deps.require_present("kubernetes", HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR, why, field=field)


# Options every module that talks to a cluster accepts (see doc fragment aicr.runtime.kube).
# ``kubeconfig`` is not no_log as a whole: Ansible would then mask every string of a kubeconfig dict (``v1``, ``Config``,
# user, cluster and context names) wherever it appears in any output ("kind": "********Map"). Only its secrets
# (:func:`kubeconfig_secrets`) are added to the module's no_log values, by ``_entry.module.call_engine``.
KUBE_ARG_SPEC = dict(
    kubeconfig=dict(type="raw", no_log=False),
    context=dict(type="str"),
)

# The secret fields of a kubeconfig user (and of its auth-provider config); an exec plugin's env values are secret too.
_SECRET_USER_FIELDS = ("token", "password", "client-key-data")
_SECRET_PROVIDER_FIELDS = ("id-token", "refresh-token", "access-token", "client-secret")

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Connection(object):
    """Where the cluster is and who the collection is there, resolved once."""

    def __init__(self, configuration, source, kubeconfig=None, context=None, incluster=None):
        self.configuration = configuration
        self.source = source  # "kubeconfig" (path), "kubeconfig-dict", "env" ($KUBECONFIG / ~/.kube/config), "in-cluster"
        self.kubeconfig = kubeconfig
        self.context = context
        self.incluster = incluster or {}

    @property
    def server(self):
        return self.configuration.host

    def api_client(self):
        return kubernetes_package()[0].ApiClient(self.configuration)

    def client(self, **options):
        """The collection's :class:`~.client.KubeClient` for this cluster and identity."""
        return KubeClient(self.api_client(), **options)

    def helm_kubeconfig(self, directory):
        """(kubeconfig path or None, context or None) that make helm reach the same cluster as the same identity.

        ``directory`` is private to the run (files written there are 0600).
        """
        if self.source == "kubeconfig":
            return os.path.expanduser(str(self.kubeconfig)), self.context
        if self.source == "kubeconfig-dict":
            return _write_private(os.path.join(directory, "kubeconfig"), json.dumps(self.kubeconfig)), self.context
        if self.source == "in-cluster":
            config = {
                "apiVersion": "v1", "kind": "Config", "current-context": "in-cluster",
                "clusters": [{"name": "in-cluster", "cluster": {"server": self.incluster["server"],
                                                                "certificate-authority": self.incluster["ca_file"]}}],
                "users": [{"name": "in-cluster", "user": {"tokenFile": self.incluster["token_file"]}}],
                "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "in-cluster"}}],
            }
            return _write_private(os.path.join(directory, "kubeconfig-in-cluster"), json.dumps(config)), None
        # $KUBECONFIG or ~/.kube/config, as the Python client read it (helm's environment has no KUBECONFIG of its own:
        # a list of files is given to helm as KUBECONFIG, one file as --kubeconfig)
        return self.kubeconfig, self.context


def kubeconfig_secrets(kubeconfig):
    """The secret strings of a kubeconfig given as a dict: users' tokens, passwords, client key data, auth-provider
    tokens and client secrets, exec plugins' environment values. A path (or anything else) has none: the file's content
    never enters the module's parameters. Names, servers, CA and certificate data are not secret."""
    found = set()
    if not isinstance(kubeconfig, dict):
        return found
    for entry in kubeconfig.get("users") or []:
        user = (entry or {}).get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        for field in _SECRET_USER_FIELDS:
            if user.get(field):
                found.add(str(user[field]))
        provider = ((user.get("auth-provider") or {}).get("config")) if isinstance(user.get("auth-provider"), dict) else None
        for field in _SECRET_PROVIDER_FIELDS:
            if isinstance(provider, dict) and provider.get(field):
                found.add(str(provider[field]))
        exec_config = user.get("exec") if isinstance(user.get("exec"), dict) else {}
        for env in exec_config.get("env") or []:
            if isinstance(env, dict) and env.get("value"):
                found.add(str(env["value"]))
    return found


def _write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path


def _exec_plugin(kubeconfig, context):
    """The exec block of the user the kubeconfig/context selects (None without one), and the loader."""
    try:
        from kubernetes.config.kube_config import _get_kube_config_loader  # pylint: disable=import-outside-toplevel
        if isinstance(kubeconfig, dict):
            loader = _get_kube_config_loader(config_dict=kubeconfig, active_context=context)
        else:
            loader = _get_kube_config_loader(filename=kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config"),
                                             active_context=context)
        user = loader._user  # pylint: disable=protected-access
        return (user["exec"] if user is not None and "exec" in user else None), loader
    except Exception:  # pylint: disable=broad-except  # a private API of the client: without it, no extra check
        return None, None


def _check_exec_credentials(configuration, kubeconfig, context):
    """Fail, naming the plugin, when the kubeconfig's exec credential plugin gave no credentials."""
    if any(configuration.api_key.values()) or configuration.cert_file:
        return
    exec_config, loader = _exec_plugin(kubeconfig, context)
    if not exec_config:
        return
    command = exec_config.safe_get("command") if hasattr(exec_config, "safe_get") else exec_config.get("command")
    command = command or "?"
    reason = "it printed no token or client certificate"
    try:
        from kubernetes.config.exec_provider import ExecProvider  # pylint: disable=import-outside-toplevel
        base = os.path.dirname(loader._cluster.path) if getattr(loader._cluster, "path", None) else ""  # pylint: disable=protected-access
        ExecProvider(exec_config, base, loader._cluster).run()  # pylint: disable=protected-access
    except Exception as exc:  # pylint: disable=broad-except  # the plugin's own failure is the message
        reason = _first_line(exc) or exc.__class__.__name__
    raise AicrError("kubeconfig: exec credential plugin %s failed: %s" % (command, reason[:300]), field="kubeconfig",
                    plugin=command, context=context)


# AWX's "OpenShift or Kubernetes API Bearer Token" credential type, and its kubeconfig-file custom types, inject these
# (the variables kubernetes.core reads too).
K8S_AUTH_VARIABLES = ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_SSL_CA_CERT", "K8S_AUTH_VERIFY_SSL")
_FALSE = ("0", "false", "no", "off", "n", "f")


def from_k8s_auth(kubeconfig, context, environ):
    """``(kubeconfig, context)`` with AWX's ``K8S_AUTH_*`` credential variables applied, as kubernetes.core does: the module's
    own options first; then ``K8S_AUTH_KUBECONFIG`` / ``K8S_AUTH_CONTEXT``; then, without any kubeconfig, ``K8S_AUTH_HOST``
    with ``K8S_AUTH_API_KEY`` (a bearer token), ``K8S_AUTH_SSL_CA_CERT`` (a CA file) and ``K8S_AUTH_VERIFY_SSL`` become a
    kubeconfig dict, which helm is given as a private 0600 file - so the Python client and helm use the same credential."""
    context = context or environ.get("K8S_AUTH_CONTEXT") or None
    if kubeconfig:
        return kubeconfig, context
    if environ.get("K8S_AUTH_KUBECONFIG"):
        return environ["K8S_AUTH_KUBECONFIG"], context
    host = environ.get("K8S_AUTH_HOST")
    if not host:
        if environ.get("K8S_AUTH_API_KEY"):
            raise AicrError("K8S_AUTH_API_KEY is set without K8S_AUTH_HOST: set the API server's URL too (AWX's Kubernetes credential has both)",
                            field="kubeconfig")
        return None, context
    cluster = {"server": host}
    if str(environ.get("K8S_AUTH_VERIFY_SSL", "true")).strip().lower() in _FALSE:
        cluster["insecure-skip-tls-verify"] = True
    elif environ.get("K8S_AUTH_SSL_CA_CERT"):
        cluster["certificate-authority"] = environ["K8S_AUTH_SSL_CA_CERT"]
    user = {"token": environ["K8S_AUTH_API_KEY"]} if environ.get("K8S_AUTH_API_KEY") else {}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "k8s-auth",
              "clusters": [{"name": "k8s-auth", "cluster": cluster}], "users": [{"name": "k8s-auth", "user": user}],
              "contexts": [{"name": "k8s-auth", "context": {"cluster": "k8s-auth", "user": "k8s-auth"}}]}
    return config, None


def _read_kubeconfig(path):
    """The parsed kubeconfig file ``path`` (bounded YAML), or an AicrError naming it: unreadable, not text, not YAML."""
    try:
        with open(path, "rb") as handle:
            data = bounded.read_bounded(handle, "kubeconfig %s" % path)
    except (IOError, OSError) as exc:
        raise AicrError("kubeconfig: cannot read %s (%s)" % (path, exc.strerror or exc.__class__.__name__), field="kubeconfig")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AicrError("kubeconfig: %s is not a kubeconfig: it is not UTF-8 text" % path, field="kubeconfig")
    deps.require("PyYAML", "to read a kubeconfig", field="kubeconfig")
    try:
        return deps.load(text, "kubeconfig %s" % path)
    except deps.yaml.YAMLError as exc:
        # the parser's own text quotes the offending line (a token, a key): only where it is and what is wrong
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d, column %d: %s)" % (mark.line + 1, mark.column + 1, _first_line(getattr(exc, "problem", "") or "")[:120]) if mark else ""
        raise AicrError("kubeconfig: %s is not YAML%s" % (path, where), field="kubeconfig")


def _merged(configs):
    """Several kubeconfig files (``$KUBECONFIG``) as one, as kubectl merges them: each named entry from the first file
    that has it, the first ``current-context``."""
    merged = {}
    for config in configs:
        if not isinstance(config, dict):
            return config
        for key, value in config.items():
            if key in ("clusters", "users", "contexts") and isinstance(value, list) and isinstance(merged.get(key), list):
                seen = set(e.get("name") for e in merged[key] if isinstance(e, dict))
                merged[key] = merged[key] + [e for e in value if not isinstance(e, dict) or e.get("name") not in seen]
            elif merged.get(key) in (None, "", []):
                merged[key] = value
    return merged


def _kind_of(exc):
    """``binascii.Error``: an exception's class, qualified by its module unless built in."""
    module = exc.__class__.__module__
    return exc.__class__.__name__ if module in ("builtins", "exceptions") else "%s.%s" % (module, exc.__class__.__name__)


def _names(entries):
    shown = [str(e["name"]) for e in entries[:10]]
    return ", ".join(shown) + (", ..." if len(entries) > 10 else "") if shown else "none"


def check_kubeconfig(config, where, context=None):
    """Raise an AicrError naming ``kubeconfig`` and ``where`` (its path) unless ``config`` is a kubeconfig the chosen context
    (``context``, else its ``current-context``) can be used from: a mapping listing clusters and contexts (and users),
    each a named entry, the context among them, and the cluster and user it names. Never quotes anything but names."""
    if config is None:
        raise AicrError("kubeconfig: %s is empty" % where, field="kubeconfig")
    if not isinstance(config, dict):
        raise AicrError("kubeconfig: %s is not a kubeconfig: its top level is a %s, not a mapping" % (where, type(config).__name__), field="kubeconfig")
    lists = {}
    for key in ("clusters", "users", "contexts"):
        entries = config.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries):
            raise AicrError("kubeconfig: %s is not a kubeconfig: its %s is not a list of named entries" % (where, key), field="kubeconfig")
        lists[key] = entries
    missing = [key for key in ("clusters", "contexts") if not lists[key]]
    if missing:
        raise AicrError("kubeconfig: %s is not a kubeconfig: it has no %s (a kubeconfig lists clusters, users and contexts)"
                        % (where, " and no ".join(missing)), field="kubeconfig")
    chosen = context or config.get("current-context")
    if not chosen:
        raise AicrError("kubeconfig: %s has no current-context and no context was given (its contexts: %s)" % (where, _names(lists["contexts"])),
                        field="context")
    found = [e for e in lists["contexts"] if e["name"] == chosen]
    if not found:
        raise AicrError("kubeconfig: %s has no context %s (its contexts: %s)" % (where, chosen, _names(lists["contexts"])),
                        field="context" if context else "kubeconfig")
    selected = found[0].get("context")
    if not isinstance(selected, dict):
        raise AicrError("kubeconfig: context %s of %s is not a mapping" % (chosen, where), field="kubeconfig")
    for key, plural in (("cluster", "clusters"), ("user", "users")):
        name = selected.get(key)
        if (name or key == "cluster") and not any(e["name"] == name for e in lists[plural]):
            raise AicrError("kubeconfig: context %s of %s names %s %s, which is not in its %s (%s)"
                            % (chosen, where, key, name or "none", plural, _names(lists[plural])), field="kubeconfig")
    cluster = [e for e in lists["clusters"] if e["name"] == selected.get("cluster")][0].get("cluster")
    if not isinstance(cluster, dict) or not cluster.get("server"):
        raise AicrError("kubeconfig: cluster %s of %s has no server" % (selected.get("cluster"), where), field="kubeconfig")


def _checked(kubeconfig, context):
    """``kubeconfig`` (a dict, a path, or ``$KUBECONFIG``'s ``a:b`` list) checked before the client reads it."""
    if isinstance(kubeconfig, dict):
        check_kubeconfig(kubeconfig, "the dictionary given", context)
        return
    paths = [p for p in str(kubeconfig).split(os.pathsep) if p]
    existing = [p for p in paths if os.path.isfile(p)] if len(paths) > 1 else paths  # as kubectl, a list may name missing files
    if not existing:
        raise AicrError("kubeconfig: none of the files %s exists" % kubeconfig, field="kubeconfig")
    check_kubeconfig(_merged([_read_kubeconfig(p) for p in existing]), kubeconfig, context)


def resolve(kubeconfig=None, context=None, environ=None):
    """The :class:`Connection` for a kubeconfig (path, dict or None) and context (AWX's ``K8S_AUTH_*`` variables applied:
    :func:`from_k8s_auth`)."""
    kubeconfig, context = from_k8s_auth(kubeconfig, context, os.environ if environ is None else environ)
    k8s_client, k8s_config, config_exception = kubernetes_package()
    configuration = k8s_client.Configuration()
    incluster, source = None, None
    try:
        if isinstance(kubeconfig, dict):
            source = "kubeconfig-dict"
            _checked(kubeconfig, context)
            k8s_config.load_kube_config_from_dict(kubeconfig, context=context, client_configuration=configuration)
        elif kubeconfig:
            source = "kubeconfig"
            path = os.path.expanduser(str(kubeconfig))
            if not os.path.isfile(path):
                raise AicrError("kubeconfig: file %s does not exist" % path, field="kubeconfig")
            kubeconfig = path
            _checked(path, context)
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
        elif os.environ.get("KUBECONFIG") or os.path.isfile(os.path.expanduser("~/.kube/config")):
            source = "env"
            # read now, not when the kubernetes package was imported; helm is given exactly these files
            kubeconfig = os.pathsep.join(os.path.expanduser(p) for p in (os.environ.get("KUBECONFIG") or "~/.kube/config").split(os.pathsep) if p)
            _checked(kubeconfig, context)
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
        else:
            source = "in-cluster"
            k8s_config.load_incluster_config(client_configuration=configuration)
            incluster = {"server": configuration.host, "ca_file": os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"),
                         "token_file": os.path.join(SERVICE_ACCOUNT_DIR, "token")}
    except config_exception as exc:
        # The exception text can quote kubeconfig content; keep only its first line.
        reason = _first_line(exc) or exc.__class__.__name__
        raise AicrError("kubeconfig/context: cannot load cluster configuration (%s)" % reason, field="kubeconfig", context=context)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # a field of the right name but the wrong shape (a cluster that is a string, undecodable certificate data): the
        # exception's text may quote the value, so only its kind
        raise AicrError("kubeconfig: %s could not be loaded by the Kubernetes client (%s: a field has the wrong type or value)"
                        % ("the dictionary given" if source == "kubeconfig-dict" else kubeconfig, _kind_of(exc)), field="kubeconfig")
    if source != "in-cluster":
        _check_exec_credentials(configuration, kubeconfig, context)
    return Connection(configuration, source, kubeconfig=kubeconfig, context=context, incluster=incluster)


def build_api_client(kubeconfig=None, context=None):
    """Return a ``kubernetes.client.ApiClient`` for the given kubeconfig/context (see :func:`resolve`)."""
    return resolve(kubeconfig, context).api_client()


def client_for(kubeconfig=None, context=None, **options):
    """The collection's :class:`~.client.KubeClient` for a kubeconfig (path, dict or None) and context."""
    return resolve(kubeconfig, context).client(**options)
