"""A small HTTPS client for the lab's own calls to its API server (client certificate, lab CA).

The lab uses it to wait for readiness, create nodes and bindings, and mint tokens; tests use it
for quick reads. It is deliberately not the collection's client: the lab must not depend on the
code under test.
"""

import http.client
import json
import ssl
import urllib.parse

import yaml


class ApiError(RuntimeError):
    """A non-2xx answer: ``status`` and the decoded ``body`` (a Status, usually)."""

    def __init__(self, method, path, status, body):
        message = body.get("message") if isinstance(body, dict) else str(body)[:300]
        super().__init__("%s %s: %s %s" % (method, path, status, message))
        self.status = status
        self.body = body


class Rest:
    """JSON over one keep-alive HTTPS connection (re-opened when the server closed it)."""

    def __init__(self, server, ca_file, cert_file=None, key_file=None, token=None, timeout=30):
        parsed = urllib.parse.urlsplit(server)
        self.host, self.port = parsed.hostname, parsed.port or 443
        self.context = ssl.create_default_context(cafile=ca_file)
        if cert_file:
            self.context.load_cert_chain(cert_file, key_file)
        self.token = token
        self.timeout = timeout
        self._conn = None

    @classmethod
    def from_kubeconfig(cls, path, timeout=30):
        with open(path, "r", encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        return cls(cluster["server"], cluster["certificate-authority"], user.get("client-certificate"), user.get("client-key"),
                   token=user.get("token"), timeout=timeout)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # pylint: disable=too-many-arguments
    def request(self, method, path, body=None, query=None, content_type="application/json", accept="application/json"):
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        headers = {"Accept": accept, "User-Agent": "aicr-lab"}
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode("utf-8")
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=self.timeout)
            try:
                self._conn.request(method, path, body=data, headers=headers)
                response = self._conn.getresponse()
                raw = response.read()
                break
            # a keep-alive connection the API server closed while idle (its IdleTimeout): over TLS that can surface
            # as an EOF without close_notify (SSLEOFError) instead of RemoteDisconnected; reconnect once
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest,
                    ssl.SSLEOFError, ssl.SSLZeroReturnError):
                self.close()
                if attempt:
                    raise
        try:
            decoded = json.loads(raw) if raw else {}
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        if response.status >= 300:
            raise ApiError(method, path, response.status, decoded)
        return decoded

    def get(self, path, **query):
        return self.request("GET", path, query=query or None)

    def exists(self, path):
        try:
            self.get(path)
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    def apply(self, path, obj, manager="aicr-lab", force=True):
        """Server-side apply ``obj`` at ``path`` (the object's own URL)."""
        return self.request("PATCH", path, body=json.dumps(obj), query={"fieldManager": manager, "force": "true" if force else "false"},
                            content_type="application/apply-patch+yaml")

    def create(self, path, obj):
        return self.request("POST", path, body=obj)

    def delete(self, path, **query):
        try:
            return self.request("DELETE", path, query=query or None)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
