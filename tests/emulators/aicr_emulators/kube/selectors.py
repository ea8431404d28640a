"""Label and field selectors with the apiserver's string syntax."""

import re


class SelectorError(ValueError):
    """A selector string the apiserver would reject (400 BadRequest)."""


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|>|<|[A-Za-z0-9_./-]+)")


def _tokens(text):
    pos = 0
    out = []
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise SelectorError("unable to parse requirement: invalid character in %r" % text[pos:])
        out.append(match.group(1))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def parse_label_selector(text):
    """Parse ``a=b,c!=d,e in (x,y),!f,g`` into a list of (key, op, values)."""
    if not text or not text.strip():
        return []
    toks = _tokens(text)
    reqs = []
    i = 0

    def expect_word(idx):
        if idx >= len(toks) or toks[idx] in ("!=", "==", "=", "(", ")", ",", "!", ">", "<"):
            raise SelectorError("unable to parse requirement: found %r, expected: identifier" % (toks[idx] if idx < len(toks) else "EOS"))
        return toks[idx]

    while i < len(toks):
        if toks[i] == "!":
            key = expect_word(i + 1)
            reqs.append((key, "!", []))
            i += 2
        else:
            key = expect_word(i)
            i += 1
            if i >= len(toks) or toks[i] == ",":
                reqs.append((key, "exists", []))
            elif toks[i] in ("=", "==", "!="):
                op = "!=" if toks[i] == "!=" else "="
                if i + 1 < len(toks) and toks[i + 1] != ",":
                    reqs.append((key, op, [toks[i + 1]]))
                    i += 2
                else:
                    reqs.append((key, op, [""]))
                    i += 1
            elif toks[i] in (">", "<"):
                value = expect_word(i + 1)
                try:
                    int(value)
                except ValueError:
                    raise SelectorError("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
                reqs.append((key, toks[i], [value]))
                i += 2
            elif toks[i] in ("in", "notin"):
                op = toks[i]
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    raise SelectorError("unable to parse requirement: found %r, expected: '('" % (toks[i] if i < len(toks) else "EOS"))
                i += 1
                values = []
                while i < len(toks) and toks[i] != ")":
                    if toks[i] != ",":
                        values.append(toks[i])
                    i += 1
                if i >= len(toks):
                    raise SelectorError("unable to parse requirement: found 'EOS', expected: ')'")
                i += 1
                reqs.append((key, op, values))
            else:
                raise SelectorError("unable to parse requirement: found %r, expected: in, notin, =, ==, !=, gt, lt" % toks[i])
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError("found %r, expected: ',' or 'end of string'" % toks[i])
            i += 1
    return reqs


def label_match(reqs, labels):
    labels = labels or {}
    for key, op, values in reqs:
        present = key in labels
        value = labels.get(key)
        if op == "exists" and not present:
            return False
        if op == "!" and present:
            return False
        if op in ("=", "in") and (not present or value not in values):
            return False
        if op in ("!=", "notin") and present and value in values:
            return False
        if op in (">", "<"):
            try:
                num = int(value)
            except (TypeError, ValueError):
                return False
            if (op == ">" and num <= int(values[0])) or (op == "<" and num >= int(values[0])):
                return False
    return True


def selector_from_label_selector_object(sel):
    """A metav1.LabelSelector (matchLabels/matchExpressions) to requirements."""
    reqs = []
    if not sel:
        return reqs
    for key, value in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append((key, "=", [value]))
    for expr in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(expr.get("operator"))
        if op:
            reqs.append((expr.get("key"), op, list(expr.get("values") or [])))
    return reqs


# Field labels each kind supports beyond metadata.name / metadata.namespace.
FIELD_LABELS = {
    ("", "pods"): ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                   "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
    ("", "events"): ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                     "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                     "reason", "reportingComponent", "source", "type"],
    ("events.k8s.io", "events"): ["regarding.kind", "regarding.namespace", "regarding.name", "reason", "type"],
    ("", "secrets"): ["type"],
    ("", "namespaces"): ["status.phase"],
    ("", "nodes"): ["spec.unschedulable"],
    ("", "replicationcontrollers"): ["status.replicas"],
    ("apps", "replicasets"): ["status.replicas"],
    ("batch", "jobs"): ["status.successful"],
    ("certificates.k8s.io", "certificatesigningrequests"): ["spec.signerName"],
    ("resource.k8s.io", "resourceslices"): ["spec.nodeName", "spec.driver"],
}


def parse_field_selector(text, group, plural, custom=False):
    """Parse ``a=b,c!=d`` for the field labels the resource supports."""
    if not text or not text.strip():
        return []
    reqs = []
    allowed = ["metadata.name", "metadata.namespace"] + FIELD_LABELS.get((group, plural), [])
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            op = "!="
        elif "==" in part:
            key, value = part.split("==", 1)
            op = "="
        elif "=" in part:
            key, value = part.split("=", 1)
            op = "="
        else:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (text, part))
        key = key.strip()
        if key not in allowed and not (custom and key in ("metadata.name", "metadata.namespace")):
            raise SelectorError('field label not supported: %s' % key)
        reqs.append((key, op, value.strip()))
    return reqs


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_match(reqs, obj):
    for key, op, value in reqs:
        actual = field_value(obj, key)
        if key == "status.successful":
            actual = str((obj.get("status") or {}).get("succeeded") or 0)
        if (op == "=" and actual != value) or (op == "!=" and actual == value):
            return False
    return True
