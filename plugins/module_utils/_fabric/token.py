# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One OAuth2 access token per run, shared by every thread.

The token is a JWT; its payload ``exp`` says when it expires. It is cached until ``exp - leeway``
(30 s) and fetched again after that, or when a request is answered 401 (``invalidate``). Concurrent
callers share one fetch.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import FabricHTTPError


def jwt_expiry(token, source="token endpoint"):
    """The ``exp`` claim (epoch seconds) of a JWT; AicrError when the token is not a JWT with one."""
    if not isinstance(token, str) or not token:
        raise AicrError("access_token from %s: empty or not a string; a JWT (header.payload.signature) is required" % source, field="access_token")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise AicrError("access_token from %s: malformed JWT (%d dot-separated parts, 3 required)" % (source, len(parts)), field="access_token")
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        payload = bounded.load_json(raw.decode("utf-8"), "access_token from %s" % source)
    except (ValueError, TypeError, UnicodeDecodeError):
        raise AicrError("access_token from %s: malformed JWT (payload is not base64url JSON)" % source, field="access_token")
    if not isinstance(payload, dict) or not isinstance(payload.get("exp"), (int, float)) or isinstance(payload.get("exp"), bool):
        raise AicrError("access_token from %s: JWT payload has no numeric exp claim" % source, field="access_token")
    return float(payload["exp"])


class TokenCache:
    """Caches the token from ``fetch()`` until ``exp - leeway``; thread-safe; counts fetches."""

    def __init__(self, fetch, source="token endpoint", leeway=30, clock=time.time):
        self._fetch = fetch
        self._source = source
        self._leeway = leeway
        self._clock = clock
        self._lock = threading.Lock()
        self._token = None
        self._expires = 0.0
        self.fetches = 0

    def get(self):
        with self._lock:
            if self._token is None or self._clock() >= self._expires - self._leeway:
                token = self._fetch()
                self.fetches += 1
                self._expires = jwt_expiry(token, self._source)
                self._token = token
            return self._token

    def invalidate(self, token):
        """Forget ``token`` (the one a 401 answered); a newer token fetched meanwhile is kept."""
        with self._lock:
            if self._token == token:
                self._token = None


def password_grant_fetcher(transport, realm, client_id, client_secret, username, password):
    """A ``fetch`` for TokenCache: OAuth2 password grant at the FTI id_manager (Keycloak) realm."""
    missing = [name for name, value in (("realm", realm), ("client_id", client_id), ("username", username), ("password", password)) if not value]
    if missing:
        raise AicrError("credentials: %s required for the FTI token endpoint" % ", ".join(missing), field=missing[0])
    path = "/id_manager/realms/%s/protocol/openid-connect/token" % realm
    # The form of CoHDI composable-resource-operator internal/cdi/fti/token.go (Token: client_id, client_secret, username,
    # password, scope=openid, response_type="id_token token", grant_type=password). composable-dra-driver
    # pkg/client/client.go (GetIMToken) sends the same but spells the key "response"; Keycloak ignores both.
    form = {"client_id": client_id, "client_secret": client_secret or "", "username": username, "password": password,
            "scope": "openid", "response_type": "id_token token", "grant_type": "password"}

    def fetch():
        # The form carries secrets: errors below name the realm and status only.
        try:
            response = transport.request("POST", path, form=form, authenticate=False, what="token request to realm %s" % realm)
        except FabricHTTPError as exc:
            raise AicrError("token request to realm %s refused (HTTP %s); check username/password/client_id/client_secret/realm" % (realm, exc.status),
                            field="credentials", status=exc.status)
        data = response.json("token request to realm %s" % realm)
        if not isinstance(data, dict) or "access_token" not in data:
            raise AicrError("token request to realm %s: answer has no access_token" % realm, field="access_token")
        return data["access_token"]

    return fetch
