# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The bounds on what the collection parses, decompresses and unpacks: every cap, its default and its override, in one place.

A small input must not cost unbounded time or memory: a YAML alias bomb (350 bytes, nine levels of nine aliases: 9**9
nodes once expanded), a gzip bomb in a helm release Secret (707 KiB that inflate to 823 MiB), a chart archive member of
gigabytes. Every YAML document (``_common.deps.load``/``load_all``/``compose``), every JSON text (:func:`load_json`),
every helm release Secret (:func:`gunzip`), every chart archive (:func:`read_tar`) and recipe_resolve's result
(:func:`check_value`) is read against :func:`limits`:

=============  ==================================  =========  ======================================================
limit          environment variable                default    what it bounds
=============  ==================================  =========  ======================================================
input bytes    ``AICR_RUNTIME_MAX_INPUT_BYTES``    16 MiB     one YAML/JSON text, one gunzipped release, one member
nodes          ``AICR_RUNTIME_MAX_NODES``          1000000    nodes of one document (keys included), aliases expanded
alias nodes    ``AICR_RUNTIME_MAX_ALIAS_NODES``    100000     the nodes aliases add to one document once expanded
depth          ``AICR_RUNTIME_MAX_DEPTH``          200        nesting of one document
archive bytes  ``AICR_RUNTIME_MAX_ARCHIVE_BYTES``  256 MiB    the decompressed stream of one chart archive
=============  ==================================  =========  ======================================================

The defaults are far above real inputs: the AICR catalog's deepest document nests 25 levels, its largest (a Gateway API
CRD) has about 4 500 nodes and no alias, a helm release of a large chart inflates to a few MiB. The variables are read
on the host the module runs on: set them with the task's or play's ``environment:`` keyword. An input past a limit is
refused in one line (:class:`~_common.errors.AicrError`) naming the input, the limit and its variable - never parsed on.
Not bounded here: the Kubernetes API server's answers (a namespace's Secret list is legitimately large; the server
bounds each object) and helm's own output.

Alias expansion is measured on the composed node graph, where an alias is a second reference to one node: the expanded
size of each node is computed once (memoised), so a bomb is measured in microseconds, before anything is constructed.
libyaml's composer recurses in C, and a document nested some 30 000 levels deep overflows the C stack (a segfault, no
message): a bound of the depth from the text (:func:`yaml_depth_within`) comes first, and only a text it cannot clear is walked
event by event (:func:`check_yaml_events`) before composing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import tarfile
import zlib

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

MIB = 1024 * 1024
# name: (environment variable, default, what the limit is called in a message)
LIMITS = {
    "bytes": ("AICR_RUNTIME_MAX_INPUT_BYTES", 16 * MIB, "input bytes"),
    "nodes": ("AICR_RUNTIME_MAX_NODES", 1000000, "nodes"),
    "alias_nodes": ("AICR_RUNTIME_MAX_ALIAS_NODES", 100000, "alias nodes"),
    "depth": ("AICR_RUNTIME_MAX_DEPTH", 200, "depth"),
    "archive_bytes": ("AICR_RUNTIME_MAX_ARCHIVE_BYTES", 256 * MIB, "archive bytes"),
}
# Below this bound the text is composed directly: libyaml's C recursion overflows an 8 MiB stack between 20 000 and
# 40 000 levels (measured), and a thread's stack may be a quarter of that.
SAFE_COMPOSE_DEPTH = 2000
_CHUNK = 256 * 1024


class Limits(object):
    """The caps in force (``bytes``, ``nodes``, ``alias_nodes``, ``depth``, ``archive_bytes``); see :func:`limits`."""

    __slots__ = tuple(LIMITS)

    def __init__(self, **values):
        for name, (_env, default, _label) in LIMITS.items():
            setattr(self, name, int(values.get(name, default)))


def limits(environ=None):
    """The :class:`Limits` of this process: each default, or its environment variable (a positive integer)."""
    environ = os.environ if environ is None else environ
    values = {}
    for name, (env, _default, _label) in LIMITS.items():
        raw = environ.get(env)
        if raw in (None, ""):
            continue
        try:
            value = int(str(raw).strip())
        except ValueError:
            value = 0
        if value <= 0:
            raise AicrError("environment variable %s: %r is not allowed; use a positive integer (the %s limit)" % (env, raw, _label),
                            field=env, value=raw)
        values[name] = value
    return Limits(**values)


def refuse(source, what, name, lim):
    """The one-line refusal: ``<source>: refused, <what>: past the <limit> limit of <n> (<variable>)``."""
    env, _default, label = LIMITS[name]
    cap = getattr(lim, name)
    shown = "%d MiB" % (cap // MIB) if name.endswith("bytes") and cap % MIB == 0 else "%d" % cap
    return AicrError("%s: refused, %s: past the %s limit of %s (raise it with the environment variable %s)" % (source, what, label, shown, env),
                     field=source, limit=label, limit_value=cap, limit_variable=env)


def check_bytes(data, source, lim=None):
    """Refuse ``data`` (text or bytes) longer than the input bytes limit."""
    lim = lim or limits()
    if data is not None and len(data) > lim.bytes:
        raise refuse(source, "%d bytes" % len(data), "bytes", lim)
    return data


def read_bounded(handle, source, lim=None):
    """At most the input bytes limit read from ``handle`` (a file or a response); more is refused, never read whole."""
    lim = lim or limits()
    data = handle.read(lim.bytes + 1)
    if len(data) > lim.bytes:
        raise refuse(source, "more than %d bytes" % lim.bytes, "bytes", lim)
    return data


def yaml_depth_within(text, depth):
    """Whether the YAML ``text`` surely nests at most ``depth`` levels, from the text alone (no parsing): block nesting
    needs one column of indentation or an indicator (``-``, ``?``, ``:``) per level, flow nesting one bracket per level."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    room = depth - 2 - text.count("[") - text.count("{")
    return room > 0 and re.search(r"\n[ \t?:-]{%d}" % room, "\n" + text) is None  # "\n" first: a fast scan


def _children(node):
    value = node.value
    if type(value) is not list:  # a scalar (its value is a str)  pylint: disable=unidiomatic-typecheck
        return ()
    if value and type(value[0]) is tuple:  # a mapping: (key, value) pairs  pylint: disable=unidiomatic-typecheck
        return [part for pair in value for part in pair]
    return value


def check_yaml_events(parser, source, lim):
    """Walk ``parser``'s events (a fresh loader), refusing a nesting past the depth limit before anything is composed."""
    depth = 0
    while parser.check_event():
        name = type(parser.get_event()).__name__
        if name in ("SequenceStartEvent", "MappingStartEvent"):
            depth += 1
            if depth > lim.depth:
                raise refuse(source, "nesting deeper than %d levels" % lim.depth, "depth", lim)
        elif name in ("SequenceEndEvent", "MappingEndEvent"):
            depth -= 1


def check_yaml_node(root, source, lim):
    """Refuse a composed YAML document whose expanded tree (aliases followed) is too deep, too big, or grown too much by
    aliases; the graph is walked once per distinct node. A recursive alias (a node containing an alias of itself) counts
    as one node where it recurs: the readers cut it there (values_schema makes it a ``$ref``)."""
    # breadth first, one level at a time (no per-node tuples: this runs on every document read); only collections can
    # be shared in a way that expands, so only they are remembered
    seen = set()
    shared = False
    count, depth = 0, 0
    level = [root]
    while level:
        depth += 1
        if depth > lim.depth:
            raise refuse(source, "nesting deeper than %d levels" % lim.depth, "depth", lim)
        below = []
        for node in level:
            value = node.value
            if type(value) is not list:  # pylint: disable=unidiomatic-typecheck
                count += 1
                continue
            if id(node) in seen:
                shared = True  # an alias: a second reference to a collection
                continue
            seen.add(id(node))
            count += 1
            if value and type(value[0]) is tuple:  # pylint: disable=unidiomatic-typecheck
                for pair in value:
                    below.extend(pair)
            else:
                below.extend(value)
        if count > lim.nodes:
            raise refuse(source, "more than %d nodes" % lim.nodes, "nodes", lim)
        level = below
    if not shared:
        return count
    size, height, open_ = {}, {}, set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            # a child still open is an ancestor (a recursive alias, which the readers cut where it recurs): one node
            children = _children(node)
            size[key] = 1 + sum(size.get(id(child), 1) for child in children)
            height[key] = 1 + max([height.get(id(child), 1) for child in children] or [0])
            continue
        if key in size or key in open_:
            continue
        open_.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    total = size[id(root)]
    if total - count > lim.alias_nodes:
        raise refuse(source, "its aliases expand to %d more nodes" % (total - count), "alias_nodes", lim)
    if total > lim.nodes:
        raise refuse(source, "%d nodes once its aliases are expanded" % total, "nodes", lim)
    if height[id(root)] > lim.depth:
        raise refuse(source, "nesting %d levels once its aliases are expanded" % height[id(root)], "depth", lim)
    return total


def check_value(value, source, lim=None):
    """Refuse a parsed value (dicts, lists, scalars) with more nodes or deeper nesting than the limits allow, counting a
    shared object each time it appears (as a copy or a JSON dump would): the walk stops at the limit."""
    lim = lim or limits()
    count = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > lim.nodes:
            raise refuse(source, "more than %d nodes" % lim.nodes, "nodes", lim)
        if depth > lim.depth:
            raise refuse(source, "nesting deeper than %d levels" % lim.depth, "depth", lim)
        if isinstance(item, dict):
            count += len(item)  # the keys
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1) for child in item)
    return count


def load_json(text, source, lim=None):
    """``json.loads(text)`` within the limits (bytes before parsing, then nodes and depth); ValueError as json's."""
    lim = lim or limits()
    check_bytes(text, source, lim)
    try:
        value = json.loads(text)
    except RecursionError:
        raise refuse(source, "nesting deeper than the JSON parser's recursion limit", "depth", lim)
    check_value(value, source, lim)
    return value


def gunzip(data, source, lim=None):
    """The gzip stream ``data`` decompressed in chunks, refused as soon as it would go past the input bytes limit (a bomb
    is never inflated whole). ``zlib.error`` for a stream that is not gzip."""
    lim = lim or limits()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    parts, total = [], 0
    pending = data
    while pending and not inflater.eof:
        piece = inflater.decompress(pending, _CHUNK)
        pending = inflater.unconsumed_tail
        total += len(piece)
        if total > lim.bytes:
            raise refuse(source, "it decompresses to more than %d bytes" % lim.bytes, "bytes", lim)
        parts.append(piece)
    if not inflater.eof:
        raise zlib.error("incomplete gzip stream")
    return b"".join(parts)


class _Stream(object):
    """A decompressed archive stream that refuses to go past the archive bytes limit (tarfile reads it sequentially)."""

    def __init__(self, raw, source, lim):
        self.raw, self.source, self.lim, self.position = raw, source, lim, 0

    def read(self, size=-1):
        size = _CHUNK if size is None or size < 0 else size
        data = self.raw.read(size)
        self.position += len(data)
        if self.position > self.lim.archive_bytes:
            raise refuse(self.source, "its decompressed stream goes past %d bytes" % self.lim.archive_bytes, "archive_bytes", self.lim)
        return data


class open_tar(object):  # pylint: disable=invalid-name  # used as a function, in a with statement
    """A tarfile in stream mode (members in order, each read while it is the current one) over the (gzipped or plain) tar
    stream ``fileobj`` (a path or a binary file object), decompressed here and refused past the archive bytes limit."""

    def __init__(self, fileobj, source, lim=None):
        self.fileobj, self.source, self.lim = fileobj, source, lim or limits()
        self.raw = self.archive = None

    def __enter__(self):
        import gzip  # pylint: disable=import-outside-toplevel
        own = isinstance(self.fileobj, str)
        raw = open(self.fileobj, "rb") if own else self.fileobj
        self.raw = raw if own else None
        try:
            head = raw.read(2)
            raw.seek(-len(head), 1)
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw
            self.archive = tarfile.open(fileobj=_Stream(stream, self.source, self.lim), mode="r|")
        except BaseException:
            if self.raw is not None:
                self.raw.close()
            raise
        return self.archive

    def __exit__(self, *exc):
        try:
            self.archive.close()
        finally:
            if self.raw is not None:
                self.raw.close()
        return False


def read_tar(fileobj, source, wanted, lim=None):
    """``{member name: bytes}`` of the regular members of a (gzipped) tar stream for which ``wanted(name)`` holds, read as a
    stream (:class:`open_tar`): a wanted member past the input bytes limit and a stream past the archive bytes limit are
    refused before they are read. ``fileobj``: a path or a binary file object. ``tarfile.TarError``/``OSError`` for a
    broken archive."""
    lim = lim or limits()
    try:
        files = {}
        with open_tar(fileobj, source, lim) as archive:
            for member in archive:
                if not member.isfile() or not wanted(member.name):
                    continue
                if member.size > lim.bytes:
                    raise refuse(source, "member %s has %d bytes" % (member.name, member.size), "bytes", lim)
                handle = archive.extractfile(member)
                files[member.name] = handle.read() if handle is not None else b""
        return files
    except (EOFError, zlib.error) as exc:
        raise tarfile.TarError(str(exc) or type(exc).__name__)
