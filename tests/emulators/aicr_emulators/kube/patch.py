"""JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes strategic merge patch."""

import copy
import json


class PatchError(ValueError):
    """A patch that cannot be applied; ``code`` is the HTTP status the apiserver answers."""

    def __init__(self, message, code=422):
        super().__init__(message)
        self.code = code


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path, 400)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc, parts, op):
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                raise PatchError("%s operation does not apply: doc is missing path: %s" % (op, "/" + "/".join(parts)))
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise PatchError("%s operation does not apply: doc is missing path: %s" % (op, "/" + "/".join(parts)))
    return cur


def _get(doc, parts, op):
    if not parts:
        return doc
    parent = _resolve(doc, parts, op)
    last = parts[-1]
    try:
        if isinstance(parent, list):
            return parent[int(last)]
        return parent[last]
    except (KeyError, IndexError, ValueError, TypeError):
        raise PatchError("%s operation does not apply: doc is missing path: %s" % (op, "/" + "/".join(parts)))


def _remove(doc, parts, op):
    parent = _resolve(doc, parts, op)
    last = parts[-1]
    try:
        if isinstance(parent, list):
            return parent.pop(int(last))
        return parent.pop(last)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        raise PatchError("%s operation does not apply: doc is missing path: %s" % (op, "/" + "/".join(parts)))


def _add(doc, parts, value, op):
    if not parts:
        return value
    parent = _resolve(doc, parts, op)
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                idx = int(last)
            except ValueError:
                raise PatchError("%s operation does not apply: invalid index %r" % (op, last))
            if idx < 0 or idx > len(parent):
                raise PatchError("%s operation does not apply: index out of bounds: %d" % (op, idx))
            parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError("%s operation does not apply: doc is missing path: %s" % (op, "/" + "/".join(parts)))
    return doc


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations", 400)
    doc = copy.deepcopy(doc)
    for operation in ops:
        if not isinstance(operation, dict) or "op" not in operation:
            raise PatchError("invalid json patch operation %r" % (operation,), 400)
        op = operation["op"]
        parts = _pointer(operation.get("path", ""))
        if op == "add":
            doc = _add(doc, parts, copy.deepcopy(operation.get("value")), op)
        elif op == "remove":
            _remove(doc, parts, op)
        elif op == "replace":
            _get(doc, parts, op)
            if not parts:
                doc = copy.deepcopy(operation.get("value"))
            else:
                _remove(doc, parts, op)
                doc = _add(doc, parts, copy.deepcopy(operation.get("value")), op)
        elif op == "move":
            value = _remove(doc, _pointer(operation.get("from", "")), op)
            doc = _add(doc, parts, value, op)
        elif op == "copy":
            value = copy.deepcopy(_get(doc, _pointer(operation.get("from", "")), op))
            doc = _add(doc, parts, value, op)
        elif op == "test":
            if _get(doc, parts, op) != operation.get("value"):
                raise PatchError("testing value %s failed" % operation.get("path"))
        else:
            raise PatchError("Unexpected kind: %s" % op, 400)
    return doc


def _child(schema, key):
    return schema.prop(key) if schema is not None else None


def strategic_merge_patch(target, patch, schema):
    """Apply a strategic merge patch using the schema's patch strategies and merge keys."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be an object", 400)
    return _smp_map(copy.deepcopy(target) if isinstance(target, dict) else {}, patch, schema)


def _smp_map(out, patch, schema):
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        sub_schema = _child(schema, key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            cur = out.get(key)
            merged = _smp_map(copy.deepcopy(cur) if isinstance(cur, dict) else {}, value, sub_schema)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _smp_list(out.get(key), value, sub_schema)
        else:
            out[key] = value
    if isinstance(retain, list):
        for key in list(out):
            if key not in retain:
                out.pop(key)
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            field = key.split("/", 1)[1]
            _apply_order(out, field, value, _child(schema, field))
    return out


def _apply_order(out, field, order, schema):
    cur = out.get(field)
    if not isinstance(cur, list) or not isinstance(order, list):
        return
    merge_key = schema.patch_merge_key() if schema is not None else None
    if merge_key:
        def ident(item):
            return item.get(merge_key) if isinstance(item, dict) else item
        wanted = [o.get(merge_key) if isinstance(o, dict) else o for o in order]
    else:
        def ident(item):
            return item
        wanted = order
    positions = {json.dumps(w, sort_keys=True): i for i, w in enumerate(wanted)}
    listed = [i for i in cur if json.dumps(ident(i), sort_keys=True) in positions]
    others = [i for i in cur if json.dumps(ident(i), sort_keys=True) not in positions]
    listed.sort(key=lambda i: positions[json.dumps(ident(i), sort_keys=True)])
    out[field] = listed + others


def _smp_list(current, patch, schema):
    merge_key = schema.patch_merge_key() if schema is not None else None
    if merge_key is None or not isinstance(current, list):
        items = [i for i in patch if not (isinstance(i, dict) and i.get("$patch") in ("delete", "replace") and len(i) == 1)]
        return copy.deepcopy(items)
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    out = copy.deepcopy(current)
    if merge_key == "":  # merge of a primitive list: union
        for item in patch:
            if item not in out:
                out.append(copy.deepcopy(item))
        return out
    item_schema = schema.items()
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("unable to find api field in struct for the merge key %r" % merge_key, 400)
        key_value = item.get(merge_key)
        idx = next((i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(merge_key) == key_value), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            clean = _smp_map({}, item, item_schema)
            out.append(clean)
        else:
            out[idx] = _smp_map(out[idx], item, item_schema)
    return out
