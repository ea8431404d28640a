"""Read the API server's own audit log: what a test's clients really asked.

The lab's kube-apiserver writes one JSON event per request (stage ResponseComplete, level Metadata,
``--audit-log-mode=blocking``) to ``audit.log``; control-plane components and kwok are not logged
(see ``cluster.AUDIT_POLICY``). A test takes a mark, runs something, and reads what came after:

    mark = audit.mark()
    run_playbook(...)
    assert audit.entries(since=mark, mutating=True) == []

A mark is a request of its own (a GET of a ConfigMap that does not exist, named with a fresh id)
that the reader waits to find in the log; entries are ordered by the time the API server
*received* them, so a mark sorts after every request answered before it was sent. Reading up to
the present also ends with a mark, so nothing the server answered before the read is missing.

Entries have the keys tests filter on: ``verb`` (get, list, watch, create, update, patch, delete,
deletecollection), ``mutating``, ``method``, ``path``, ``query``, ``group``, ``version``,
``resource``, ``subresource``, ``namespace``, ``name``, ``code``, ``user``, ``groups``,
``userAgent``, ``time`` (received, seconds since the epoch) and ``authorization`` (allow/forbid).
"""

import datetime
import json
import os
import re
import threading
import time
import urllib.parse
import uuid

from aicr_lab.controlplane.rest import ApiError

MUTATING_VERBS = frozenset(("create", "update", "patch", "delete", "deletecollection"))
MARK_PREFIX = "aicr-audit-mark-"
MARK_TIMEOUT = 30
_METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
            "delete": "DELETE", "deletecollection": "DELETE"}


def _timestamp(text):
    # 2026-12-01T10:21:59.558572Z
    parsed = datetime.datetime.strptime(text.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S")
    return parsed.replace(tzinfo=datetime.timezone.utc).timestamp()


def entry_from_event(event):
    """The flat entry tests read, from one audit.k8s.io/v1 Event."""
    uri = urllib.parse.urlsplit(event.get("requestURI", ""))
    ref = event.get("objectRef") or {}
    user = event.get("impersonatedUser") or event.get("user") or {}
    verb = event.get("verb", "")
    return {
        "verb": verb,
        "mutating": verb in MUTATING_VERBS,
        "method": _METHODS.get(verb, verb.upper()),
        "path": uri.path,
        "query": uri.query,
        "group": ref.get("apiGroup", ""),
        "version": ref.get("apiVersion", ""),
        "resource": ref.get("resource", ""),
        "subresource": ref.get("subresource", ""),
        "namespace": ref.get("namespace", ""),
        "name": ref.get("name", ""),
        "code": (event.get("responseStatus") or {}).get("code"),
        "user": user.get("username", ""),
        "groups": user.get("groups", []),
        "userAgent": event.get("userAgent", ""),
        "time": _timestamp(event["requestReceivedTimestamp"]),
        "authorization": (event.get("annotations") or {}).get("authorization.k8s.io/decision", ""),
        "auditID": event.get("auditID"),
    }


class AuditLog:
    """Incremental reader of one control plane's audit log (thread-safe)."""

    def __init__(self, path, rest):
        self.path = path
        self.rest = rest
        self._offset = 0
        self._partial = b""
        self._entries = []
        self._lock = threading.Lock()

    def _read_new(self):
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < self._offset:  # a new control plane wrote a new log
                self._offset, self._partial, self._entries = 0, b"", []
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self._entries.append(entry_from_event(json.loads(line)))

    def mark(self):
        """Send a marker request, wait until the log has it, and return its received time."""
        name = MARK_PREFIX + uuid.uuid4().hex[:12]
        try:
            self.rest.get("/api/v1/namespaces/default/configmaps/%s" % name)
        except ApiError as exc:
            if exc.status != 404:
                raise
        deadline = time.monotonic() + MARK_TIMEOUT
        while True:
            with self._lock:
                self._read_new()
                for entry in reversed(self._entries):
                    if entry["name"] == name:
                        return entry["time"]
            if time.monotonic() > deadline:
                raise RuntimeError("audit mark %s never reached %s" % (name, self.path))
            time.sleep(0.01)

    # pylint: disable=too-many-arguments
    def entries(self, since=None, mutating=None, verb=None, resource=None, namespace=None, user=None, user_agent=None,
                path=None, code=None, include_marks=False):
        """Entries received after ``since`` (a mark) and up to now, filtered.

        ``verb`` is a verb or a comma list; ``user_agent`` and ``path`` are regular expressions
        (searched); ``user`` is a user name or a list of them.
        """
        until = self.mark()
        verbs = set(verb.split(",")) if isinstance(verb, str) else set(verb or ())
        users = {user} if isinstance(user, str) else set(user or ())
        with self._lock:
            found = [e for e in self._entries if (since is None or e["time"] > since) and e["time"] < until]
        found.sort(key=lambda e: e["time"])
        result = []
        for entry in found:
            if not include_marks and entry["name"].startswith(MARK_PREFIX):
                continue
            if mutating is not None and entry["mutating"] != mutating:
                continue
            if verbs and entry["verb"] not in verbs:
                continue
            if resource and entry["resource"] != resource:
                continue
            if namespace and entry["namespace"] != namespace:
                continue
            if users and entry["user"] not in users:
                continue
            if user_agent and not re.search(user_agent, entry["userAgent"]):
                continue
            if path and not re.search(path, entry["path"]):
                continue
            if code is not None and entry["code"] != code:
                continue
            result.append(entry)
        return result
