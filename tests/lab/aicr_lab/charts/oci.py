"""A local OCI registry for ``oci://`` chart sources: Debian's ``docker-registry`` (CNCF distribution 2.8).

``start_registry(tmp_dir)`` runs ``docker-registry serve CONFIG`` with filesystem storage under
``tmp_dir``, plain HTTP on 127.0.0.1 and no auth; helm talks to it with ``--plain-http``.
The registry cannot bind port 0, so a free port is picked first (and another one tried if
that port was taken in between).  ``push_shared_oci`` pushes the charts of
``../shared/charts-repo/oci`` the way its README describes:
``<oci dir>/<path>/<chart>-<version>.tgz`` -> ``oci://<registry>/<path>/<chart>:<version>``.

Like a private registry in production it can require a login (``auth=(user, password)``: distribution's
``htpasswd`` auth, bcrypt hashes from the PyPI ``bcrypt`` package) and serve TLS
(``tls={"cert", "key", "ca"}``, plus ``"client_ca"`` to require a client certificate).
"""

import base64
import json
import os
import ssl
import shutil
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import yaml

from aicr_lab import guard
from aicr_lab.charts.helm import find_binary, isolated_env, run_helm
from aicr_lab.controlplane.processes import free_port

REGISTRY_BINARY = "docker-registry"
NONCE_HEADER = "X-Aicr-Registry"


class RegistryError(RuntimeError):
    """The registry binary is missing, did not start, or a push failed."""


def find_registry():
    """Path of the distribution registry binary (``$AICR_DOCKER_REGISTRY`` or PATH)."""
    found = os.environ.get("AICR_DOCKER_REGISTRY") or shutil.which(REGISTRY_BINARY) or ("/usr/bin/" + REGISTRY_BINARY)
    if not os.access(found, os.X_OK):
        raise RegistryError("%s not found; run scripts/install-system-deps (apt-get install docker-registry)" % REGISTRY_BINARY)
    return found


def write_htpasswd(path, user, password):
    """An htpasswd file with one bcrypt entry (distribution accepts bcrypt only)."""
    import bcrypt  # pylint: disable=import-outside-toplevel  # only the registry with auth needs it

    Path(path).write_text("%s:%s\n" % (user, bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()))
    return path


def registry_config(storage, host, port, nonce="aicr", htpasswd=None, tls=None):
    """The registry's configuration (distribution's config.yml schema, version 0.1).

    Every response carries ``X-Aicr-Registry: <nonce>`` so that readiness is only
    reported by this very process, not by whatever else answers on the port.
    """
    config = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}, "cache": {"blobdescriptor": "inmemory"}},
        "http": {"addr": "%s:%d" % (host, port), "secret": "aicr-test-registry", "headers": {"X-Content-Type-Options": ["nosniff"], NONCE_HEADER: [nonce]}},
        "health": {"storagedriver": {"enabled": False}},
    }
    if htpasswd:
        config["auth"] = {"htpasswd": {"realm": "aicr-lab-registry", "path": str(htpasswd)}}
    if tls:
        config["http"]["tls"] = {"certificate": str(tls["cert"]), "key": str(tls["key"])}
        if tls.get("client_ca"):
            config["http"]["tls"]["clientcas"] = [str(tls["client_ca"])]
    return config


class Registry:
    """A running registry: ``host`` ('127.0.0.1:PORT'), ``url`` ('oci://127.0.0.1:PORT'), ``stop()``."""

    def __init__(self, process, host, workdir, log_path, auth=None, tls=None):
        self.process = process
        self.host = host
        self.workdir = Path(workdir)
        self.log_path = Path(log_path)
        self.auth = tuple(auth) if auth else None
        self.tls = tls

    @property
    def url(self):
        return "oci://" + self.host

    @property
    def http_url(self):
        return ("https://" if self.tls else "http://") + self.host

    def helm_flags(self):
        """The TLS flags helm needs to talk to this registry (``--plain-http`` without TLS)."""
        if not self.tls:
            return ["--plain-http"]
        flags = ["--ca-file", str(self.tls["ca"])]
        if self.tls.get("client_cert"):
            flags += ["--cert-file", str(self.tls["client_cert"]), "--key-file", str(self.tls["client_key"])]
        return flags

    def _open(self, url):
        request = urllib.request.Request(url)
        if self.auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % self.auth).encode()).decode())
        return urllib.request.urlopen(request, timeout=10, context=_client_context(self.tls))

    def ref(self, path, chart=None, version=None):
        """``oci://HOST/path[/chart][:version]``."""
        ref = "%s/%s" % (self.url, path.strip("/"))
        if chart:
            ref += "/" + chart
        if version:
            ref += ":" + version
        return ref

    def catalog(self):
        """Repositories the registry holds (``GET /v2/_catalog``)."""
        with self._open(self.http_url + "/v2/_catalog?n=1000") as response:
            return json.loads(response.read().decode())["repositories"]

    def tags(self, repository):
        with self._open("%s/v2/%s/tags/list" % (self.http_url, repository)) as response:
            return json.loads(response.read().decode()).get("tags") or []

    def stop(self, timeout=10):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()


def _client_context(tls):
    """An SSL context trusting the registry's CA and presenting the lab's client certificate (None without TLS)."""
    if not tls:
        return None
    context = ssl.create_default_context(cafile=str(tls["ca"]))
    if tls.get("client_cert"):
        context.load_cert_chain(str(tls["client_cert"]), str(tls["client_key"]))
    return context


def _wait_ready(process, url, nonce, log_path, timeout, tls=None):
    """True once this process answers /v2/ (200, or 401 with auth), False when it exited (e.g. the port was taken)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "/v2/", timeout=1, context=_client_context(tls)) as response:
                if response.status == 200 and response.headers.get(NONCE_HEADER) == nonce:
                    return True
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and exc.headers.get(NONCE_HEADER) == nonce:
                return True
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.05)
    process.terminate()
    process.wait(timeout=5)
    raise RegistryError("registry at %s not ready after %ss; log:\n%s" % (url, timeout, Path(log_path).read_text()[-3000:]))


def start_registry(tmp_dir, host="127.0.0.1", port=None, timeout=15, attempts=3, auth=None, tls=None):
    """Start a registry storing under ``tmp_dir``; return a ``Registry`` once ``/v2/`` answers.

    ``auth``: ``(user, password)`` required for every request; ``tls``: ``{"cert", "key", "ca"}`` (serving certificate
    and the CA that signed it) and optionally ``"client_ca"`` (client certificates required) with ``"client_cert"``,
    ``"client_key"`` (the lab's own, for pushes and reads)."""
    guard.check("start an OCI registry in %s" % tmp_dir)
    binary = find_registry()
    workdir = Path(tmp_dir)
    workdir.mkdir(parents=True, exist_ok=True)
    storage = workdir / "storage"
    storage.mkdir(exist_ok=True)
    for _attempt in range(attempts):
        chosen = port or free_port(host)
        config = workdir / "config.yml"
        nonce = uuid.uuid4().hex
        htpasswd = write_htpasswd(workdir / "htpasswd", auth[0], auth[1]) if auth else None
        config.write_text(yaml.safe_dump(registry_config(storage, host, chosen, nonce, htpasswd=htpasswd, tls=tls)))
        log_path = workdir / "registry.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        address = "%s:%d" % (host, chosen)
        if _wait_ready(process, ("https://" if tls else "http://") + address, nonce, log_path, timeout, tls=tls):
            return Registry(process, address, workdir, log_path, auth=auth, tls=tls)
        if port:  # a fixed port that does not work will not work next time either
            break
    raise RegistryError("registry exited at start (exit %s); log:\n%s" % (process.returncode, log_path.read_text()[-3000:]))


def chart_metadata(tgz):
    """(name, version) from the Chart.yaml inside a packaged chart."""
    with tarfile.open(str(tgz), "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) == 2 and parts[1] == "Chart.yaml":
                meta = yaml.safe_load(tar.extractfile(member).read())
                return meta["name"], str(meta["version"])
    raise RegistryError("%s holds no <chart>/Chart.yaml" % tgz)


def push_chart(registry, tgz, path, helm=None, helm_home=None):
    """``helm push TGZ oci://HOST/<path>`` (``--plain-http``, or the registry's TLS flags and login); return the pushed
    ``oci://HOST/<path>/<chart>:<version>``."""
    name, version = chart_metadata(tgz)
    env = isolated_env(helm_home or registry.workdir / "helm-home")
    if registry.auth:
        # what `helm registry login` writes, without putting the password on the lab's own argv either
        token = base64.b64encode(("%s:%s" % registry.auth).encode()).decode()
        fd = os.open(env["HELM_REGISTRY_CONFIG"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump({"auths": {registry.host: {"auth": token}}}, handle)
    # helm 3 speaks plain HTTP to every loopback OCI registry, whatever its TLS flags say: a TLS registry is pushed to with helm 4
    helm = helm or find_binary("helm4" if registry.tls else "helm")
    run_helm(["push", str(tgz), registry.ref(path)] + registry.helm_flags(), helm=helm, env=env)
    return registry.ref(path, name, version)


def push_shared_oci(registry, oci_dir, helm=None):
    """Push every ``<path>/<chart>-<version>.tgz`` under ``oci_dir``; return ``{upstream ref: local ref}``.

    The upstream ref is ``oci://<path>/<chart>:<version>`` (AICR's rule: source + "/" + chart).
    """
    oci_dir = Path(oci_dir)
    pushed = {}
    archives = sorted(oci_dir.rglob("*.tgz"))
    if not archives:
        raise RegistryError("no .tgz under %s" % oci_dir)
    for tgz in archives:
        path = tgz.parent.relative_to(oci_dir).as_posix()
        name, version = chart_metadata(tgz)
        pushed["oci://%s/%s:%s" % (path, name, version)] = push_chart(registry, tgz, path, helm=helm)
    return pushed
