"""Decode Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``).

The wire format is the ``k8s\\x00`` magic followed by a ``runtime.Unknown`` message whose ``raw``
field holds the object's own message. The message layouts below are transcribed from the
upstream ``generated.proto`` files of k8s.io/api and k8s.io/apimachinery for the kinds clients send
as protobuf (helm stores releases in Secrets; kubectl's typed ``create`` commands).
An encoder is included for tests and round trips.
"""

import base64
import datetime
import json

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a decodable Kubernetes protobuf message."""


S, B, I64, I32, BOOL, TIME, FIELDSV1 = "string", "bytes", "int64", "int32", "bool", "time", "fieldsv1"

TYPE_META = {1: ("apiVersion", S), 2: ("kind", S)}
UNKNOWN = {1: ("typeMeta", TYPE_META), 2: ("raw", B), 3: ("contentEncoding", S), 4: ("contentType", S)}

OWNER_REFERENCE = {1: ("kind", S), 3: ("name", S), 4: ("uid", S), 5: ("apiVersion", S), 6: ("controller", BOOL),
                   7: ("blockOwnerDeletion", BOOL)}
MANAGED_FIELDS_ENTRY = {1: ("manager", S), 2: ("operation", S), 3: ("apiVersion", S), 4: ("time", TIME),
                        6: ("fieldsType", S), 7: ("fieldsV1", FIELDSV1), 8: ("subresource", S)}
OBJECT_META = {
    1: ("name", S), 2: ("generateName", S), 3: ("namespace", S), 4: ("selfLink", S), 5: ("uid", S),
    6: ("resourceVersion", S), 7: ("generation", I64), 8: ("creationTimestamp", TIME), 9: ("deletionTimestamp", TIME),
    10: ("deletionGracePeriodSeconds", I64), 11: ("labels", ("map", S, S)), 12: ("annotations", ("map", S, S)),
    13: ("ownerReferences", [OWNER_REFERENCE]), 14: ("finalizers", [S]), 17: ("managedFields", [MANAGED_FIELDS_ENTRY]),
}
LIST_META = {1: ("selfLink", S), 2: ("resourceVersion", S), 3: ("continue", S), 4: ("remainingItemCount", I64)}
LOCAL_OBJECT_REFERENCE = {1: ("name", S)}
OBJECT_REFERENCE = {1: ("kind", S), 2: ("namespace", S), 3: ("name", S), 4: ("uid", S), 5: ("apiVersion", S),
                    6: ("resourceVersion", S), 7: ("fieldPath", S)}
CONDITION_NS = {1: ("type", S), 2: ("status", S), 4: ("lastTransitionTime", TIME), 5: ("reason", S), 6: ("message", S)}

SECRET = {1: ("metadata", OBJECT_META), 2: ("data", ("map", S, B)), 3: ("type", S), 4: ("stringData", ("map", S, S)),
          5: ("immutable", BOOL)}
CONFIG_MAP = {1: ("metadata", OBJECT_META), 2: ("data", ("map", S, S)), 3: ("binaryData", ("map", S, B)),
              4: ("immutable", BOOL)}
NAMESPACE = {1: ("metadata", OBJECT_META), 2: ("spec", {1: ("finalizers", [S])}),
             3: ("status", {1: ("phase", S), 2: ("conditions", [CONDITION_NS])})}
SERVICE_ACCOUNT = {1: ("metadata", OBJECT_META), 2: ("secrets", [OBJECT_REFERENCE]),
                   3: ("imagePullSecrets", [LOCAL_OBJECT_REFERENCE]), 4: ("automountServiceAccountToken", BOOL)}
PRECONDITIONS = {1: ("uid", S), 2: ("resourceVersion", S)}
DELETE_OPTIONS = {1: ("gracePeriodSeconds", I64), 2: ("preconditions", PRECONDITIONS), 3: ("orphanDependents", BOOL),
                  4: ("propagationPolicy", S), 5: ("dryRun", [S]), 6: ("ignoreStoreReadErrorWithClusterBreakingPotential", BOOL)}
EVENT_SOURCE = {1: ("component", S), 2: ("host", S)}
EVENT = {1: ("metadata", OBJECT_META), 2: ("involvedObject", OBJECT_REFERENCE), 3: ("reason", S), 4: ("message", S),
         5: ("source", EVENT_SOURCE), 6: ("firstTimestamp", TIME), 7: ("lastTimestamp", TIME), 8: ("count", I32),
         9: ("type", S), 12: ("reportingComponent", S), 13: ("reportingInstance", S), 11: ("action", S)}

MESSAGES = {
    ("v1", "Secret"): SECRET,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Event"): EVENT,
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
}


def _varint(data, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ProtobufError("varint too long")


def _fields(data):
    """Yield (field number, wire type, value) of one message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated length-delimited field %d" % number)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtobufError("unsupported wire type %d" % wire)
        yield number, wire, value


def _signed(value):
    """Varints of negative int32/int64 values are 64-bit two's complement."""
    if value >= 1 << 63:
        value -= 1 << 64
    return value


def _scalar(kind, value):
    if kind == S:
        return bytes(value).decode("utf-8")
    if kind == B:
        return base64.b64encode(bytes(value)).decode("ascii")
    if kind == I64:
        return _signed(value)
    if kind == I32:
        return _signed(value)
    if kind == BOOL:
        return bool(value)
    if kind == TIME:
        fields = {n: v for n, _wire, v in _fields(value)}
        seconds = _signed(fields.get(1, 0))
        stamp = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == FIELDSV1:
        fields = {n: v for n, _wire, v in _fields(value)}
        return json.loads(bytes(fields.get(1, b"{}")).decode("utf-8"))
    raise ProtobufError("unknown scalar kind %r" % (kind,))


def decode_message(data, spec):
    """Decode one message to a JSON-shaped dict using a field map."""
    out = {}
    for number, _wire, value in _fields(data):
        if number not in spec:
            continue  # unknown fields are skipped, like proto3 parsers do
        name, kind = spec[number]
        if isinstance(kind, tuple) and kind[0] == "map":
            entry = {n: v for n, _wire, v in _fields(value)}
            key = _scalar(kind[1], entry.get(1, b""))
            raw = entry.get(2, b"" if kind[2] in (S, B) else 0)
            out.setdefault(name, {})[key] = _scalar(kind[2], raw)
        elif isinstance(kind, list):
            item = kind[0]
            if isinstance(item, dict):
                out.setdefault(name, []).append(decode_message(value, item))
            elif item in (S, B, TIME):
                out.setdefault(name, []).append(_scalar(item, value))
            else:  # packed or unpacked varints
                if isinstance(value, (bytes, bytearray)):
                    pos = 0
                    while pos < len(value):
                        num, pos = _varint(value, pos)
                        out.setdefault(name, []).append(_scalar(item, num))
                else:
                    out.setdefault(name, []).append(_scalar(item, value))
        elif isinstance(kind, dict):
            out[name] = decode_message(value, kind)
        else:
            out[name] = _scalar(kind, value)
    return out


def decode(body):
    """Decode a protobuf request body into a JSON-shaped object (dict with apiVersion and kind)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("protobuf body does not start with the k8s magic prefix")
    unknown = _decode_unknown(body[len(MAGIC):])
    type_meta = unknown.get("typeMeta", {})
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    spec = MESSAGES.get((api_version, kind))
    if spec is None:
        raise ProtobufError("protobuf bodies of %s %s are not supported by the emulator; send JSON" % (api_version, kind))
    obj = decode_message(unknown.get("raw", b""), spec)
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj


def _decode_unknown(data):
    out = {}
    for number, _wire, value in _fields(data):
        if number == 1:
            out["typeMeta"] = decode_message(value, TYPE_META)
        elif number == 2:
            out["raw"] = bytes(value)
        elif number == 3:
            out["contentEncoding"] = bytes(value).decode()
        elif number == 4:
            out["contentType"] = bytes(value).decode()
    return out


# ---- encoder (tests, round trips) -------------------------------------------------------------

def _enc_varint(value):
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _enc_field(number, wire, payload):
    key = _enc_varint((number << 3) | wire)
    if wire == 2:
        return key + _enc_varint(len(payload)) + payload
    return key + payload


def _enc_scalar(kind, value):
    """(wire type, payload) of one scalar."""
    if kind == S:
        return 2, value.encode("utf-8")
    if kind == B:
        return 2, base64.b64decode(value)
    if kind in (I64, I32):
        return 0, _enc_varint(int(value))
    if kind == BOOL:
        return 0, _enc_varint(1 if value else 0)
    if kind == TIME:
        stamp = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        return 2, _enc_field(1, 0, _enc_varint(int(stamp.timestamp())))
    if kind == FIELDSV1:
        return 2, _enc_field(1, 2, json.dumps(value, separators=(",", ":")).encode())
    raise ProtobufError("unknown scalar kind %r" % (kind,))


def encode_message(obj, spec):
    out = bytearray()
    for number in sorted(spec):
        name, kind = spec[number]
        if name not in obj or obj[name] is None:
            continue
        value = obj[name]
        if isinstance(kind, tuple) and kind[0] == "map":
            for key in sorted(value):
                entry = _enc_field(1, *_enc_scalar(kind[1], key)) + _enc_field(2, *_enc_scalar(kind[2], value[key]))
                out += _enc_field(number, 2, entry)
        elif isinstance(kind, list):
            for item in value:
                if isinstance(kind[0], dict):
                    out += _enc_field(number, 2, encode_message(item, kind[0]))
                else:
                    out += _enc_field(number, *_enc_scalar(kind[0], item))
        elif isinstance(kind, dict):
            out += _enc_field(number, 2, encode_message(value, kind))
        else:
            out += _enc_field(number, *_enc_scalar(kind, value))
    return bytes(out)


def encode(obj):
    """Encode a JSON-shaped object of a supported kind as a k8s protobuf body."""
    spec = MESSAGES.get((obj.get("apiVersion"), obj.get("kind")))
    if spec is None:
        raise ProtobufError("cannot encode %s %s" % (obj.get("apiVersion"), obj.get("kind")))
    type_meta = encode_message({"apiVersion": obj["apiVersion"], "kind": obj["kind"]}, TYPE_META)
    raw = encode_message(obj, spec)
    return MAGIC + _enc_field(1, 2, type_meta) + _enc_field(2, 2, raw) + _enc_field(3, 2, b"") + _enc_field(4, 2, b"")
