# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Charts of HTTP(S) repositories fetched without a helm process: one ``index.yaml`` per repository per run, the archive
by its URL, checked against the index's ``digest``, kept in a persistent digest-checked cache (:class:`ChartCache`).

``helm pull`` of a chart in an HTTP repository starts a helm process and downloads the repository's ``index.yaml`` -
per chart. :class:`ChartFetcher` does what helm does for that pull, once per repository: the index is downloaded and
parsed once per run (shared by every chart of that repository, under a lock per repository), the chart version looked
up as helm looks it up (the one entry whose ``version`` is exactly the one asked for), its first URL resolved against the
repository's URL as helm resolves it, and the archive downloaded with the same settings helm would use:

- the ``repository_credentials`` entry of the repository (matched as helm's is, ``_helm.repositories``): its CA
  (``ca_file``: the only CA trusted then, as helm's), client certificate and ``insecure_skip_tls_verify`` for the index
  and the archive; its user name and password (HTTP basic authentication, sent from the start as helm sends it) for the
  index, and for the archive only when it is on the same scheme and host as the repository (helm's
  ``pass_credentials_all: false``), never after a redirect; a weaker transport asked by a mirror is refused as for helm
  (``Repositories.source``);
- without an entry, a mirror's ``insecure_skip_tls_verify``; the proxies of the environment (``HTTPS_PROXY``...) and the
  system's CAs (``SSL_CERT_FILE``...) as helm reads them.

Credentials travel only in request headers: never on a command line, in a file or in a message. The archive's sha256
must be the index's ``digest`` (helm does not check it): a mismatch is refused in one line naming the chart and both
digests, and the archive is neither installed nor cached. The archive is then the one installed (``helm upgrade`` of
the local ``.tgz``).

Whatever this path cannot serve exactly as helm would - an OCI chart (helm's registry client, its logins and token
exchange stay with helm), a version given as a range or not at all, a chart or version the index does not have, an
index without a digest for it, an index or archive past the input limits (``_common.bounded``), any download that fails
(an outage, a 401, a TLS error) - is left to ``helm pull`` (:meth:`ChartFetcher.fetch` returns None), whose answer and
messages are those of before. The failure is remembered for the repository, so the run does not try again per chart.

:class:`ChartCache`: archives by sha256 under ``<cache_dir>/charts/sha256/`` (a directory only this user can write,
gated_release's ``chart_cache``), each written to a temporary file and renamed into place (concurrent runs see a whole
entry or none), read back only when its sha256 is the digest asked for (a corrupt or changed entry is removed and the
archive downloaded again), and kept under ``$AICR_RUNTIME_CHART_CACHE_MAX_MB`` (default 512) by removing the least
recently used entries.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import os
import re
import ssl
import tempfile
import threading
import time
from http.client import HTTPException
from urllib import error as urlerror, parse as urlparse, request as urlrequest

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, cancel, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos

CACHE_MAX_ENV = "AICR_RUNTIME_CHART_CACHE_MAX_MB"
CACHE_MAX_DEFAULT_MB = 512
STALE_PARTIAL_S = 3600  # a temporary file older than this is a crashed writer's: removed when the cache is pruned
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.tgz$")
_CHUNK = 256 * 1024
STALL_S = 30.0  # a connection, or one read, waiting longer than this: the download is left to helm (with the time left)
_TRANSPORT_FLAGS = ("--insecure-skip-tls-verify", "--plain-http")
_FAILURES = (OSError, ValueError, AicrError, HTTPException, ssl.SSLError)


class Unavailable(Exception):
    """This chart is not for the direct path: ``helm pull`` it."""


def cache_max_bytes(environ=None):
    """The chart cache's bound in bytes: ``$AICR_RUNTIME_CHART_CACHE_MAX_MB`` (a positive integer), else 512 MiB."""
    raw = (os.environ if environ is None else environ).get(CACHE_MAX_ENV)
    if raw in (None, ""):
        return CACHE_MAX_DEFAULT_MB * bounded.MIB
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise AicrError("environment variable %s: %r is not allowed; use a positive integer (the chart cache's size in MiB)" % (CACHE_MAX_ENV, raw),
                        field=CACHE_MAX_ENV, value=raw)
    return value * bounded.MIB


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


class ChartCache(object):
    """Chart archives by sha256 in ``directory`` (private to this user; see the module's docstring)."""

    def __init__(self, directory, max_bytes=None):
        self.directory = directory
        self.max_bytes = cache_max_bytes() if max_bytes is None else int(max_bytes)

    def path(self, digest):
        return os.path.join(self.directory, digest + ".tgz")

    def get(self, digest, limit):
        """The archive whose sha256 is ``digest``, or None (missing, unreadable, past ``limit`` bytes, or not that digest:
        such an entry is removed)."""
        path = self.path(digest)
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError:
            return None
        if len(data) > limit or sha256_of(data) != digest:
            self._remove(path)
            return None
        try:
            os.utime(path, None)  # recently used: pruned last
        except OSError:
            pass
        return data

    def put(self, digest, data):
        """Keep ``data`` (whose sha256 is ``digest``) - a temporary file renamed into place - then prune; False when it
        cannot be written (a cache only saves work)."""
        staging = None
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)  # concurrent runs may create it at the same time
            handle, staging = tempfile.mkstemp(dir=self.directory, prefix=".partial-", suffix=".tgz")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(staging, self.path(digest))
        except OSError:
            if staging is not None:
                self._remove(staging)
            return False
        self.prune(keep=digest)
        return True

    def prune(self, keep=None):
        """Remove the least recently used entries until the cache is within its bound (``keep``: never that one), and
        temporary files of writers that crashed."""
        now, entries, total = time.time(), [], 0
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            path = os.path.join(self.directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue  # removed meanwhile by another run
            if name.startswith(".partial-"):
                if now - info.st_mtime > STALE_PARTIAL_S:
                    self._remove(path)
                continue
            entries.append((info.st_mtime, name, info.st_size, path))
            total += info.st_size
        for _mtime, name, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if keep and name == keep + ".tgz":
                continue
            self._remove(path)
            total -= size

    @staticmethod
    def _remove(path):
        try:
            os.unlink(path)
        except OSError:
            pass


class _NoRedirectAuth(urlrequest.HTTPRedirectHandler):
    """Redirects followed as helm's HTTP client follows them, to http(s) only; the ``Authorization`` header is an
    unredirected one (``Request.add_unredirected_header``): never sent after a redirect."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # pylint: disable=too-many-arguments
        if urlparse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urlerror.HTTPError(newurl, code, "redirect to a scheme other than http(s)", headers, fp)
        return urlrequest.HTTPRedirectHandler.redirect_request(self, req, fp, code, msg, headers, newurl)


class _Repository(object):
    """One repository as this run reaches it: its URL, credential, TLS context and parsed index (None: helm's)."""

    def __init__(self, url, cred, insecure):
        self.url, self.cred, self.insecure = url, cred, insecure
        self.entries = None
        self.opener = None


def _context(cred, insecure):
    """The TLS settings helm uses for the repository: the entry's CA alone when given, else the system's; its client
    certificate; no verification only when the entry (or, without one, the mirror) says so."""
    context = ssl.create_default_context(cafile=cred.ca_file if cred is not None and cred.ca_file else None)
    if cred is not None and cred.cert_file:
        context.load_cert_chain(cred.cert_file, cred.key_file)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _opener(context):
    opener = urlrequest.OpenerDirector()
    for handler in (urlrequest.ProxyHandler(), urlrequest.HTTPHandler(), urlrequest.HTTPSHandler(context=context), _NoRedirectAuth(),
                    urlrequest.HTTPDefaultErrorHandler(), urlrequest.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def resolve_reference(base, ref):
    """The URL of a chart as helm resolves an index entry's ``urls[0]`` (absolute as it is, else relative to the
    repository's URL with one trailing slash); None for anything but http(s)."""
    parts = urlparse.urlsplit(ref)
    url = ref if parts.scheme else urlparse.urljoin(base.rstrip("/") + "/", ref)
    return url if urlparse.urlsplit(url).scheme in ("http", "https") else None


def _same_origin(one, other):
    first, second = urlparse.urlsplit(one), urlparse.urlsplit(other)
    return (first.scheme, first.netloc.lower()) == (second.scheme, second.netloc.lower())


class ChartFetcher(object):
    """Charts of HTTP(S) repositories for one run (see the module's docstring); ``cache``: a :class:`ChartCache` or None.

    ``downloads``: how many index files and archives were downloaded, and how many archives came from the cache."""

    def __init__(self, repositories, cache=None, limits=None):
        self.repositories = repositories
        self.cache = cache
        self.limits = limits or bounded.limits()
        self._repos = {}
        self._locks = KeyedLocks()
        self.downloads = {"index": 0, "archive": 0, "cached": 0}
        self._count_lock = threading.Lock()

    def _count(self, what):
        with self._count_lock:
            self.downloads[what] += 1

    def fetch(self, chart, repo, version, flags, dest, timeout=300):
        """The path of ``chart`` ``version`` of the HTTP(S) repository ``repo`` (after mirrors) in ``dest``, or None when
        ``helm pull`` must fetch it. AicrError when the archive is not the one the index names (its digest)."""
        if not deps.HAS_YAML or not repo or not str(repo).startswith(("http://", "https://")):
            return None
        if not version or "/" in str(chart) or urlparse.urlsplit(str(repo)).query or urlparse.urlsplit(str(repo)).fragment:
            return None  # a range or the latest: helm's semver rules decide
        _ref, _repo, flags, cred, _name = self.repositories.source(chart, repo, flags)  # refuses a weaker transport, warns on clear text
        if any(flag not in _TRANSPORT_FLAGS for flag in flags):
            return None
        deadline = time.monotonic() + (timeout or 300)
        insecure = cred.insecure if cred is not None else "--insecure-skip-tls-verify" in flags
        where = self._repository(str(repo).rstrip("/"), cred, insecure, deadline)
        if where is None:
            return None
        found = self._entry(where, chart, version)
        if found is None:
            return None
        url, digest = found
        data = self.cache.get(digest, self.limits.archive_bytes) if self.cache is not None else None
        if data is not None:
            self._count("cached")
        else:
            try:
                data = self._get(where, url, deadline, self.limits.archive_bytes, auth=_same_origin(url, where.url))
            except (Unavailable,) + _FAILURES:
                return None
            self._count("archive")
            got = sha256_of(data)
            if got != digest:
                raise AicrError("chart %s %s from %s: the archive's sha256 is %s, but the repository's index.yaml gives digest %s; refused (changed "
                                "or corrupted on the way, or the index is stale), nothing installed from it"
                                % (chart, version, repos.redact_url(where.url), got, digest),
                                field="chart", chart=chart, version=str(version), repository=repos.redact_url(where.url),
                                digest=digest, archive_digest=got)
            if self.cache is not None:
                self.cache.put(digest, data)
        name = os.path.basename(urlparse.urlsplit(url).path)
        name = name if _FILE_NAME.match(name) else "%s-%s.tgz" % (re.sub(r"[^A-Za-z0-9._+-]", "_", str(chart)), re.sub(r"[^A-Za-z0-9._+-]", "_", str(version)))
        os.makedirs(dest, exist_ok=True)
        path = os.path.join(dest, name)
        with open(path, "wb") as out:
            out.write(data)
        return path

    def _repository(self, url, cred, insecure, deadline):
        """The repository with its index read (once per run and transport), or None when helm must do it."""
        key = (url, cred.url if cred is not None else None, insecure)
        with self._locks(key):
            if key not in self._repos:
                where = _Repository(url, cred, insecure)
                try:
                    where.opener = _opener(_context(cred, insecure))
                    text = self._get(where, url + "/index.yaml", deadline, self.limits.bytes, auth=True)
                    self._count("index")
                    index = deps.load(text.decode("utf-8"), "index.yaml of %s" % repos.redact_url(url), self.limits)
                    where.entries = index.get("entries") if isinstance(index, dict) and isinstance(index.get("entries"), dict) else None
                except (Unavailable,) + _FAILURES:
                    where.entries = None
                self._repos[key] = where if where.entries is not None else None
            return self._repos[key]

    @staticmethod
    def _entry(where, chart, version):
        """``(url, digest)`` of the one entry of ``chart`` whose version is exactly ``version``, or None."""
        versions = where.entries.get(chart)
        hits = [entry for entry in versions if isinstance(entry, dict) and entry.get("version") == str(version)] if isinstance(versions, list) else []
        if len(hits) != 1:
            return None
        digest, urls = str(hits[0].get("digest") or "").lower(), hits[0].get("urls")
        if not _DIGEST.match(digest) or not isinstance(urls, list) or not urls or not isinstance(urls[0], str):
            return None
        url = resolve_reference(where.url, urls[0])
        return (url, digest) if url else None

    def _get(self, where, url, deadline, limit, auth):
        """The body of ``url`` (at most ``limit`` bytes, by ``deadline``) with the repository's settings; basic
        authentication with its credential when ``auth``."""
        request = urlrequest.Request(url, headers={"User-Agent": "aicr-runtime"})
        cred = where.cred
        if auth and cred is not None and cred.username and cred.password:
            token = base64.b64encode(("%s:%s" % (cred.username, cred.password)).encode("utf-8")).decode("ascii")
            request.add_unredirected_header("Authorization", "Basic " + token)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Unavailable("out of time")
        cancel.check("download of %s" % repos.redact_url(url))
        response = where.opener.open(request, timeout=min(remaining, STALL_S))
        try:
            parts, total = [], 0
            while True:
                cancel.check("download of %s" % repos.redact_url(url))  # SIGTERM: stopped between two reads, as a helm child is stopped
                if time.monotonic() > deadline:
                    raise Unavailable("out of time")
                piece = response.read(_CHUNK)
                if not piece:
                    return b"".join(parts)
                total += len(piece)
                if total > limit:
                    raise Unavailable("past the limit")
                parts.append(piece)
        finally:
            response.close()
