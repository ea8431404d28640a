# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Publish a CustomResourceDefinition: breaking-change guard, server-side apply, wait for Established.

``publish(params)`` is what the ``crd_publish`` module calls:

1. read the live CRD (``GET``; a missing one is a first publication);
2. compare it with the new CRD using the values_schema breaking-change rules (``compat.compare``);
   any finding of severity ``error`` refuses the update unless ``allow_breaking``;
3. server-side *dry-run* apply (field manager ``aicr-runtime``) and compare its result with the live
   object: equal means unchanged, so a re-run makes no mutating call;
4. server-side apply for real (not in check mode);
5. with ``wait``, poll until ``Established`` and ``NamesAccepted`` are True and the accepted names are
   the applied ones (``NamesAccepted`` False is terminal).

``state: absent`` deletes the CRD (and with it every custom resource of its kind) and waits until it
is gone - only a CRD this collection manages: the field manager ``aicr-runtime`` holds fields of it *and* it carries
``app.kubernetes.io/managed-by: aicr-runtime`` (:func:`manages`). Any other CRD of that name (another operator's, a Helm
chart's, one applied by hand) is refused naming its field managers and label, unless ``adopt``; the delete carries the
read object's uid and resourceVersion as preconditions, so a CRD replaced or relabelled meanwhile is never the one deleted.
A CRD published with ``state: present`` gets the managed-by label when its definition has none, so that it can be removed
again. Reading, applying and waiting are ``_kube.crd``'s (the kstatus rule for CRDs, names accepted); requests go through
the collection's client (``_kube.client``: retries on 429/5xx for reads and applies).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection, readiness
from ansible_collections.aicr.runtime.plugins.module_utils._kube.crd import (
    API_VERSION, KIND, apply, assess, conditions_of, describe, path, read_live, wait_established, wait_gone,
)
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import comparable
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd as crd_mod

STATES = ("present", "absent")

DEFAULTS = dict(
    definition=None, src=None, state="present", allow_breaking=False, severities=None, force_conflicts=False, adopt=False,
    wait=True, wait_timeout=120, wait_sleep=1.0, kubeconfig=None, context=None,
)


MAX_WAIT = 24 * 3600  # wait_timeout: a day
MAX_SLEEP = 60  # wait_sleep


def checked_params(params, problems=None):
    """The parameters with their defaults filled in, checked in one pass (every problem added to ``problems``; raised
    here when none is given). A zero is a value, never the default: ``wait_timeout`` and ``wait_sleep`` are above 0."""
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in (params or {}).items() if v is not None))
    own = problems is None
    problems = Problems("crd_publish") if own else problems
    problems.choice("state", merged["state"], STATES)
    merged["wait_timeout"] = problems.positive("wait_timeout", merged["wait_timeout"], maximum=MAX_WAIT)
    merged["wait_sleep"] = problems.positive("wait_sleep", merged["wait_sleep"], maximum=MAX_SLEEP)
    compat.severity_problems(problems, merged.get("severities"))
    if own:
        problems.raise_if_any()
    return merged


def _first_crd(documents, field, where):
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == KIND:
            return document
    raise AicrError("%s: %s holds no CustomResourceDefinition; allowed: a document with kind %s" % (field, where, KIND), field=field)


def _parse_yaml(text, field, where):
    deps.require("PyYAML", "to read values files")
    try:
        return list(deps.load_all(text, "%s %s" % (field, where)))
    except deps.yaml.YAMLError as exc:
        raise AicrError("%s: %s is not valid YAML (%s)" % (field, where, getattr(exc, "problem", None) or exc.__class__.__name__), field=field)


def load_definition(definition=None, src=None):
    """The CRD to publish: ``definition`` (a mapping or YAML/JSON text) or ``src`` (a file; its first CRD document)."""
    if definition is not None and src is not None:
        raise AicrError("definition/src: give one of them, not both", field="definition")
    if definition is not None:
        if isinstance(definition, dict):
            bounded.check_value(definition, "definition")
            crd = definition
        elif isinstance(definition, str):
            crd = _first_crd(_parse_yaml(definition, "definition", "the text"), "definition", "the text")
        else:
            raise AicrError("definition: a %s is not allowed; allowed: a mapping or YAML text" % type(definition).__name__, field="definition")
    elif src is not None:
        path = os.path.expanduser(str(src))
        if not os.path.isfile(path):
            raise AicrError("src: file %s does not exist" % path, field="src", value=path)
        with open(path, "rb") as handle:
            crd = _first_crd(_parse_yaml(bounded.read_bounded(handle, "src %s" % path).decode("utf-8"), "src", path), "src", path)
    else:
        raise AicrError("definition/src: one of them is required (the CRD to publish)", field="definition")
    return check_definition(crd)


def check_definition(crd):
    """Refuse what is not an ``apiextensions.k8s.io/v1`` CRD with a name, a group, names and versions by apiextensions'
    rules (every problem listed in ``errors``); a copy without status and server-set metadata."""
    problems = Problems("definition")
    if not isinstance(crd, dict):
        raise AicrError("definition: a %s is not allowed; allowed: a mapping or YAML text" % type(crd).__name__, field="definition")
    if crd.get("kind") != KIND or crd.get("apiVersion") != API_VERSION:
        problems.add("definition", "apiVersion/kind %s/%s is not allowed; allowed: %s/%s" % (crd.get("apiVersion"), crd.get("kind"), API_VERSION, KIND))
    name = (crd.get("metadata") or {}).get("name")
    if not name or not isinstance(name, str):
        problems.add("definition", "metadata.name is missing; allowed: <plural>.<group>")
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    plural = names.get("plural")
    if not spec.get("group") or not plural:
        problems.add("definition", "CRD %s has no spec.group or spec.names.plural" % name)
    elif name and name != "%s.%s" % (plural, spec["group"]):
        problems.add("definition", "metadata.name %s is not allowed; allowed: %s.%s (<plural>.<group>)" % (name, plural, spec["group"]))
    crd_mod.name_problems(problems, group=spec.get("group") or None, kind=names.get("kind"), plural=plural or None,
                          fields={"group": "definition.spec.group", "kind": "definition.spec.names.kind", "plural": "definition.spec.names.plural"})
    for key in ("singular", "listKind"):
        if names.get(key) is not None:
            if key == "singular":
                problems.name("definition.spec.names.singular", names[key], "dns-1035-label")
            else:
                crd_mod.name_problems(problems, kind=names[key], fields={"kind": "definition.spec.names.listKind"})
    problems.choice("definition.spec.scope", spec.get("scope"), ("Namespaced", "Cluster"))
    versions = spec.get("versions")
    if versions is not None and not isinstance(versions, list):
        problems.add("definition.spec.versions", "a %s is not allowed; allowed: a list of versions" % type(versions).__name__)
    for index, version in enumerate(versions if isinstance(versions, list) else []):
        version_name = version.get("name") if isinstance(version, dict) else None
        crd_mod.name_problems(problems, api_version=version_name if version_name is not None else "",
                              fields={"api_version": "definition.spec.versions[%d].name" % index})
    problems.raise_if_any(name=name)
    body = copy.deepcopy(crd)
    body.pop("status", None)
    meta = body["metadata"]
    for key in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"):
        meta.pop(key, None)
    return body


def public(obj):
    """The object without managedFields (what the module returns)."""
    if obj is None:
        return None
    result = copy.deepcopy(obj)
    (result.get("metadata") or {}).pop("managedFields", None)
    return result


def make_cluster(params):
    return connection.client_for(params.get("kubeconfig"), params.get("context"))


def refusal_message(name, findings, field="definition", allowed="compatible changes only, or allow_breaking: true"):
    """One line: how many breaking changes, each rule and path, and how to allow them (``field``: the option refused;
    ``allowed``: what is allowed instead)."""
    errors = [f for f in findings if f["severity"] == "error"]
    shown = ", ".join("%s %s" % (f["rule"], f["path"]) for f in errors[:8])
    if len(errors) > 8:
        shown += " (and %d more)" % (len(errors) - 8)
    return "%s: %d breaking change(s) to the live CRD %s: %s; allowed: %s" % (field, len(errors), name, shown, allowed)


def field_managers(obj):
    """The field managers of an object (``metadata.managedFields[].manager``), sorted, each once."""
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return sorted(set(e.get("manager") for e in entries if isinstance(e, dict) and e.get("manager")))


def manages(obj):
    """Whether this collection manages the CRD: its field manager holds fields of it and it carries our managed-by label.

    Both, since either alone is something anyone may set: a label is data any writer of the CRD puts there, and a manager
    entry appears on any object the collection ever applied a field to. Neither is proof of authorship on its own; together
    they are what the collection itself writes on every CRD it publishes."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return FIELD_MANAGER in field_managers(obj) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY


def _owner(obj):
    """``field managers a, b, label app.kubernetes.io/managed-by=X`` (or ``... not set``): who else writes the CRD."""
    label = (((obj or {}).get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL)
    return "field managers %s, label %s" % (", ".join(field_managers(obj)) or "none",
                                            "%s=%s" % (MANAGED_BY_LABEL, label) if label else "%s not set" % MANAGED_BY_LABEL)


def _absent(cluster, params, name, check_mode):
    live = read_live(cluster, name)
    result = {"changed": False, "name": name, "action": "absent", "actions": [], "old_found": live is not None, "crd": None}
    if live is None:
        return result
    if not manages(live) and not params["adopt"]:
        raise AicrError("definition: CRD %s is not managed by %s (%s); not deleted, nor any custom resource of its kind; allowed: adopt: true to "
                        "delete it anyway" % (name, FIELD_MANAGER, _owner(live)), field="definition", name=name, field_managers=field_managers(live),
                        old_found=True, changed=False)
    result.update(changed=True, action="delete", actions=["delete CRD %s (and every custom resource of its kind)" % name])
    result["diff"] = {"before": comparable(live), "after": {}}
    if check_mode:
        return result
    meta = live.get("metadata") or {}
    # the object read and judged above, not whatever holds the name by the time the DELETE arrives
    preconditions = dict((k, meta[k]) for k in ("uid", "resourceVersion") if meta.get(k))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    if preconditions:
        body["preconditions"] = preconditions
    try:
        cluster.request("DELETE", path(name), body=body)
    except ClusterError as exc:
        if exc.status == 409:
            raise AicrError("definition: CRD %s changed after it was read (%s); not deleted - re-run to decide on the current one" % (name, describe(exc)),
                            field="definition", name=name, status=409)
        if exc.status != 404:
            raise AicrError("definition: the cluster refused to delete CRD %s (%s)" % (name, describe(exc)), field="definition", name=name, status=exc.status)
    if params["wait"]:
        result["waited"] = wait_gone(cluster, name, params["wait_timeout"], params["wait_sleep"])
    return result


def publish(params, check_mode=False, cluster=None, sleep=time.sleep, clock=time.monotonic):
    """Do what the crd_publish module asks. Returns the result dict; raises AicrError."""
    problems = Problems("crd_publish")  # one pass over the options and the definition, before the cluster is reached
    params = checked_params(params, problems)
    crd = None
    try:
        crd = load_definition(params.get("definition"), params.get("src"))
    except AicrError as exc:
        problems.extend(exc)
    problems.raise_if_any()
    cluster = cluster if cluster is not None else make_cluster(params)
    if params["state"] == "absent":
        return _absent(cluster, params, crd["metadata"]["name"], check_mode)
    meta = crd["metadata"]  # check_definition's copy: the caller's definition is not changed
    meta["labels"] = meta.get("labels") or {}
    if isinstance(meta["labels"], dict):
        meta["labels"].setdefault(MANAGED_BY_LABEL, MANAGED_BY)  # what state=absent checks (manages); a definition's own value is kept
    return publish_definition(cluster, crd, params, check_mode=check_mode, sleep=sleep, clock=clock)


def publish_definition(cluster, crd, params, check_mode=False, sleep=time.sleep, clock=time.monotonic):
    """Steps 1-5 for a checked CRD (``check_definition``); ``params`` as :func:`publish` takes them (defaults filled in).

    A live CRD that is being deleted is waited for until it is gone (``wait_timeout``), then created again; in
    check mode it reads as absent.
    """
    params = checked_params(params)
    name = crd["metadata"]["name"]
    live = read_live(cluster, name)
    if live is not None and (live.get("metadata") or {}).get("deletionTimestamp"):
        if not check_mode:
            wait_gone(cluster, name, params["wait_timeout"], params["wait_sleep"], sleep=sleep, clock=clock)
        live = None
    findings = compat.compare(live, crd, params.get("severities")) if live is not None else []
    breaking = any(f["severity"] == "error" for f in findings)
    result = {"changed": False, "name": name, "old_found": live is not None, "findings": findings, "breaking": breaking,
              "summary": compat.summary(findings), "actions": []}
    if breaking and not params["allow_breaking"]:
        raise AicrError(refusal_message(name, findings), field="definition", name=name, findings=findings, breaking=True, summary=result["summary"],
                        old_found=True, changed=False)
    dry = apply(cluster, crd, dry_run=True, force=params["force_conflicts"])
    if live is None:
        action = "create"
    elif comparable(dry) == comparable(live):
        action = "unchanged"
    else:
        action = "update"
    result["action"] = action
    result["diff"] = {"before": comparable(live) if live is not None else {}, "after": comparable(dry)}
    if action != "unchanged":
        result["changed"] = True
        note = " (%d breaking change(s) allowed)" % sum(1 for f in findings if f["severity"] == "error") if breaking else ""
        result["actions"].append("%s CRD %s by server-side apply%s" % (action, name, note))
    applied = dry if check_mode or action == "unchanged" else apply(cluster, crd, force=params["force_conflicts"])
    current = applied if action != "unchanged" else live
    if params["wait"] and not check_mode:
        current, result["waited"] = wait_established(cluster, name, params["wait_timeout"], params["wait_sleep"], sleep=sleep, clock=clock)
        result["established"] = True
    else:
        result["established"] = assess(current)[0] == readiness.READY if not check_mode or action == "unchanged" else False
    result["conditions"] = conditions_of(current)
    result["crd"] = public(current)
    return result
