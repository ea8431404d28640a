# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Drift: the live objects of a component compared with what the stack last applied (issue 39, item 1).

One object at a time (:func:`object_drift`): the body last applied (an object of the release's stored manifest, or a
manifest component's rendered object) without the fields the ignore rules name is applied as a server-side *dry run*
with the stack's field manager, and the answer compared with the live object. A dry-run apply changes only the fields
the body sets, so fields the server defaulted and fields only other managers set never differ; what differs is a field
we set that someone else changed (or removed). Each differing field is named by a JSON pointer with the manager that
last wrote it, read from the live object's ``managedFields``; an object that is gone is ``missing``.

Ignore rules (:func:`ignore_rules`): JSON pointers per kind (``*`` matches any one segment; a pointer covers its whole
subtree), the user's ``drift_ignore`` on top of :data:`DEFAULT_IGNORE` (a webhook's or an APIService's ``caBundle``,
which a certificate injector writes). ``/spec/replicas`` of a scalable kind is left out, too, while a manager that is
not ours owns it (an HPA or ``kubectl scale``): the HPA's replicas are never drift and never forced back.

Correcting (:func:`correct`) applies that same body for real (server-side apply, our field manager): force takes only
the fields the body sets, which never include an ignored one.

Cost (the no-op run with ``drift: report`` must stay cheap, issue 39): an object whose live form already holds every field
the body sets, with the body's value (:func:`in_sync`: lists of the same length, item by item), is not dry-run - a dry-run
apply of it changes no field the body sets, so none can differ; only an object that fails that test pays for the dry run
(a field we set changed or removed, a value the server writes in another form, an item added to a list). The objects of a
release are read concurrently (:func:`detect`, at most the run's concurrency at once).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import comparable
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, NotServed

MODES = ("ignore", "report", "correct")
HIDDEN = "<hidden>"
CA_BUNDLE = "/webhooks/*/clientConfig/caBundle"
DEFAULT_IGNORE = {
    "MutatingWebhookConfiguration": [CA_BUNDLE],
    "ValidatingWebhookConfiguration": [CA_BUNDLE],
    "CustomResourceDefinition": ["/spec/conversion/webhook/clientConfig/caBundle"],
    "APIService": ["/spec/caBundle"],
}
SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")
OUR_MANAGERS = (FIELD_MANAGER, "helm")  # a release's objects are written by helm, a manifest component's by us
SECRET_FIELDS = ("data", "stringData")


def parse_pointer(text):
    """``/a/b~1c`` -> ``["a", "b/c"]`` (RFC 6901)."""
    return [seg.replace("~1", "/").replace("~0", "~") for seg in text.split("/")[1:]]


def pointer(path):
    return "".join("/" + str(seg).replace("~", "~0").replace("/", "~1") for seg in path)


def check_ignore(value, problems):
    """``drift_ignore`` checked: ``{kind: [JSON pointer, ...]}``; problems are added to ``problems``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add("drift_ignore", "must be a mapping of kind to a list of JSON pointers, got %s" % type(value).__name__,
                     value=value, allowed="{kind: [/json/pointer, ...]}")
        return {}
    rules = {}
    for kind, pointers in value.items():
        if isinstance(pointers, str):
            pointers = [pointers]
        if not isinstance(pointers, list) or not all(isinstance(p, str) and p.startswith("/") and len(p) > 1 for p in pointers):
            problems.add("drift_ignore.%s" % kind, "must be a list of JSON pointers starting with /, got %s" % repr(pointers)[:80],
                         value=pointers, allowed="JSON pointers such as /spec/replicas")
            continue
        rules[str(kind)] = list(pointers)
    return rules


def ignore_rules(user):
    """The default rules with the user's (``check_ignore``) on top, per kind, as parsed pointers."""
    rules = {}
    for source in (DEFAULT_IGNORE, user or {}):
        for kind, pointers in source.items():
            rules.setdefault(kind, []).extend(parse_pointer(p) for p in pointers)
    return rules


def _covers(pattern, path):
    return len(path) >= len(pattern) and all(p == "*" or p == str(s) for p, s in zip(pattern, path))


def _strip(node, pattern):
    """Remove what ``pattern`` (a parsed pointer, ``*`` for any segment) names from ``node``, in place."""
    if not pattern or not isinstance(node, (dict, list)):
        return
    head, rest = pattern[0], pattern[1:]
    if isinstance(node, dict):
        keys = list(node) if head == "*" else [head] if head in node else []
        for key in keys:
            if rest:
                _strip(node[key], rest)
            else:
                del node[key]
        return
    indexes = range(len(node)) if head == "*" else [int(head)] if head.isdigit() and int(head) < len(node) else []
    for index in sorted(indexes, reverse=True):
        if rest:
            _strip(node[index], rest)
        else:
            del node[index]


def diff_paths(live, want, path=()):
    """The paths (tuples) where ``want`` differs from ``live``: lists of equal length compared item by item."""
    if isinstance(live, dict) and isinstance(want, dict):
        found = []
        for key in sorted(set(live) | set(want)):
            if key not in live or key not in want:
                found.append(path + (key,))
            else:
                found.extend(diff_paths(live[key], want[key], path + (key,)))
        return found
    if isinstance(live, list) and isinstance(want, list) and len(live) == len(want):
        found = []
        for index, (a, b) in enumerate(zip(live, want)):
            found.extend(diff_paths(a, b, path + (index,)))
        return found
    return [] if live == want else [path]


def _item_key(key, item):
    """Whether a ``managedFields`` list key (``k:{...}`` by merge keys, ``v:...`` by value) names ``item``."""
    try:
        if key.startswith("k:"):
            wanted = json.loads(key[2:])
            return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())
        if key.startswith("v:"):
            return json.loads(key[2:]) == item
    except ValueError:
        return False
    return False


def _owns(fields, obj, path):
    """Whether one manager's ``fieldsV1`` owns ``path`` (descending the live object beside it): the whole path, or a
    prefix it owns as one leaf (an atomic list or map)."""
    for seg in path:
        if not isinstance(fields, dict):
            return False
        if not fields:
            return True  # a leaf: owned whole
        if isinstance(obj, list) and isinstance(seg, int):
            item = obj[seg] if seg < len(obj) else None
            key = next((k for k in fields if _item_key(k, item)), None)
            fields, obj = (fields[key], item) if key else (None, None)
        else:
            fields = fields.get("f:%s" % seg)
            obj = obj.get(seg) if isinstance(obj, dict) else None
    return fields is not None


def manager_of(live, path):
    """The manager (``managedFields``) that owns ``path`` in ``live`` (the latest listed when several share it); None when
    none does (a field removed)."""
    owner = None
    for entry in ((live or {}).get("metadata") or {}).get("managedFields") or []:
        if entry.get("fieldsV1") and _owns(entry["fieldsV1"], live, path):
            owner = entry.get("manager")
    return owner


def _walk(node, path):
    """``(True, the value at path)`` when ``node`` holds ``path`` (dict keys, list indexes), else ``(False, None)``."""
    for seg in path:
        if isinstance(node, dict) and seg in node:
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            node = node[seg]
        else:
            return False, None
    return True, node


def _present(body, path):
    """Whether ``body`` sets ``path`` (the fields a dry-run apply of it can change)."""
    return _walk(body, path)[0]


def _value(obj, path):
    return _walk(obj, path)[1]


def in_sync(body, live):
    """Whether ``live`` holds every field ``body`` sets, with the same value (a ``None`` in the body: absent or None in
    live); lists must have the same length and match item by item. Then a dry-run apply of ``body`` changes none of the
    fields it sets (it sets each to the value it has), so the object has no drift; otherwise the dry run decides."""
    if isinstance(body, dict):
        if not isinstance(live, dict):
            return False
        for key, value in body.items():
            if value is None:
                if live.get(key) is not None:
                    return False
            elif key not in live or not in_sync(value, live[key]):
                return False
        return True
    if isinstance(body, list):
        return isinstance(live, list) and len(body) == len(live) and all(in_sync(item, other) for item, other in zip(body, live))
    if isinstance(body, bool) or isinstance(live, bool):
        return body is live  # never True == 1
    return body == live  # 1 == 1.0: both JSON numbers


def object_drift(cluster, doc, namespace, rules):
    """The drift of one object: None when it matches what a dry-run apply of ``doc`` would make of it, else an entry
    ``{apiVersion, kind, name, namespace, state: missing|drifted, fields: [{path, manager}]}`` with the body to apply
    (``body``) and, for ``--diff``, the drifted fields' ``before``/``after`` (a Secret's values hidden)."""
    body = copy.deepcopy(doc)
    meta = body.setdefault("metadata", {})
    kind, name = body.get("kind"), meta.get("name")
    try:
        namespaced = cluster.is_namespaced(body.get("apiVersion"), kind)
    except NotServed:
        namespaced = True
    if namespaced:
        meta["namespace"] = meta.get("namespace") or namespace
    else:
        meta.pop("namespace", None)
    entry = {"apiVersion": body.get("apiVersion"), "kind": kind, "name": name, "namespace": meta.get("namespace"), "fields": []}
    try:
        live = cluster.get(body.get("apiVersion"), kind, name, meta.get("namespace"))
    except ClusterError as exc:  # e.g. 403: not compared, not corrected, said so
        entry.update(state="unknown", message="not read (%s)" % exc.msg, body=body, before={}, after={})
        return entry
    if live is None:
        entry.update(state="missing", body=body, before={}, after={})
        return entry
    for pattern in rules.get(kind, ()):
        _strip(body, pattern)
    if kind in SCALABLE and manager_of(live, ("spec", "replicas")) not in OUR_MANAGERS + (None,):
        _strip(body, ["spec", "replicas"])  # an HPA's (or kubectl scale's): never drift, never forced back
    if in_sync(body, live):
        return None  # every field the body sets holds its value: no dry run needed
    try:
        dry = cluster.apply(body, dry_run=True)
    except ClusterError as exc:
        entry.update(state="unknown", message="dry-run apply failed (%s)" % exc.msg, body=body, before={}, after={})
        return entry
    live_c, dry_c = comparable(live), comparable(dry)
    # only fields the body sets can be drift: a dry-run apply keeps every other field as it is
    paths = [p for p in diff_paths(live_c, dry_c) if _present(body, p) and not any(_covers(pattern, p) for pattern in rules.get(kind, ()))]
    if not paths:
        return None
    secret = kind == "Secret"
    entry["fields"] = [{"path": pointer(p), "manager": manager_of(live, p)} for p in paths]
    entry.update(state="drifted", body=body,
                 before=dict((pointer(p), HIDDEN if secret and p[0] in SECRET_FIELDS else _value(live_c, p)) for p in paths),
                 after=dict((pointer(p), HIDDEN if secret and p[0] in SECRET_FIELDS else _value(dry_c, p)) for p in paths))
    return entry


def detect(cluster, docs, namespace, rules, workers=1):
    """The drift entries of the objects ``docs`` (dicts with apiVersion, kind and metadata.name) of one component, in
    their order; up to ``workers`` objects read (and dry-run) at once."""
    docs = [doc for doc in docs if isinstance(doc, dict) and doc.get("kind") and (doc.get("metadata") or {}).get("name")]
    workers = max(1, min(int(workers or 1), len(docs)))
    if workers == 1:
        entries = [object_drift(cluster, doc, namespace, rules) for doc in docs]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            entries = list(pool.map(lambda doc: object_drift(cluster, doc, namespace, rules), docs))
    return [entry for entry in entries if entry is not None]


def reported(entries):
    """What the result shows of drift entries: no body, no before/after (those are for ``--diff``)."""
    return [dict((k, v) for k, v in e.items() if k not in ("body", "before", "after")) for e in entries]


def describe(entry):
    """``Deployment ns/name (/spec/x by kubectl-edit)`` or ``ConfigMap ns/name (missing)``."""
    what = "%s %s/%s" % (entry["kind"], entry.get("namespace") or "-", entry["name"])
    if entry["state"] != "drifted":
        return "%s (%s)" % (what, entry["state"])
    return "%s (%s)" % (what, ", ".join("%s by %s" % (f["path"], f["manager"] or "nobody") for f in entry["fields"]))


def correctable(entries):
    """The entries a correction re-applies: drifted or missing release objects (a manifest object is applied with its wave)."""
    return [e for e in entries or () if e["state"] in ("drifted", "missing") and "object" not in e]


def correct(cluster, entries):
    """Apply each drifted or missing object's body for real (server-side apply, our field manager); the entries applied."""
    done = []
    for entry in correctable(entries):
        cluster.apply(entry["body"])
        done.append(entry)
    return done
