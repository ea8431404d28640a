# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Pick and build the backend for ``provider`` (community.crypto style: the caller never branches)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.fti_cm import ClusterManagerBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.fti_fm import FabricManagerBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.redfish import RedfishBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.token import TokenCache, password_grant_fetcher
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import Transport, BearerAuth, BasicAuth

PROVIDERS = ("fti_fm", "fti_cm", "redfish")


def build_backend(provider, endpoint, credentials, tenant_id=None, cluster_id=None, ca_path=None, validate_certs=True, timeout=30.0,
                  read_retries=2, token_leeway=30, allow_http=False, trust_env=False, task_timeout=60.0, task_poll_interval=1.0):
    """A ready backend. ``credentials``: username, password, client_id, client_secret, realm. ``task_timeout`` and
    ``task_poll_interval`` bound a Redfish action that runs as a task (202 and a task monitor); fabric_device gives its
    settle timeout (``_entry/fabric_device.py``)."""
    if provider not in PROVIDERS:
        raise AicrError("provider: %r is not one of %s" % (provider, ", ".join(PROVIDERS)), field="provider")
    credentials = credentials or {}
    transport = Transport(endpoint, ca_path=ca_path, validate_certs=validate_certs, timeout=timeout, read_retries=read_retries,
                          allow_http=allow_http, trust_env=trust_env)
    if provider == "redfish":
        if not credentials.get("username") or not credentials.get("password"):
            raise AicrError("credentials: username and password are required for provider redfish", field="username")
        transport.auth = BasicAuth(credentials["username"], credentials["password"])
        return RedfishBackend(transport, task_timeout=task_timeout, task_poll_interval=task_poll_interval)
    fetch = password_grant_fetcher(transport, credentials.get("realm"), credentials.get("client_id"), credentials.get("client_secret"),
                                   credentials.get("username"), credentials.get("password"))
    tokens = TokenCache(fetch, source="realm %s" % credentials.get("realm"), leeway=token_leeway)
    transport.auth = BearerAuth(tokens)
    if provider == "fti_fm":
        return FabricManagerBackend(transport, tenant_id, tokens)
    return ClusterManagerBackend(transport, tenant_id, cluster_id, tokens)
