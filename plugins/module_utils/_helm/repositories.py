# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Chart repository credentials and TLS settings (``repository_credentials``), given to helm in files, never on argv.

- **Matching.** An entry applies to the repository helm actually contacts: the URL *after* ``repository_mirrors``
  rewrote it (the mirror is what asks for credentials), exact or by a ``/``-bounded prefix, the longest wins —
  the rule mirrors use. ``oci://registry.example:5000`` covers every chart under that registry.
- **HTTP(S) repositories** become entries of a private ``repositories.yaml`` (``HELM_REPOSITORY_CONFIG``, 0600, with
  ``username``, ``password``, ``caFile``, ``certFile``, ``keyFile``, ``insecure_skip_tls_verify``), named
  ``aicr-<sha256 of the URL>``; their index is fetched with ``helm repo update <name>`` and the chart is referenced as
  ``<name>/<chart>`` instead of ``<chart> --repo <url>``.
- **OCI registries** get a private registry config (``HELM_REGISTRY_CONFIG``, 0600, Docker's ``config.json``:
  ``auths.<host>.auth``) — what ``helm registry login`` would write, without a login round trip; their CA, client
  certificate and ``plain_http`` are helm's ``--ca-file``/``--cert-file``/``--key-file``/``--plain-http`` flags (paths,
  not secrets).
- **Transport.** Credentials travel only with the TLS settings of the entry they were given in: a ``repository_mirrors``
  entry (which a ClusterStack spec may set) or any other option asking for ``insecure_skip_tls_verify`` or ``plain_http``
  on a credentialed repository is refused in one line (:func:`check_mirrors` before anything is contacted,
  :func:`refuse_weaker_transport` at each use), never applied to the credentials.
- **Userinfo in URLs** (``https://user:pass@host``) is refused wherever a URL is given, with the URL shown redacted
  (``https://***@host``): credentials belong in ``repository_credentials``.

These files live in a directory private to the run (0700), removed when the run ends, also after an error or SIGTERM.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import ipaddress
import json
import os
import re
import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks

FIELD = "repository_credentials"
KEYS = ("url", "username", "password", "ca_file", "cert_file", "key_file", "insecure_skip_tls_verify", "plain_http")
# The modules' option (gated_release, values_schema; documented by the repository_credentials doc fragment)
REPOSITORY_CREDENTIALS_SPEC = dict(type="list", elements="dict", default=[], options=dict(
    url=dict(type="str", required=True), username=dict(type="str"), password=dict(type="str", no_log=True),
    ca_file=dict(type="path"), cert_file=dict(type="path"), key_file=dict(type="path", no_log=False),
    insecure_skip_tls_verify=dict(type="bool", default=False), plain_http=dict(type="bool", default=False)))
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@]*)@")


def _norm(url):
    return str(url).rstrip("/")


def userinfo(url):
    """The ``user[:password]`` part of ``url`` (None without one)."""
    match = _USERINFO.match(str(url or ""))
    return match.group(2) if match else None


def redact_url(url):
    """``url`` with any ``user:password@`` shown as ``***@``."""
    return _USERINFO.sub(r"\1***@", str(url or ""))


def on_loopback(url):
    """Whether ``url``'s host is this machine's loopback (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", str(url), flags=re.I).split("/", 1)[0].rsplit("@", 1)[-1]
    host = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_userinfo(url, field):
    """AicrError when ``url`` carries a user name or password (shown redacted)."""
    if userinfo(url) is not None:
        raise AicrError("%s: %s carries a user name or password in the URL; give them in repository_credentials (username, password) instead"
                        % (field, redact_url(url)), field=field)


def host_of(url):
    """``host[:port]`` of a repository URL or OCI reference (without any userinfo)."""
    rest = redact_url(url).split("://", 1)[-1]
    return rest.split("/", 1)[0].split("@", 1)[-1]


def url_secrets(urls):
    """The userinfo of each URL of ``urls`` and its password part, for the module's no_log values."""
    found = set()
    for url in urls:
        info = userinfo(url) if isinstance(url, str) else None
        if info:
            found.add(info)
            if ":" in info:
                found.add(info.split(":", 1)[1])
    return set(s for s in found if len(s) >= 3)


class Credential(object):
    """One ``repository_credentials`` entry."""

    def __init__(self, entry):
        self.url = _norm(entry["url"])
        self.username = entry.get("username") or None
        self.password = entry.get("password") or None
        self.ca_file = entry.get("ca_file") or None
        self.cert_file = entry.get("cert_file") or None
        self.key_file = entry.get("key_file") or None
        self.insecure = bool(entry.get("insecure_skip_tls_verify"))
        self.plain_http = bool(entry.get("plain_http"))

    @property
    def oci(self):
        return self.url.startswith("oci://")

    @property
    def host(self):
        """The registry host (``host[:port]``) of an OCI entry."""
        return self.url[len("oci://"):].split("/", 1)[0]

    @property
    def repo_name(self):
        return "aicr-" + hashlib.sha256(self.url.encode("utf-8")).hexdigest()[:16]

    def tls_flags(self):
        flags = []
        for flag, value in (("--ca-file", self.ca_file), ("--cert-file", self.cert_file), ("--key-file", self.key_file)):
            if value:
                flags += [flag, value]
        if self.insecure:
            flags.append("--insecure-skip-tls-verify")
        if self.plain_http:
            flags.append("--plain-http")
        return flags


def normalize_credentials(entries):
    """``repository_credentials`` (a list of dicts with ``url``, or a dict keyed by URL) -> [Credential]; AicrError naming
    the entry (its URL, never a password) when one is wrong."""
    if not entries:
        return []
    if isinstance(entries, dict):
        entries = [dict(value or {}, url=key) if isinstance(value, dict) else {"url": key, "_bad": value} for key, value in entries.items()]
    if not isinstance(entries, list):
        raise AicrError("%s: must be a list of entries with url, username, password, ca_file, cert_file, key_file; got a %s"
                        % (FIELD, type(entries).__name__), field=FIELD)
    result, seen = [], {}
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (FIELD, index)
        if not isinstance(entry, dict) or "_bad" in entry:
            raise AicrError("%s: each entry must be a dict with url and username/password, ca_file, cert_file/key_file" % where, field=FIELD)
        url = entry.get("url")
        if not isinstance(url, str) or not re.match(r"^(https?|oci)://[^/]", url):
            raise AicrError("%s: url %r is not allowed; use an http://, https:// or oci:// repository URL" % (where, redact_url(url)), field=FIELD)
        refuse_userinfo(url, where + ".url")
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise AicrError("%s: unknown keys %s for %s; allowed: %s" % (where, unknown, url, ", ".join(KEYS)), field=FIELD)
        cred = Credential(entry)
        if bool(cred.username) != bool(cred.password):
            raise AicrError("%s: %s needs both username and password, or neither" % (where, cred.url), field=FIELD)
        if bool(cred.cert_file) != bool(cred.key_file):
            raise AicrError("%s: %s needs both cert_file and key_file (a client certificate and its key), or neither" % (where, cred.url), field=FIELD)
        if cred.plain_http and not cred.oci and not cred.url.startswith("http://"):
            raise AicrError("%s: plain_http is for oci:// registries and http:// repositories; %s uses TLS (use an http:// URL for no TLS)"
                            % (where, cred.url), field=FIELD)
        if cred.url.startswith("http://") and (cred.username or cred.cert_file) and not cred.plain_http:
            # the scheme alone is too easy to get wrong (a typo, a mirror's URL pasted): clear text needs the owner's word
            raise AicrError("%s: %s is http:// and would send the %s in clear text; use https://, or set plain_http: true in this entry to "
                            "allow it" % (where, cred.url, "password" if cred.username else "client certificate"), field=FIELD)
        for key in ("ca_file", "cert_file", "key_file"):
            path = getattr(cred, key)
            if path and not os.path.isfile(path):
                raise AicrError("%s: %s of %s: %s is not a readable file" % (where, key, cred.url, path), field=FIELD)
        if cred.url in seen:
            raise AicrError("%s: %s is given twice (also %s[%d])" % (where, cred.url, FIELD, seen[cred.url]), field=FIELD)
        seen[cred.url] = index
        result.append(cred)
    hosts = {}
    for cred in result:
        if cred.oci and cred.username:
            other = hosts.setdefault(cred.host, cred)
            if other is not cred and (other.username, other.password) != (cred.username, cred.password):
                raise AicrError("%s: %s and %s are one registry (%s) with different credentials; a registry has one login"
                                % (FIELD, other.url, cred.url, cred.host), field=FIELD)
    return result


def match(credentials, url):
    """The credential for ``url`` (exact or ``/``-bounded prefix, the longest wins), or None."""
    url = _norm(url or "")
    best = None
    for cred in credentials:
        if url == cred.url or url.startswith(cred.url + "/"):
            if best is None or len(cred.url) > len(best.url):
                best = cred
    return best


# (helm flag, the mirror's / entry's key, the Credential attribute): the transport settings a credential owner decides
_TRANSPORT = (("--insecure-skip-tls-verify", "insecure_skip_tls_verify", "insecure"), ("--plain-http", "plain_http", "plain_http"))
_TRANSPORT_FLAGS = tuple(flag for flag, _key, _attr in _TRANSPORT)


def _weaker(cred, asked):
    """The keys of ``asked`` (transport settings set to true) that would send ``cred`` over a weaker transport than its
    entry gives. ``plain_http`` only means something for OCI (an HTTP repository's scheme decides)."""
    return [key for _flag, key, attr in _TRANSPORT if asked.get(key) and not getattr(cred, attr) and (cred.oci or key != "plain_http")]


def refuse_weaker_transport(cred, flags):
    """AicrError when helm ``flags`` would send ``cred``'s credentials with less TLS than its own entry gives: credentials
    travel only with the TLS settings of the ``repository_credentials`` entry they were given in (a mirror, or any other
    option, cannot turn verification or TLS off for them)."""
    weaker = _weaker(cred, dict((key, flag in flags) for flag, key, _attr in _TRANSPORT))
    if weaker:
        raise AicrError("repository_credentials: %s would be sent to %s with %s, which its entry does not set; credentials travel only with their "
                        "own entry's TLS settings: set %s in that repository_credentials entry, or drop it from the mirror (or option) asking for it"
                        % ("the password" if cred.username else "the client certificate" if cred.cert_file else "the entry", cred.url,
                           " and ".join(weaker), " and ".join(weaker)), field="repository_mirrors", repository=cred.url)


def check_mirrors(credentials, mirrors):
    """Refuse, before anything is contacted, a ``repository_mirrors`` entry (normalised: ``{upstream: {url, plain_http,
    insecure_skip_tls_verify}}``) whose URL overlaps a credentialed repository and turns TLS (verification) off for it:
    the mirror (a ClusterStack spec may set it) cannot weaken what the operator's credentials travel over."""
    for upstream, target in sorted((mirrors or {}).items()):
        url = _norm(target.get("url") or "")
        for cred in credentials:
            if not (url == cred.url or url.startswith(cred.url + "/") or cred.url.startswith(url + "/")):
                continue
            weaker = _weaker(cred, target)
            if weaker:
                raise AicrError("repository_mirrors: the mirror of %s (%s) sets %s, but repository_credentials gives credentials for %s without it; "
                                "a mirror cannot weaken the transport of a credentialed repository: set %s in that repository_credentials entry, "
                                "or drop it from the mirror" % (redact_url(upstream), redact_url(url), " and ".join(weaker), cred.url, " and ".join(weaker)),
                                field="repository_mirrors", value=redact_url(upstream))


def redact_passwords(text, credentials):
    """``text`` with the password of every :class:`Credential` in ``credentials`` replaced (the longest first)."""
    for secret in sorted(set(c.password for c in credentials if c.password), key=len, reverse=True):
        text = text.replace(secret, "********")
    return text


def _write_private(path, text):
    """Write ``text`` to ``path`` (0600), atomically: a helm reading it meanwhile sees the old or the new file."""
    partial = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(partial, 0o600)
    os.replace(partial, path)


def _yaml_string(value):
    return json.dumps(str(value))  # a JSON string is a YAML flow scalar: quotes and backslashes stay exact


class Repositories(object):
    """The credential files of one run and how a chart reference is given to helm with them."""

    def __init__(self, credentials, directory):
        self.credentials = list(credentials)
        self.directory = directory
        self._lock = threading.Lock()
        self._written = False
        self._index_locks = KeyedLocks()
        self.indexed = set()
        self.warnings = ["repository_credentials: TLS verification is off for %s (insecure_skip_tls_verify)" % c.url
                         for c in self.credentials if c.insecure]
        self._in_clear = set()

    def __bool__(self):
        return bool(self.credentials)

    __nonzero__ = __bool__

    @property
    def repository_config(self):
        return os.path.join(self.directory, "repositories.yaml")

    @property
    def registry_config(self):
        return os.path.join(self.directory, "registry.json")

    @property
    def repository_cache(self):
        return os.path.join(self.directory, "repository-cache")

    def env(self):
        """The helm variables pointing at this run's private files (none without credentials)."""
        if not self.credentials:
            return {}
        self.write()
        return {"HELM_REPOSITORY_CONFIG": self.repository_config, "HELM_REPOSITORY_CACHE": self.repository_cache,
                "HELM_REGISTRY_CONFIG": self.registry_config}

    def write(self):
        """Write repositories.yaml and the registry config (0600) into the private 0700 directory, once."""
        with self._lock:
            if self._written:
                return
            if not os.path.isdir(self.directory):
                os.makedirs(self.directory, mode=0o700)
            os.chmod(self.directory, 0o700)
            os.makedirs(self.repository_cache, mode=0o700, exist_ok=True)
            lines = ["apiVersion: v1", "generated: \"0001-01-01T00:00:00Z\"", "repositories:"]
            for cred in self.credentials:
                if cred.oci:
                    continue
                lines.append("- name: %s" % cred.repo_name)
                lines.append("  url: %s" % _yaml_string(cred.url))
                for key, value in (("username", cred.username), ("password", cred.password), ("caFile", cred.ca_file),
                                   ("certFile", cred.cert_file), ("keyFile", cred.key_file)):
                    lines.append("  %s: %s" % (key, _yaml_string(value or "")))
                lines.append("  insecure_skip_tls_verify: %s" % ("true" if cred.insecure else "false"))
                lines.append("  pass_credentials_all: false")
            if len(lines) == 3:
                lines[-1] = "repositories: []"
            _write_private(self.repository_config, "\n".join(lines) + "\n")
            auths = {}
            for cred in self.credentials:
                if cred.oci and cred.username:
                    token = base64.b64encode(("%s:%s" % (cred.username, cred.password)).encode("utf-8")).decode("ascii")
                    auths[cred.host] = {"auth": token}
            _write_private(self.registry_config, json.dumps({"auths": auths}, indent=2) + "\n")
            self._written = True

    def source(self, chart_ref, repo, flags):
        """``(chart_ref, repo, flags, credential, update)`` for helm: an HTTP repository with an entry becomes
        ``<name>/<chart>`` without ``--repo`` (``update``: the repository name whose index must be fetched first); an
        OCI reference with an entry gets its TLS flags. Anything else is returned as it came."""
        flags = list(flags or [])
        if repo:
            cred = match(self.credentials, repo)
            if str(repo).startswith("http://"):
                self._warn_in_clear(repo, cred)
            if cred is None:
                return chart_ref, repo, flags, None, None
            refuse_weaker_transport(cred, flags)
            flags = [f for f in flags if f not in _TRANSPORT_FLAGS]  # the entry's own settings are in repositories.yaml
            return "%s/%s" % (cred.repo_name, chart_ref), None, flags, cred, cred.repo_name
        if str(chart_ref).startswith("oci://"):
            cred = match(self.credentials, chart_ref)
            if cred is not None:
                refuse_weaker_transport(cred, flags)
                flags = [f for f in flags if f not in _TRANSPORT_FLAGS] + cred.tls_flags()  # the entry's TLS settings, only
            if "--plain-http" in flags:
                self._warn_in_clear(cred.url if cred is not None else chart_ref.rsplit("/", 1)[0], cred)
            return chart_ref, repo, flags, cred, None
        return chart_ref, repo, flags, None, None

    def _warn_in_clear(self, where, cred):
        """One warning per repository (or registry) helm talks to without TLS: charts - and credentials, which only their
        entry's ``plain_http: true`` allows - travel in clear text, readable and changeable on the way. None for a
        repository on this machine's loopback (``localhost``, ``127.0.0.0/8``, ``::1``): nothing crosses a network."""
        where = redact_url(where)
        if on_loopback(where):
            return
        with self._lock:
            if where in self._in_clear:
                return
            self._in_clear.add(where)
            self.warnings.append("repository %s: no TLS (%s): charts%s travel in clear text, readable and changeable on the way; prefer https:// "
                                 "or a registry with TLS" % (where, "http://" if where.startswith("http://") else "plain_http",
                                                             " and the credentials of repository_credentials (%s)" % cred.url if cred is not None else ""))

    def index_lock(self, name):
        """The lock under which repository ``name``'s index is fetched, once per run (``indexed`` holds the names done)."""
        return self._index_locks(name)

    def redact(self, text):
        """``text`` with every password of these credentials replaced."""
        return redact_passwords(text, self.credentials)


def explain(error_text, where, cred):
    """A one-line reason for an authentication or TLS failure of ``where`` (a repository URL), or None."""
    text = error_text.lower()
    if any(sign in text for sign in ("401", "unauthorized", "authentication required", "basic credential not found", "no basic auth credentials",
                                     "may require authorization")):
        if cred is not None and cred.username:
            return "repository %s refused the credentials given in repository_credentials (%s) (401 Unauthorized)" % (where, cred.url)
        return "repository %s requires credentials (401 Unauthorized); give them in repository_credentials" % where
    if "broken pipe" in text or "connection reset" in text:
        return "repository %s closed the connection during TLS (does it require a client certificate? cert_file, key_file in repository_credentials)" % where
    if "certificate" in text or "x509" in text or "tls:" in text:
        if cred is not None:
            return "repository %s: TLS failed with the ca_file/cert_file given in repository_credentials (%s)" % (where, cred.url)
        return "repository %s: TLS failed; give its CA (ca_file) or client certificate (cert_file, key_file) in repository_credentials" % where
    return None
