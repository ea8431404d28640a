# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""helm's release storage read without running helm: the ``sh.helm.release.v1.<name>.v<revision>`` Secrets of helm's
secret storage driver (the one ``helm.helm_environment`` sets), decoded within ``_common.bounded``'s limits, as
:class:`DeployedRelease` (revision, status, labels - the release digest ``aicr.io/digest``, the stack and component -,
values, manifest), so an unchanged release is recognised from one Secret list."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import zlib

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import COMPONENT_LABEL, DIGEST_LABEL, STACK_LABEL


def decode_release_secret(secret):
    """Decode a helm ``sh.helm.release.v1`` Secret (base64 of gzip of JSON) into the release JSON (or None when it is not
    one). Inflated and parsed within ``_common.bounded``'s limits: a gzip bomb is refused (AicrError naming the Secret)
    as soon as it inflates past the input bytes limit, never inflated whole."""
    meta = secret.get("metadata") or {}
    source = "helm release Secret %s/%s" % (meta.get("namespace") or "", meta.get("name") or "")
    lim = bounded.limits()
    try:
        encoded = ((secret.get("data") or {}).get("release")) or ""
        bounded.check_bytes(encoded, source, lim)
        data = base64.b64decode(base64.b64decode(encoded))
        if data[:2] == b"\x1f\x8b":
            data = bounded.gunzip(data, source, lim)
        return bounded.load_json(data.decode("utf-8"), source, lim)
    except (ValueError, TypeError, OSError, zlib.error):
        return None


class DeployedRelease(object):
    """What is deployed for one release name/namespace (latest revision): from its helm Secret, or from helm's answer."""

    def __init__(self, secret, decoded):
        secret = secret or {}
        labels = (secret.get("metadata") or {}).get("labels") or {}
        decoded = decoded or {}
        info = decoded.get("info") or {}
        chart_meta = ((decoded.get("chart") or {}).get("metadata")) or {}
        self.name = labels.get("name") or decoded.get("name")
        self.namespace = (secret.get("metadata") or {}).get("namespace") or decoded.get("namespace")
        self.revision = int(labels.get("version") or decoded.get("version") or 0)
        self.status = labels.get("status") or info.get("status")
        self.labels = labels
        self.digest = labels.get(DIGEST_LABEL)
        self.stack = labels.get(STACK_LABEL)
        self.component = labels.get(COMPONENT_LABEL)
        self.chart = chart_meta.get("name")
        self.chart_version = chart_meta.get("version")
        self.values = decoded.get("config") or {}
        self.manifest = decoded.get("manifest") or ""
        self.secret_name = (secret.get("metadata") or {}).get("name")
        self.created = (secret.get("metadata") or {}).get("creationTimestamp")

    @property
    def pending(self):
        """helm is (or was, until it was interrupted) installing, upgrading or rolling back this revision."""
        return str(self.status or "").startswith("pending-")

    def age_seconds(self, now):
        """Seconds since this revision was recorded (``now``: epoch seconds); None when unknown."""
        return timeutil.age_seconds(self.created, now)


def _latest(secrets, name):
    """The latest revision of release ``name`` among helm release Secrets, as a DeployedRelease (None: no revision)."""
    secrets = [s for s in secrets if ((s.get("metadata") or {}).get("labels") or {}).get("name") == name]
    if not secrets:
        return None
    latest = max(secrets, key=lambda s: int(((s.get("metadata") or {}).get("labels") or {}).get("version") or 0))
    return DeployedRelease(latest, decode_release_secret(latest))


def read_release(cluster, name, namespace):
    """The latest revision of helm release ``name`` in ``namespace``, or None; ``uid`` is its release Secret's uid."""
    secrets = cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % name)
    return _with_uid(_latest(secrets, name), secrets)


def read_releases(cluster, names, namespace):
    """``{name: latest revision or None}`` of several releases of one namespace: one Secret list (every helm release
    of the namespace), where :func:`read_release` of each would make one request per release."""
    secrets = cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm")
    return dict((name, _with_uid(_latest(secrets, name), secrets)) for name in names)


def _with_uid(release, secrets):
    """``release`` with ``uid``, the uid of the release Secret it was read from (None when unknown): what a stack's
    inventory records, so a Secret re-created under the same name is not taken for the one the stack wrote."""
    if release is not None:
        release.uid = next((((s.get("metadata") or {}).get("uid")) for s in secrets
                            if (s.get("metadata") or {}).get("name") == release.secret_name), None)
    return release


def stack_releases(cluster, stack, namespace):
    """Latest revision of every helm release of ``namespace`` (None: every namespace) labelled with this stack (``stack``:
    the label value).

    Only to *report* releases that claim the stack without being in its inventory: labels are data anyone who may write
    a Secret there can set, so they never make a release the stack's (``_release.ownership``); the survey lists every
    namespace where it may and falls back to its own namespaces where it may not, so the release identity needs no
    cluster-wide list of Secrets."""
    secrets = cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,%s=%s" % (STACK_LABEL, stack))
    latest = {}
    for secret in secrets:
        labels = (secret.get("metadata") or {}).get("labels") or {}
        key = ((secret.get("metadata") or {}).get("namespace"), labels.get("name"))
        if key not in latest or int(labels.get("version") or 0) > int(((latest[key].get("metadata") or {}).get("labels") or {}).get("version") or 0):
            latest[key] = secret
    return [_with_uid(DeployedRelease(s, None), [s]) for s in latest.values()]
