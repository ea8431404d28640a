# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A CustomResourceDefinition on the API server, written once for every CRD the collection installs (crd_publish's
``_schema.publish`` and the ClusterStack CRD of ``_stack``): read, server-side apply (field manager ``aicr-runtime``,
dry run or real), and waits - until Established with its names accepted, or until gone.

Readiness is ``_kube.readiness``'s rule for CRDs (kstatus: ``Established`` True, ``NamesAccepted`` False terminal), the
rule gated_release waits on too; :func:`assess` adds what only a publisher of new names must see - ``NamesAccepted``
True and the accepted names being the applied ones. Refusals name the option the publisher took the CRD from
(``definition``, ``wait_timeout``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import readiness, wait
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError

API_VERSION = "apiextensions.k8s.io/v1"
KIND = "CustomResourceDefinition"
BASE_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def path(name):
    return "%s/%s" % (BASE_PATH, name)


def describe(exc):
    return "HTTP %s: %s" % (exc.status, exc.msg.split(": ", 1)[-1]) if exc.status else exc.msg


def read_live(cluster, name):
    """The live CRD, or None."""
    try:
        return cluster.request("GET", path(name))
    except ClusterError as exc:
        if exc.status == 404:
            return None
        raise AicrError("definition: cannot read CRD %s from the cluster (%s)" % (name, describe(exc)), field="definition", name=name, status=exc.status)


def apply(cluster, crd, dry_run=False, force=False):
    """Server-side apply (field manager aicr-runtime); returns the object the server answers."""
    name = crd["metadata"]["name"]
    query = {"fieldManager": FIELD_MANAGER}
    if force:
        query["force"] = "true"
    if dry_run:
        query["dryRun"] = "All"
    try:
        return cluster.request("PATCH", path(name), query=query, body=crd, content_type="application/apply-patch+yaml")
    except ClusterError as exc:
        what = "server-side dry-run apply" if dry_run else "server-side apply"
        if exc.status == 409:
            raise AicrError("definition: %s of CRD %s conflicts with fields owned by other managers (%s); allowed: force_conflicts: true to take them over"
                            % (what, name, describe(exc)), field="definition", name=name, status=409)
        raise AicrError("definition: the cluster refused the %s of CRD %s (%s)" % (what, name, describe(exc)), field="definition", name=name,
                        status=exc.status)


def names_accepted(obj):
    """True when the accepted names are the names of the spec (an update of the names has been accepted)."""
    wanted = (obj.get("spec") or {}).get("names") or {}
    accepted = (obj.get("status") or {}).get("acceptedNames") or {}
    return all(accepted.get(key) == wanted.get(key) for key in ("plural", "kind") if wanted.get(key))


def conditions_of(obj):
    """``{type: {status, reason, message}}`` of a CRD's conditions."""
    found = {}
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type"):
            found[cond["type"]] = dict((k, cond.get(k)) for k in ("status", "reason", "message"))
    return found


def assess(obj):
    """(state, reason) of a live CRD: readiness.READY / PENDING / FAILED."""
    state, reason = readiness.assess(obj)
    if state == readiness.READY:
        conds = conditions_of(obj)
        if (conds.get("NamesAccepted") or {}).get("status") != "True":
            return readiness.PENDING, "NamesAccepted not True yet"
        if not names_accepted(obj):
            return readiness.PENDING, "accepted names are not the applied names yet"
    return state, reason


def wait_established(cluster, name, timeout, sleep_seconds, sleep=time.sleep, clock=time.monotonic):
    """Poll until the CRD is Established with its names accepted; return (live object, seconds waited)."""
    started = clock()
    last = {}

    def established():
        live = read_live(cluster, name)
        state, reason = assess(live)
        last.update(live=live, reason=reason)
        if state == readiness.FAILED:
            raise AicrError("definition: CRD %s is not usable: %s; allowed: names no other CRD of the group uses" % (name, reason),
                            field="definition", name=name, conditions=conditions_of(live))
        return live if state == readiness.READY else None

    live = wait.until(established, started + timeout, sleep_seconds, clock=clock, sleep=sleep, on_timeout=lambda: AicrError(
        "wait_timeout: CRD %s not Established after %ss (%s); allowed: a longer wait_timeout or a cluster that establishes it"
        % (name, _seconds(timeout), last["reason"]), field="wait_timeout", name=name, conditions=conditions_of(last["live"])))
    return live, round(clock() - started, 3)


def wait_gone(cluster, name, timeout, sleep_seconds, sleep=time.sleep, clock=time.monotonic):
    started = clock()
    wait.until(lambda: read_live(cluster, name) is None, started + timeout, sleep_seconds, clock=clock, sleep=sleep, on_timeout=lambda: AicrError(
        "wait_timeout: CRD %s still exists %ss after its deletion; allowed: a longer wait_timeout" % (name, _seconds(timeout)),
        field="wait_timeout", name=name))
    return round(clock() - started, 3)


def _seconds(value):
    return int(value) if float(value).is_integer() else value
