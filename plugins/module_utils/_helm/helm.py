# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Helm, as a CLI run with argv lists (helm 3.17+ and helm 4): :class:`HelmRunner`.

Over 500 lines: every helm command the collection runs (upgrade, early start, pull, rollback, uninstall, template) is built
and run by this one runner, with the version probe and the flag differences between helm 3 and 4 they share.

- charts are given to helm as ``mirrors.chart_source`` makes them (``--repo <url>``, ``oci://...``, a local path), with
  ``repository_mirrors`` applied;
- the *release digest* (``component.release_digest``: chart, upstream repository, version and values) is recorded as the
  helm release label ``aicr.io/digest`` (``helm upgrade --labels``, helm >= 3.13 and helm 4; helm stores release labels
  as labels of the release Secret), so an unchanged release is recognised from one Secret list, without running helm
  (``storage``); the release helm installed is read from its own answer (``--output json``).

Flag differences handled here: helm 3 ``--atomic`` is helm 4 ``--rollback-on-failure``;
neither is used by default because readiness is observed by the engine, not by helm
(helm 3 without ``--wait`` and helm 4 with its default ``--wait=hookOnly`` return once the
objects are created).

helm's environment is built, not inherited (:func:`helm_environment`). Chart repository credentials reach helm only
through private files (``_helm.repositories``), never argv. Every helm child is registered while it runs
(``children``), so SIGTERM (``_common.cancel``) stops them all, also those started from the scheduler's worker threads.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re
import shutil
import subprocess
import tarfile
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, cancel, jsoncache
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import chartfetch, children, helmretry, storage
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos

HELM_SOFT_MEMORY_LIMIT = "256MiB"
VERSION_CACHE_FILE = "helm-versions.json"
# Kubernetes 1.27 made server-side field validation GA and always on: from there helm's client-side "OpenAPI
# validation" (kubectl's ParamVerifyingSchema) only downloads the OpenAPI v3 document of each object's group-version to
# confirm the server validates fields itself, and then validates nothing on the client (see HelmRunner).
SERVER_FIELD_VALIDATION_SINCE = (1, 27)


def server_validates_fields(server_version):
    """Whether an API server of ``(major, minor)`` ``server_version`` (None: unknown) validates fields itself."""
    return server_version is not None and tuple(server_version) >= SERVER_FIELD_VALIDATION_SINCE


def chart_schema_and_defaults(path):
    """``(values.schema.json or None, values.yaml text or "")`` of a chart archive or directory (top level only), each
    file read within ``_common.bounded``'s limits (a huge member or archive stream is refused, never read whole)."""
    lim = bounded.limits()
    texts = {}
    if os.path.isdir(path):
        for name in ("values.schema.json", "values.yaml"):
            full = os.path.join(path, name)
            if os.path.isfile(full):
                with open(full, "rb") as handle:
                    texts[name] = bounded.read_bounded(handle, "chart %s: %s" % (path, name), lim).decode("utf-8", "replace")
    else:
        try:
            files = bounded.read_tar(path, "chart archive %s" % path, _top_level_values, lim)
        except (tarfile.TarError, OSError) as exc:
            raise AicrError("chart: cannot read the chart archive %s (%s)" % (path, exc))
        for name, data in files.items():
            texts[name.split("/")[1]] = data.decode("utf-8", "replace")
    schema_text, values_text = texts.get("values.schema.json"), texts.get("values.yaml", "")
    schema = None
    if schema_text:
        try:
            schema = bounded.load_json(schema_text, "chart %s: values.schema.json" % path, lim)
        except ValueError as exc:
            raise AicrError("chart: values.schema.json of %s is not valid JSON (%s)" % (path, exc))
    return schema, values_text


def _top_level_values(name):
    parts = name.split("/")
    return len(parts) == 2 and parts[1] in ("values.schema.json", "values.yaml")


# helm settings that could send it to another cluster, identity, namespace or release store than the Python client's
# (HELM_KUBEAPISERVER, HELM_KUBETOKEN, HELM_KUBECAFILE, HELM_KUBEASUSER, HELM_KUBEASGROUPS, HELM_KUBEINSECURE_SKIP_TLS_VERIFY,
# HELM_KUBETLS_SERVER_NAME, HELM_KUBECONTEXT, HELM_NAMESPACE, HELM_DRIVER, HELM_DRIVER_SQL_CONNECTION_STRING...), or load
# plugins, repositories and registry logins from someone else's home: every HELM_* variable is dropped, as is KUBECONFIG.
HELM_DRIVER = "secret"


def helm_environment(environ, home=None, kubeconfig_path=None, files=None):
    """The environment helm runs with: ``environ`` without any ``HELM_*`` variable nor ``KUBECONFIG``, then what the
    collection decides: the secret storage driver (the one release store ``storage.read_release`` reads), helm's private
    homes under ``home``, and ``KUBECONFIG`` only when the Python client read a list of kubeconfig files
    (``kubeconfig_path`` with ``os.pathsep``; a single file is given as ``--kubeconfig``). ``files``: the private
    repository and registry configuration of ``repository_credentials`` (``HELM_REPOSITORY_CONFIG``...).

    Everything else is inherited, as the Python client inherits it: PATH, proxies, CA bundle variables, and what an
    exec credential plugin of the kubeconfig reads (the Python client runs that plugin with this process's environment).
    """
    env = dict((key, value) for key, value in environ.items() if not key.upper().startswith("HELM_") and key.upper() != "KUBECONFIG")
    env["HELM_DRIVER"] = HELM_DRIVER
    if home:
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"), ("HELM_DATA_HOME", "data")):
            env[var] = os.path.join(home, sub)
    if kubeconfig_path and os.pathsep in kubeconfig_path:
        env["KUBECONFIG"] = kubeconfig_path
    env.update(files or {})
    if "GOGC" not in env and "GOMEMLIMIT" not in env:
        # A helm process lives for a fraction of a second: most of its garbage collection is wasted work.
        # With GOGC=off and a soft GOMEMLIMIT the Go runtime collects only when the heap nears the limit
        # (measured: 13 % less time per install with 4 installs on 2 cores; rendering kube-prometheus-stack
        # peaks at 124 MB). An environment that sets either keeps its own choice.
        env["GOGC"] = "off"
        env["GOMEMLIMIT"] = HELM_SOFT_MEMORY_LIMIT
    return env


class Revision(int):
    """A release revision as helm reports it, with the release helm printed (``release``: a dict, or None)."""

    def __new__(cls, value, release=None):
        revision = int.__new__(cls, value)
        revision.release = release
        return revision


def _revision(out):
    """The :class:`Revision` of helm's ``--output json`` answer (revision 0, no release, when it cannot be read)."""
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    answer = answer if isinstance(answer, dict) else None
    return Revision(int((answer or {}).get("version") or 0), answer)


def _whole_seconds(remaining):
    """helm's ``--timeout`` for ``remaining`` seconds (None: none): whole seconds, rounded up, at least 1."""
    return None if remaining is None else max(1, int(math.ceil(remaining)))


class EarlyUpgrade(object):
    """A ``helm upgrade --install`` started by :meth:`HelmRunner.start_upgrade`, waiting at its gate. ``plain``: the argv of
    the same upgrade without its gate, for a retry after the API server did not answer."""

    def __init__(self, release, proc, gates, gate, what, plain=None, labels=None, namespace=None):
        self.release, self.proc, self.gates, self.gate, self.what = release, proc, gates, gate, what
        self.plain, self.labels, self.namespace = plain, labels, namespace


class _Completed(object):
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


class HelmRunner(object):
    """Runs one helm binary against one cluster.

    ``repository_credentials`` (the module option) are written into ``credentials_dir`` (private to the run; the caller
    removes it) when helm first runs.

    ``fetch_charts``: charts of HTTP(S) repositories are fetched without helm (``chartfetch.ChartFetcher``: one index per
    repository per run, each archive checked against the index's digest), kept in ``chart_cache_dir`` when given
    (``chartfetch.ChartCache``); :meth:`pull` falls back to ``helm pull`` for everything else.
    """

    def __init__(self, binary="helm", kubeconfig_path=None, context=None, home=None, runner=None, version_cache_dir=None,
                 repository_credentials=None, credentials_dir=None, fetch_charts=False, chart_cache_dir=None):
        self.binary = binary or "helm"
        self.version_cache_dir = version_cache_dir
        self.kubeconfig_path = kubeconfig_path
        self.context = context
        self.home = home
        self._run = runner
        self.repositories = repos.Repositories(repos.normalize_credentials(repository_credentials), credentials_dir or os.path.join(home or ".", "auth"))
        self.fetcher = chartfetch.ChartFetcher(self.repositories, cache=chartfetch.ChartCache(chart_cache_dir) if chart_cache_dir else None) \
            if fetch_charts else None
        # The server validates fields (SERVER_FIELD_VALIDATION_SINCE): helm is told --disable-openapi-validation, which
        # skips only the OpenAPI download and parse (about 30 ms of CPU per helm, after its gate opens) - the same objects
        # reach the same API server, and what it refuses or warns about is the same (tested on the lab, helm 3 and 4).
        self.server_validates_fields = False
        self._major = None
        self._probe = None
        self._probe_error = None
        self.calls = []
        # flags every install, upgrade and rollback carries (gated_release's options declared with a helm flag, such as
        # --history-max: ``_release.spec.helm_flags``)
        self.release_flags = []
        # Retries of helm calls the API server did not answer (``helmretry``), within the call's deadline.
        # ``release_client``: the run's client (lease-guarded), to clear a pending revision our own failed helm left; None: such a
        # revision fails the retry as any pending one does. ``retried``: (what, why) of each retry, for the run's warnings.
        self.release_client = None
        self.clock = time.monotonic
        self.sleep = cancel.pause
        self.retried = []
        self.retry_lock = threading.Lock()

    @property
    def warnings(self):
        """What the run should warn about (TLS verification turned off for a repository; helm calls retried because the
        API server did not answer)."""
        return list(self.repositories.warnings) + helmretry.warnings(self.retried)

    def _retrying(self, attempt, deadline, what, release=None, namespace=None, labels=None, gone_ok=False):
        """``attempt(remaining)`` run again while the API server does not answer, until ``deadline`` (``helmretry.retrying``)."""
        return helmretry.retrying(self, attempt, deadline, what, release=release, namespace=namespace, labels=labels, gone_ok=gone_ok,
                                  reader=storage.read_release)

    def _env(self):
        """helm's environment, built rather than inherited (see :func:`helm_environment`)."""
        return helm_environment(os.environ, home=self.home, kubeconfig_path=self.kubeconfig_path, files=self.repositories.env())

    def _global(self):
        argv = []
        if self.kubeconfig_path and os.pathsep not in self.kubeconfig_path:
            argv += ["--kubeconfig", self.kubeconfig_path]
        if self.context:
            argv += ["--kube-context", self.context]
        return argv

    def run(self, argv, timeout=None, what="helm"):
        full = [self.binary] + argv
        self.calls.append(list(argv))
        try:
            if self._run is None:
                proc = _Completed(*children.run_child(full, self._env(), timeout, what))
            else:
                proc = self._run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._env(), timeout=timeout, check=False)
        except OSError as exc:
            raise self._cannot_run(exc)
        except subprocess.TimeoutExpired:
            raise AicrError("%s: helm did not finish within %ss" % (what, int(timeout or 0)))
        return self._outcome(proc, what)

    def _cannot_run(self, exc):
        return AicrError("helm_binary: cannot run %s (%s); install helm 3.17+ or 4, or set helm_binary" % (self.binary, exc), field="helm_binary")

    def _outcome(self, proc, what):
        """helm's stdout, or the AicrError its failure is."""
        stdout = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else (proc.stdout or "")
        stderr = proc.stderr.decode("utf-8", "replace") if isinstance(proc.stderr, bytes) else (proc.stderr or "")
        if proc.returncode != 0:
            if cancel.requested():
                raise cancel.Cancelled("cancelled (SIGTERM): %s stopped" % what, cancelled=True)
            stderr = self.repositories.redact(stderr)
            lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
            starts = [i for i, line in enumerate(lines) if line.startswith("Error")]
            if starts:
                reason = " ".join(lines[starts[-1]:starts[-1] + 4])  # helm puts multi-error details on the next lines
            else:
                reason = lines[-1] if lines else "exit code %s" % proc.returncode
            error = AicrError("%s failed: %s" % (what, reason[:500]), stderr=stderr[-2000:])
            error.helm_output = self.repositories.redact(stdout[-2000:])  # `helm repo update` says why on stdout
            raise error
        return stdout

    @property
    def supports_early_start(self):
        """Whether :meth:`start_upgrade` can be used (not with an injected runner, which runs a call to its end)."""
        return self._run is None

    def start_upgrade(self, release, namespace, chart_path, values, labels, gates, gate, extra_flags=None, atomic=False,
                      timeout=None, workdir=None):
        """Start ``helm upgrade --install`` of a local chart now, held at ``gate`` of ``gates`` (``_release.gate``) before it
        writes anything; :meth:`finish_upgrade` opens the gate and returns what :meth:`upgrade` would."""
        values_file = self._values_file(workdir, namespace, release, values)
        argv = self.upgrade_argv(release, namespace, chart_path, None, None, values_file, labels,
                                 list(extra_flags or []) + gates.helm_flags(gate), atomic, timeout)
        self.calls.append(list(argv))
        what = "helm upgrade --install %s" % release

        def plain(remaining):
            return self.upgrade_argv(release, namespace, chart_path, None, None, values_file, labels, extra_flags, atomic, remaining)
        try:
            proc = children.start_child([self.binary] + argv, gates.helm_env(self._env()), what)
        except OSError as exc:
            raise self._cannot_run(exc)
        return EarlyUpgrade(release, proc, gates, gate, what, plain=plain, labels=labels, namespace=namespace)

    def finish_upgrade(self, early, timeout=None):
        """Open the gate of a :meth:`start_upgrade` helm and wait for it; the :class:`Revision` it reports.

        When it failed because the API server did not answer, the same upgrade runs again without a gate (its gate's
        decision is made: it opened) until ``timeout`` minus helm's 30 s grace (the component's deadline)."""
        early.gates.open(early.gate)
        deadline = self.clock() + max(1.0, timeout - 30) if timeout else None
        state = {"first": True}

        def attempt(remaining):
            if state.pop("first", False):
                try:
                    proc = _Completed(*children.collect_child(early.proc, timeout))
                except subprocess.TimeoutExpired:
                    raise AicrError("%s: helm did not finish within %ss" % (early.what, int(timeout or 0)))
                return self._outcome(proc, early.what)
            argv = early.plain(_whole_seconds(remaining))
            self.calls.append(list(argv))
            return self.run(argv, timeout=(remaining + 30) if remaining else None, what=early.what)

        out = self._retrying(attempt, deadline if early.plain else None, early.what, early.release, early.namespace, early.labels)
        cancel.note("%s done" % early.what)
        return _revision(out)

    def abandon_upgrade(self, early, reason):
        """Stop a :meth:`start_upgrade` helm whose gate will not open: its post-renderer fails, helm writes nothing."""
        early.gates.stop(early.gate, reason)
        try:
            children.collect_child(early.proc, children.STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass

    def start_version_probe(self):
        """Read the helm version in a background thread (a process start, ~30 ms), so that the caller can
        survey the cluster meanwhile; :attr:`major` waits for it and raises what it found wrong."""
        if self._major is None and self._probe is None:
            self._probe = threading.Thread(target=self._probe_version, name="helm-version", daemon=True)
            self._probe.start()

    def _probe_version(self):
        try:
            self._read_major()
        except AicrError as exc:
            self._probe_error = exc

    @property
    def major(self):
        """helm's major version (3 or 4); AicrError when helm cannot be run or is older than 3.13."""
        if self._probe is not None:
            self._probe.join()
            self._probe = None
            if self._probe_error is not None:
                raise self._probe_error
        if self._major is None:
            self._read_major()
        return self._major

    def _binary_identity(self):
        """``path|size|mtime|inode`` of the helm executable (None when it cannot be found): what the version cache is keyed on."""
        path = self.binary if os.sep in self.binary else shutil.which(self.binary)
        try:
            real = os.path.realpath(path or "")
            info = os.stat(real)
        except (OSError, TypeError):
            return None
        if not os.access(real, os.X_OK):
            return None
        return "%s|%d|%d|%d" % (real, info.st_size, info.st_mtime_ns, info.st_ino)

    def _version_cache_path(self, identity):
        return os.path.join(self.version_cache_dir, VERSION_CACHE_FILE) if self.version_cache_dir and identity else None

    def _cached_version(self, identity):
        path = self._version_cache_path(identity)
        known = jsoncache.load(path) if path else None
        return known.get(identity) if isinstance(known, dict) else None

    def _remember_version(self, identity, version):
        path = self._version_cache_path(identity)
        if path:
            known = jsoncache.load(path)
            known = known if isinstance(known, dict) and len(known) < 50 else {}
            known[identity] = version
            jsoncache.store(path, known)

    def _read_major(self):
        if self._major is None:
            # The same executable (path, size, mtime, inode) is the same helm: no need to start it to ask again.
            identity = self._binary_identity()
            out = self._cached_version(identity)
            if out is None:
                out = self.run(["version", "--template", "{{.Version}}"], timeout=30, what="helm version")
            match = re.match(r"v?(\d+)\.(\d+)", out.strip())
            if not match:
                raise AicrError("helm_binary: cannot read the version of %s (got %r)" % (self.binary, out.strip()[:80]), field="helm_binary")
            self._major = int(match.group(1))
            minor = int(match.group(2))
            if self._major < 3 or (self._major == 3 and minor < 13):
                raise AicrError("helm_binary: %s is helm %s; helm >= 3.13 (release labels) or helm 4 is required" % (self.binary, out.strip()),
                                field="helm_binary")
            self._remember_version(identity, out.strip())

    def upgrade_argv(self, release, namespace, chart_ref, repo, version, values_file, labels, extra_flags=None, atomic=False, timeout=None):
        # no --create-namespace: the engine creates a missing namespace itself (helm 4 would server-side apply it, which
        # needs `patch` on namespaces; a plain create is all the shipped RBAC grants)
        argv = ["upgrade", release, chart_ref, "--install", "--namespace", namespace, "--values", values_file, "--output", "json"]
        if repo:
            argv += ["--repo", repo]
        if version and not chart_ref.startswith("/"):
            argv += ["--version", str(version)]
        if labels:
            argv += ["--labels", ",".join("%s=%s" % (k, v) for k, v in sorted(labels.items()))]
        if timeout:
            argv += ["--timeout", "%ds" % max(1, int(timeout))]
        if atomic:
            argv += ["--atomic"] if self.major < 4 else ["--rollback-on-failure"]
        if self.server_validates_fields:
            argv += ["--disable-openapi-validation"]
        argv += list(self.release_flags) + list(extra_flags or [])
        return argv + self._global()

    def upgrade(self, release, namespace, chart_ref, repo, version, values, labels, extra_flags=None, atomic=False, timeout=None, workdir=None):
        """``helm upgrade --install``; returns the revision helm reports, a :class:`Revision` that carries the release helm
        printed (``--output json``: status, manifest) as ``release`` (None when the answer cannot be read)."""
        values_file = self._values_file(workdir, namespace, release, values)
        where = repo or chart_ref
        chart_ref, repo, extra_flags, cred = self._source(chart_ref, repo, extra_flags, timeout=timeout)
        what = "helm upgrade --install %s" % release

        def attempt(remaining):
            # each attempt's --timeout is what is left of the component's (the first one's: all of it, rounded up as
            # given): helm's own waits end by the same deadline
            argv = self.upgrade_argv(release, namespace, chart_ref, repo, version, values_file, labels, extra_flags, atomic,
                                     _whole_seconds(remaining))
            return self._authenticated(argv, (remaining + 30) if remaining is not None else None, what, where, cred)

        deadline = self.clock() + timeout if timeout else None
        out = self._retrying(attempt, deadline, what, release, namespace, labels)
        cancel.note("helm upgrade --install %s done" % release)
        return _revision(out)

    @staticmethod
    def _values_file(workdir, namespace, release, values):
        values_file = os.path.join(workdir, "%s-%s.values.json" % (namespace, release))
        with open(values_file, "w") as handle:
            json.dump(values or {}, handle)
        return values_file

    def pull(self, chart_ref, repo, version, dest, extra_flags=None, timeout=300, what=None):
        """``helm pull`` into ``dest``; returns the path of the chart archive. ``what``: how a failure names the pull
        (``<what> failed: <helm's reason>``; default ``helm pull <chart_ref>``)."""
        if chart_ref.startswith("/"):
            return chart_ref
        if self.fetcher is not None:
            began = self.clock()
            archive = self.fetcher.fetch(chart_ref, repo, version, extra_flags, dest, timeout=timeout)
            if archive:
                return archive
            timeout = max(1, timeout - (self.clock() - began)) if timeout else timeout  # helm has what is left
        os.makedirs(dest, exist_ok=True)
        where, what = repo or chart_ref, what or "helm pull %s" % chart_ref
        chart_ref, repo, extra_flags, cred = self._source(chart_ref, repo, extra_flags, timeout=timeout)
        argv = ["pull", chart_ref, "--destination", dest]
        if repo:
            argv += ["--repo", repo]
        if version:
            argv += ["--version", str(version)]
        argv += list(extra_flags or [])
        self._authenticated(argv, timeout, what, where, cred)
        archives = [os.path.join(dest, f) for f in os.listdir(dest) if f.endswith(".tgz")]
        if len(archives) != 1:
            raise AicrError("helm pull %s: expected one chart archive in %s, found %d" % (chart_ref, dest, len(archives)))
        return archives[0]

    def _source(self, chart_ref, repo, flags, timeout=None):
        """The chart reference, ``--repo`` and flags helm is given, with ``repository_credentials`` applied: an HTTP
        repository with credentials is a repository *name* of the private repositories.yaml (its index fetched once per
        run with ``helm repo update <name>``), an OCI reference gets its TLS flags (its login is in the registry config)."""
        chart_ref, repo, flags, cred, name = self.repositories.source(chart_ref, repo, flags)
        if name:
            with self.repositories.index_lock(name):
                if name not in self.repositories.indexed:
                    # helm 3 only warns when an update fails (and the pull then finds no index); helm 4 fails by itself
                    argv = ["repo", "update", name] + (["--fail-on-repo-update-fail"] if self.major < 4 else [])
                    self._authenticated(argv, timeout or 300, "helm repo update (%s)" % cred.url, cred.url, cred)
                    self.repositories.indexed.add(name)
        return chart_ref, repo, flags, cred

    def _authenticated(self, argv, timeout, what, where, cred):
        """``run``; an authentication or TLS failure of the repository ``where`` is said in one line naming it."""
        try:
            return self.run(argv, timeout=timeout, what=what)
        except AicrError as exc:
            text = " ".join([exc.msg, str(exc.details.get("stderr") or ""), getattr(exc, "helm_output", "")])
            # only a failure that names the repository's host is the repository's (not the API server's 401 or TLS error)
            reason = repos.explain(text, repos.redact_url(where), cred) if repos.host_of(where) in text else None
            if reason is None:
                raise
            raise AicrError("%s failed: %s" % (what, reason), field="repository_credentials", repository=repos.redact_url(where),
                            stderr=exc.details.get("stderr"))

    def uninstall(self, release, namespace, timeout=None):
        """``helm uninstall``, retried within ``timeout`` while the API server does not answer (a retry that finds the
        release gone: the attempt whose answer was lost removed it)."""
        what = "helm uninstall %s" % release

        def attempt(remaining):
            argv = ["uninstall", release, "--namespace", namespace]
            if remaining is not None:
                argv += ["--timeout", "%ds" % _whole_seconds(remaining)]
            return self.run(argv + self._global(), timeout=(remaining + 30) if remaining is not None else None, what=what)

        self._retrying(attempt, self.clock() + timeout if timeout else None, what, gone_ok=True)
        cancel.note("helm uninstall %s done" % release)

    @staticmethod
    def rollback_argv(release, namespace, revision, timeout=None):
        """The argv of ``helm rollback`` (helm 3 and 4 alike; without the global flags)."""
        argv = ["rollback", release, str(int(revision)), "--namespace", namespace]
        if timeout is not None:
            argv += ["--timeout", "%ds" % max(1, int(timeout))]
        return argv

    def rollback(self, release, namespace, revision, timeout=None):
        """``helm rollback <release> <revision>`` (helm records the rollback as a new revision), retried within ``timeout``
        while the API server does not answer (a retry rolls back to the same revision again: the same outcome)."""
        what = "helm rollback %s %s" % (release, revision)

        def attempt(remaining):
            argv = self.rollback_argv(release, namespace, revision, _whole_seconds(remaining)) + list(self.release_flags)
            return self.run(argv + self._global(), timeout=(remaining + 30) if remaining is not None else None, what=what)

        self._retrying(attempt, self.clock() + timeout if timeout else None, what)
        cancel.note("helm rollback %s done" % release)

    def template(self, release, chart_dir, namespace, values_file, output_dir, timeout=120):
        argv = ["template", release, chart_dir, "--namespace", namespace, "--values", values_file, "--output-dir", output_dir]
        self.run(argv, timeout=timeout, what="helm template (manifests of %s)" % release)
