"""A Helm HTTP chart repository on 127.0.0.1: ``index.yaml`` + ``.tgz`` files, built with the real helm.

Sources (``--charts``) are classified by what they contain:

* a chart directory (``Chart.yaml``) or a directory of chart directories: packaged with ``helm package``;
* ``.tgz`` files, or a directory holding them: served as they are;
* a repository (a directory with ``index.yaml``): its ``.tgz`` files are served and re-indexed;
* a tree of repositories (sub-directories holding ``index.yaml``, like ``charts-repo/http/<slug>/``):
  each sub-directory becomes its own repository at ``<prefix>/<slug>``.

Everything is copied into a private site directory and indexed there with
``helm repo index --url <this server's URL>``, so the sources (e.g. the read-only
``../shared``) are never written to, and the URLs in every ``index.yaml`` point at the
port actually chosen.  A source may be given as ``/PREFIX=DIR`` to mount it at another
URL prefix than ``--url-prefix``.

Like a private repository in production, the server can require HTTP basic authentication
(``auth=(user, password)``: 401 with ``WWW-Authenticate`` otherwise), serve HTTPS
(``tls={"cert": ..., "key": ...}``, e.g. from ``aicr_lab.pki.Authority.issue``) and require a client
certificate signed by a CA (``tls["client_ca"]``).
"""

import base64
import filecmp
import hmac
import http.server
import shutil
import ssl
import tempfile
import threading
from pathlib import Path

import yaml

from aicr_lab.charts.helm import HelmError, find_binary, isolated_env, run_helm


class ChartRepoError(Exception):
    """A source that cannot be served (missing, empty, unpackageable, conflicting)."""


def normalise_prefix(prefix):
    """'' or '/a/b': a leading slash, no trailing one."""
    parts = [p for p in (prefix or "").split("/") if p]
    for part in parts:
        if part in (".", ".."):
            raise ChartRepoError("url prefix %r: '.' and '..' are not allowed" % prefix)
    return "/" + "/".join(parts) if parts else ""


def parse_source(spec, default_prefix=""):
    """'DIR' or '/PREFIX=DIR' -> (prefix, Path)."""
    spec = str(spec)
    if spec.startswith("/") and "=" in spec:
        head, tail = spec.split("=", 1)
        if tail:
            return normalise_prefix(head), Path(tail)
    return normalise_prefix(default_prefix), Path(spec)


def _is_chart_archive(path):
    return path.is_file() and path.name.endswith(".tgz")


def plan_repositories(sources):
    """Map each URL prefix to the charts to serve there: ``{prefix: [("chart"|"tgz", Path)]}``."""
    plan = {}

    def add(prefix, kind, path):
        plan.setdefault(prefix, []).append((kind, path))

    for prefix, path in sources:
        path = Path(path)
        if not path.exists():
            raise ChartRepoError("chart source %s does not exist" % path)
        before = sum(len(v) for v in plan.values())
        if _is_chart_archive(path):
            add(prefix, "tgz", path)
        elif path.is_dir() and (path / "Chart.yaml").is_file():
            add(prefix, "chart", path)
        elif path.is_dir() and (path / "index.yaml").is_file():
            for tgz in sorted(path.glob("*.tgz")):
                add(prefix, "tgz", tgz)
        elif path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_dir() and (child / "index.yaml").is_file():
                    for tgz in sorted(child.glob("*.tgz")):
                        add(prefix + "/" + child.name, "tgz", tgz)
                elif child.is_dir() and (child / "Chart.yaml").is_file():
                    add(prefix, "chart", child)
                elif _is_chart_archive(child):
                    add(prefix, "tgz", child)
        if sum(len(v) for v in plan.values()) == before:
            raise ChartRepoError("chart source %s holds no chart, .tgz, repository or tree of repositories" % path)
    return plan


class Repository:
    """One served repository: its URL prefix, URL and the charts of its index.yaml."""

    def __init__(self, prefix, url, index_path):
        self.prefix = prefix
        self.url = url
        self.index_path = Path(index_path)
        with self.index_path.open() as handle:
            index = yaml.safe_load(handle) or {}
        self.charts = {name: [entry["version"] for entry in entries] for name, entries in sorted((index.get("entries") or {}).items())}

    def __repr__(self):
        return "Repository(%r, %r)" % (self.url, self.charts)


def build_site(plan, site, base_url, helm=None, env=None):
    """Package/copy every chart of ``plan`` under ``site`` and index each repository; return [Repository]."""
    site = Path(site)
    repositories = []
    for prefix in sorted(plan):
        out = site / prefix.lstrip("/") if prefix else site
        out.mkdir(parents=True, exist_ok=True)
        for kind, path in plan[prefix]:
            if kind == "chart":
                try:
                    run_helm(["package", str(path), "--destination", str(out)], helm=helm, env=env)
                except HelmError as exc:
                    raise ChartRepoError("helm package %s failed: %s" % (path, exc.output.strip()[-2000:])) from None
            else:
                target = out / path.name
                if target.exists() and not filecmp.cmp(str(path), str(target), shallow=False):
                    raise ChartRepoError("two different charts named %s for %s" % (path.name, prefix or "/"))
                shutil.copyfile(str(path), str(target))
        url = base_url + prefix
        try:
            run_helm(["repo", "index", str(out), "--url", url], helm=helm, env=env)
        except HelmError as exc:
            raise ChartRepoError("helm repo index %s failed: %s" % (out, exc.output.strip()[-2000:])) from None
        repositories.append(Repository(prefix, url, out / "index.yaml"))
    return repositories


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files of the site; records each request instead of logging to stderr."""

    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map, **{".tgz": "application/gzip", ".yaml": "application/x-yaml"})

    def _authorized(self):
        expected = self.server.auth
        if expected is None:
            return True
        header = self.headers.get("Authorization") or ""
        token = base64.b64encode(("%s:%s" % expected).encode()).decode()
        return hmac.compare_digest(header, "Basic " + token)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if not self._authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="aicr lab charts"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    do_HEAD = do_GET

    def log_request(self, code="-", size="-"):
        status = int(code) if isinstance(code, int) or str(code).isdigit() else code  # HTTPStatus is an int
        self.server.requests.append((self.command, self.path, status))

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, site, auth=None, tls=None):
        self.site = str(site)
        self.requests = []
        self.auth = tuple(auth) if auth else None
        self.tls_errors = []
        super().__init__(address, self._make_handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls["cert"]), str(tls["key"]))
            if tls.get("client_ca"):
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(str(tls["client_ca"]))
            # the handshake happens in the handler thread (first read), so a client without a certificate
            # never blocks the accepting thread
            self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request, client_address):
        import sys  # pylint: disable=import-outside-toplevel
        self.tls_errors.append(str(sys.exc_info()[1]))

    def _make_handler(self, request, client_address, server):
        return _Handler(request, client_address, server, directory=self.site)


class ChartRepoServer:
    """Serve chart sources as Helm repositories; ``url`` is the repository at ``url_prefix``.

    Use ``start()``/``stop()`` or a ``with`` block.  ``repositories`` lists every
    served repository (one per prefix), ``requests`` every (method, path, status).
    """

    def __init__(self, sources, workdir=None, url_prefix="", host="127.0.0.1", port=0, helm=None, auth=None, tls=None):
        self.url_prefix = normalise_prefix(url_prefix)
        self.sources = [parse_source(s, self.url_prefix) if not isinstance(s, tuple) else (normalise_prefix(s[0]), Path(s[1])) for s in sources]
        if not self.sources:
            raise ChartRepoError("no chart source given")
        self.host = host
        self.port = port
        self.auth = auth
        self.tls = tls
        self.helm = helm or find_binary("helm")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else None
        self.repositories = []
        self._server = None
        self._thread = None

    @property
    def base_url(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", self.host, self.port)

    @property
    def url(self):
        return self.base_url + self.url_prefix

    @property
    def requests(self):
        return list(self._server.requests) if self._server else []

    def repository(self, prefix):
        """The served repository at this URL prefix ('/examples', '/charts.jetstack.io', ...)."""
        wanted = normalise_prefix(prefix)
        for repo in self.repositories:
            if repo.prefix == wanted:
                return repo
        raise KeyError("no repository at %r; served: %s" % (wanted, [r.prefix for r in self.repositories]))

    def start(self):
        plan = plan_repositories(self.sources)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="aicr-chart-repo-"))
        site = self.workdir / "site"
        if site.exists():
            shutil.rmtree(str(site))
        site.mkdir(parents=True)
        # Bind first: the index URLs must carry the port actually chosen.
        self._server = _Server((self.host, self.port), site, auth=self.auth, tls=self.tls)
        self.port = self._server.server_address[1]
        try:
            self.repositories = build_site(plan, site, self.base_url, helm=self.helm, env=isolated_env(self.workdir / "helm-home"))
        except BaseException:
            self._server.server_close()
            self._server = None
            raise
        self._thread = threading.Thread(target=self._server.serve_forever, name="aicr-chart-repo", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(str(self.workdir), ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
