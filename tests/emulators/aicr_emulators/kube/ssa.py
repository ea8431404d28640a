"""Field ownership (managedFields, FieldsV1) and server-side apply.

A field set is a set of paths; a path is a tuple of FieldsV1 elements: ``f:<name>`` for a map
key, ``k:<json>`` for an associative-list item, ``v:<json>`` for a set item, and ``.`` for
the list item itself. Lists are associative, sets or atomic according to the schema
(``x-kubernetes-list-type`` / merge keys); maps may be atomic (``x-kubernetes-map-type``).
"""

import copy
import datetime
import json

from .schema import Schema

IGNORED_METADATA = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                    "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName"}
_MISSING = object()


class ApplyConflict(Exception):
    """Server-side apply conflicts: list of (manager, apiVersion, dotted path)."""

    def __init__(self, conflicts):
        super().__init__("%d conflicts" % len(conflicts))
        self.conflicts = conflicts


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key_elem(item, keys):
    return "k:" + json.dumps({k: item.get(k) for k in keys if k in item}, separators=(",", ":"), sort_keys=True)


def _value_elem(value):
    return "v:" + json.dumps(value, separators=(",", ":"), sort_keys=True)


def _child(schema, key):
    return schema.prop(key) if schema is not None else None


def _list_type(schema):
    if schema is None:
        return "atomic", []
    return schema.list_type()


def fields_of(obj, schema, status_mode=None):
    """The field set of an object. status_mode: None (all), 'main' (no status), 'status' (status only)."""
    out = set()
    if not isinstance(obj, dict):
        return out
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if status_mode == "main" and key == "status":
            continue
        if status_mode == "status" and key != "status":
            continue
        if key == "metadata" and isinstance(value, dict):
            sub = _child(schema, "metadata")
            for mkey, mval in value.items():
                if mkey in IGNORED_METADATA:
                    continue
                _collect(mval, _child(sub, mkey), ("f:metadata", "f:" + mkey), out)
            continue
        _collect(value, _child(schema, key), ("f:" + key,), out)
    return out


def _collect(value, schema, path, out):
    if isinstance(value, dict) and value and not (schema is not None and schema.map_type() == "atomic"):
        for key, item in value.items():
            _collect(item, _child(schema, key), path + ("f:" + key,), out)
        return
    if isinstance(value, list) and value:
        ltype, keys = _list_type(schema)
        if ltype == "map" and all(isinstance(i, dict) for i in value):
            item_schema = schema.items()
            for item in value:
                elem = path + (_key_elem(item, keys),)
                out.add(elem + (".",))
                for key, sub in item.items():
                    _collect(sub, _child(item_schema, key), elem + ("f:" + key,), out)
            return
        if ltype == "set":
            for item in value:
                out.add(path + (_value_elem(item),))
            return
    out.add(path)


def fill_key_defaults(value, schema):
    """Fill missing key fields of associative-list items with their defaults (``protocol: TCP`` for ports),
    as the apiserver defaults an apply configuration before merging it."""
    if schema is None:
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            fill_key_defaults(item, _child(schema, key))
    elif isinstance(value, list):
        ltype, keys = schema.list_type()
        item_schema = schema.items()
        for item in value:
            if ltype == "map" and isinstance(item, dict):
                for key in keys:
                    if key not in item:
                        sub = _child(item_schema, key)
                        if sub is not None and "default" in sub.node:
                            item[key] = copy.deepcopy(sub.node["default"])
                        elif key == "protocol":
                            item[key] = "TCP"
            fill_key_defaults(item, item_schema)
    return value


def to_fieldsv1(paths):
    trie = {}
    for path in sorted(paths):
        node = trie
        for elem in path:
            node = node.setdefault(elem, {})
    return trie


def from_fieldsv1(trie, prefix=()):
    out = set()
    if not isinstance(trie, dict):
        return out
    for elem, sub in trie.items():
        path = prefix + (elem,)
        if isinstance(sub, dict) and sub:
            out |= from_fieldsv1(sub, path)
        else:
            out.add(path)
    return out


def get_path(obj, path):
    cur = obj
    for elem in path:
        if elem == ".":
            return cur
        if elem.startswith("f:"):
            if not isinstance(cur, dict) or elem[2:] not in cur:
                return _MISSING
            cur = cur[elem[2:]]
        elif elem.startswith("k:"):
            if not isinstance(cur, list):
                return _MISSING
            want = json.loads(elem[2:])
            cur = next((i for i in cur if isinstance(i, dict) and all(i.get(k) == v for k, v in want.items())), _MISSING)
            if cur is _MISSING:
                return cur
        elif elem.startswith("v:"):
            want = json.loads(elem[2:])
            if not isinstance(cur, list) or want not in cur:
                return _MISSING
            cur = want
        else:
            return _MISSING
    return cur


def remove_path(obj, path):
    """Remove the field at ``path`` (a leaf, a list item via ``.`` or a set value)."""
    if path and path[-1] == ".":
        path = path[:-1]
    if not path:
        return
    parent = get_path(obj, path[:-1])
    last = path[-1]
    if parent is _MISSING:
        return
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        want = json.loads(last[2:])
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in want.items()))]
    elif last.startswith("v:") and isinstance(parent, list):
        want = json.loads(last[2:])
        parent[:] = [i for i in parent if i != want]


def _prune_empty(obj, path):
    """After a removal, drop the maps it left empty (below the top-level fields)."""
    for depth in range(len(path) - 1, 1, -1):
        sub = path[:depth]
        if not sub[-1].startswith("f:"):
            return
        value = get_path(obj, sub)
        if not (isinstance(value, dict) and not value):
            return
        remove_path(obj, sub)


def merge_applied(live, applied, schema):
    """Merge an apply configuration into the live object (maps recurse, lists by their type)."""
    if not isinstance(applied, dict) or not isinstance(live, dict) or (schema is not None and schema.map_type() == "atomic"):
        return copy.deepcopy(applied)
    out = copy.deepcopy(live)
    for key, value in applied.items():
        sub = _child(schema, key)
        cur = out.get(key)
        if isinstance(value, dict) and isinstance(cur, dict):
            out[key] = merge_applied(cur, value, sub)
        elif isinstance(value, list) and isinstance(cur, list):
            ltype, keys = _list_type(sub)
            if ltype == "map" and all(isinstance(i, dict) for i in value + cur):
                merged = copy.deepcopy(cur)
                item_schema = sub.items()
                for item in value:
                    ident = _key_elem(item, keys)
                    idx = next((i for i, c in enumerate(merged) if _key_elem(c, keys) == ident), None)
                    if idx is None:
                        merged.append(copy.deepcopy(item))
                    else:
                        merged[idx] = merge_applied(merged[idx], item, item_schema)
                out[key] = merged
            elif ltype == "set":
                merged = list(cur)
                for item in value:
                    if item not in merged:
                        merged.append(copy.deepcopy(item))
                out[key] = merged
            else:
                out[key] = copy.deepcopy(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _entries(obj):
    return list((obj.get("metadata") or {}).get("managedFields") or [])


def _entry_key(entry):
    return (entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", ""))


def dotted(path):
    """``.spec.replicas`` / ``.spec.containers[name="x"].image`` as the apiserver prints conflicts."""
    out = ""
    for elem in path:
        if elem == ".":
            continue
        if elem.startswith("f:"):
            out += "." + elem[2:]
        elif elem.startswith("k:"):
            want = json.loads(elem[2:])
            out += "[" + ",".join("%s=%s" % (k, json.dumps(v)) for k, v in sorted(want.items())) + "]"
        elif elem.startswith("v:"):
            out += "[%s]" % elem[2:]
    return out


def apply(live, applied, manager, schema, api_version, force=False, subresource=""):
    """Server-side apply of ``applied`` onto ``live`` (None when creating). Returns the new object."""
    status_mode = "status" if subresource == "status" else None
    applied_fields = fields_of(applied, schema, status_mode)
    live = copy.deepcopy(live) if live is not None else {}
    entries = _entries(live)
    me = (manager, "Apply", subresource)
    previous = set()
    for entry in entries:
        if _entry_key(entry) == me:
            previous = from_fieldsv1(entry.get("fieldsV1"))
    conflicts = []
    owned = {}
    for entry in entries:
        key = _entry_key(entry)
        if key == me or entry.get("subresource", "") != subresource:
            continue
        fields = from_fieldsv1(entry.get("fieldsV1"))
        owned[key] = (entry, fields)
        for path in fields & applied_fields:
            if path[-1] == ".":
                continue
            if get_path(live, path) != get_path(applied, path):
                conflicts.append((entry.get("manager", ""), entry.get("apiVersion", api_version), path))
    if conflicts and not force:
        raise ApplyConflict([(m, v, dotted(p)) for m, v, p in sorted(conflicts, key=lambda c: (c[0], c[2]))])
    for manager_name, _version, path in conflicts:
        for key, (_entry, fields) in owned.items():
            if key[0] == manager_name:
                fields.discard(path)
    others = set()
    for _entry, fields in owned.values():
        others |= fields
    result = merge_applied(live, applied, schema)
    for path in sorted(previous - applied_fields, key=len, reverse=True):
        if path in others:
            continue
        remove_path(result, path)
        _prune_empty(result, path)
    new_entries = []
    stamp = now()
    mine = None
    if applied_fields:
        mine = {"manager": manager, "operation": "Apply", "apiVersion": api_version, "time": stamp,
                "fieldsType": "FieldsV1", "fieldsV1": to_fieldsv1(applied_fields)}
        if subresource:
            mine["subresource"] = subresource
    for entry in entries:
        key = _entry_key(entry)
        if key == me:
            if mine is not None:
                if from_fieldsv1(entry.get("fieldsV1")) == applied_fields and entry.get("apiVersion") == api_version:
                    mine["time"] = entry.get("time", stamp)
                new_entries.append(mine)
                mine = None
            continue
        if key in owned:
            fields = {p for p in owned[key][1] if get_path(result, p) is not _MISSING}
            if not fields:
                continue
            entry = dict(entry, fieldsV1=to_fieldsv1(fields))
        new_entries.append(entry)
    if mine is not None:
        new_entries.append(mine)
    result.setdefault("metadata", {})["managedFields"] = new_entries
    return result


def track_update(old, new, manager, schema, api_version, subresource="", operation="Update"):
    """Record ownership for a non-apply write (create, update, patch): sets new managedFields on ``new``."""
    status_mode = "status" if subresource == "status" else None
    old_fields = fields_of(old, schema, status_mode) if old else set()
    new_fields = fields_of(new, schema, status_mode)
    changed = {p for p in new_fields if p not in old_fields or get_path(old, p) != get_path(new, p)}
    removed = {p for p in old_fields - new_fields if get_path(new, p) is _MISSING}
    entries = _entries(old) if old else []
    me = (manager, operation, subresource)
    out = []
    mine = set()
    position = None
    for entry in entries:
        key = _entry_key(entry)
        fields = from_fieldsv1(entry.get("fieldsV1"))
        if key == me:
            mine = fields
            position = len(out)
            continue
        if entry.get("subresource", "") == subresource:
            fields = fields - changed - removed
            fields = {p for p in fields if get_path(new, p) is not _MISSING}
            if not fields:
                continue
            entry = dict(entry, fieldsV1=to_fieldsv1(fields))
        out.append(entry)
    mine = {p for p in (mine | changed) if get_path(new, p) is not _MISSING}
    if mine:
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now(),
                 "fieldsType": "FieldsV1", "fieldsV1": to_fieldsv1(mine)}
        if subresource:
            entry["subresource"] = subresource
        out.insert(len(out) if position is None else position, entry)
    new.setdefault("metadata", {})["managedFields"] = out
    return new


__all__ = ["ApplyConflict", "apply", "track_update", "fields_of", "to_fieldsv1", "from_fieldsv1", "Schema"]
