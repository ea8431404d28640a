# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Early start: a dependent's ``helm upgrade --install`` started while its dependencies become Ready, held at a gate.

helm spends most of an install before its first write: process start, kubeconfig and TLS, the release history,
discovery (``Capabilities``), loading and rendering the chart. The post-renderer runs after all of that and before
helm writes anything (the release record, then the resources). So a helm started early with a post-renderer that
waits for this run's word does its slow part while the dependencies' pods become Ready, and writes only once the
gate opens: the post-renderer hands helm's manifests back unchanged on "go"; on "stop" (a dependency failed, the
run ends, the Lease was lost) or when this process goes away it exits non-zero and helm writes nothing.

That is equivalent to starting helm at the gate only when nothing helm reads before its post-renderer can change
between the two moments, which :func:`chart_traits` and :func:`provides_api` decide:

- the chart (with its subcharts) has no ``crds/`` files: helm installs those *before* rendering;
- no template calls ``lookup`` (it reads the cluster while rendering);
- every dependency still becoming Ready adds no API types (no CustomResourceDefinition or APIService among its
  objects, no ``crds/``): ``.Capabilities.APIVersions`` and helm's REST mapping are read before the post-renderer.

Otherwise the component's helm starts at the gate, as without early start.

helm 3 takes the post-renderer as an executable (``--post-renderer PATH --post-renderer-args ...``), helm 4 as the
name of a ``postrenderer/v1`` plugin, which :class:`GateServer` writes into a plugins directory of its own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import re
import secrets
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
import zlib

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

PLUGIN_NAME = "aicr-runtime-gate"
GO = b"go\n"
TOKEN_TIMEOUT = 10.0  # seconds a connecting post-renderer has to name itself
API_KINDS = ("CustomResourceDefinition", "APIService")
# `lookup` as a template function: `lookup "v1" ...`, `(lookup ...)`, `| lookup` never occurs; comments match too
# (conservative: such a chart starts at its gate)
_LOOKUP = re.compile(r"\blookup\s+[\"'(]|\(\s*lookup\b")
MAX_SCANNED_BYTES = 64 * 1024 * 1024

# The post-renderer: reads helm's manifests, asks the gate, writes them back unchanged on "go".
# Runs with the interpreter of this module (shebang), standard library only, isolated (-I: no PYTHON* variables, no
# user site, so nothing in helm's environment can load code into it) and without site (-S: a quicker start).
# It uses the C module _socket, not socket: socket's enum classes cost 15 ms of CPU per start (measured: 28 -> 12 ms per
# post-renderer, one per early helm). Once the manifests are written it leaves without the interpreter's finalisation
# (posix._exit, posix is built in), which helm waits for after its gate opened: gate open -> exit 3.8 -> 1.0 ms.
POST_RENDERER = r'''
import sys
from _socket import AF_UNIX, SOCK_STREAM, socket
from posix import _exit

def main(argv):
    # helm 4 passes the plugin's arguments after its own, helm 3 only ours: the last two are ours
    path, token = argv[-2], argv[-1]
    manifests = sys.stdin.buffer.read()
    answer = b""
    try:
        conn = socket(AF_UNIX, SOCK_STREAM)
        conn.connect(path)
        conn.sendall(token.encode("ascii") + b"\n")
        while not answer.endswith(b"\n"):
            chunk = conn.recv(256)
            if not chunk:
                break
            answer += chunk
    except OSError as exc:
        answer = ("stop the gate cannot be reached (%s)\n" % exc).encode()
    if answer != b"go\n":
        reason = answer.decode("utf-8", "replace").strip()[5:] or "this run ended before its dependencies were Ready"
        sys.stderr.write("aicr.runtime gate closed: %s\n" % reason)
        return 3
    sys.stdout.buffer.write(manifests)
    sys.stdout.buffer.flush()
    _exit(0)

sys.exit(main(sys.argv))
'''

PLUGIN_YAML = """apiVersion: v1
name: %(name)s
type: postrenderer/v1
version: 1.0.0
runtime: subprocess
runtimeConfig:
  platformCommand:
  - command: %(command)s
"""


class Gate(object):
    """One component's gate: the token its post-renderer names, and what it is told."""

    def __init__(self, name):
        self.name = name
        self.token = secrets.token_hex(16)
        self.decision = None  # b"go\n" or b"stop <reason>\n"
        self.conn = None


class GateServer(object):
    """A Unix socket in a private directory that post-renderers connect to; one :class:`Gate` per early helm."""

    def __init__(self, workdir, helm_major):
        self.dir = os.path.join(workdir, "gate")
        os.mkdir(self.dir, 0o700)
        path = os.path.join(self.dir, "s")
        self._own_socket_dir = None
        if len(path.encode()) > 100:  # sun_path holds 108 bytes: a deep TMPDIR gets a short private directory
            self._own_socket_dir = tempfile.mkdtemp(prefix="aicr-gate-")
            path = os.path.join(self._own_socket_dir, "s")
        self.path = path
        self.script = os.path.join(self.dir, "post-render.py")
        with open(self.script, "w") as handle:
            handle.write("#!%s -IS\n%s" % (sys.executable, POST_RENDERER))
        os.chmod(self.script, 0o700)
        self.helm_major = helm_major
        self.plugins_dir = None
        if helm_major >= 4:
            self.plugins_dir = os.path.join(self.dir, "plugins")
            os.makedirs(os.path.join(self.plugins_dir, PLUGIN_NAME), 0o700)
            with open(os.path.join(self.plugins_dir, PLUGIN_NAME, "plugin.yaml"), "w") as handle:
                handle.write(PLUGIN_YAML % {"name": PLUGIN_NAME, "command": self.script})
        self._gates = {}
        self._lock = threading.Lock()
        self._closed = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._accept, name="aicr-gate", daemon=True)
        self._thread.start()

    def new_gate(self, name):
        gate = Gate(name)
        with self._lock:
            self._gates[gate.token] = gate
        return gate

    def helm_flags(self, gate):
        """The flags that make one ``helm upgrade --install`` wait at ``gate``."""
        target = PLUGIN_NAME if self.helm_major >= 4 else self.script
        return ["--post-renderer", target, "--post-renderer-args", self.path, "--post-renderer-args", gate.token]

    def helm_env(self, env):
        """helm 4 finds the plugin in ``HELM_PLUGINS`` (a list): ours first, then the one helm would use."""
        if not self.plugins_dir:
            return env
        env = dict(env)
        data = env.get("HELM_DATA_HOME") or os.path.join(env.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "helm")
        env["HELM_PLUGINS"] = os.pathsep.join([self.plugins_dir, os.path.join(data, "plugins")])
        return env

    def open(self, gate):
        self._decide(gate, GO)

    def stop(self, gate, reason):
        self._decide(gate, ("stop %s\n" % reason.replace("\n", " ")[:300]).encode("utf-8"))

    def _decide(self, gate, decision):
        with self._lock:
            if gate.decision is not None:
                return
            gate.decision = decision
            conn = gate.conn
        if conn is not None:
            self._send(gate, conn)

    def _send(self, gate, conn):
        try:
            conn.sendall(gate.decision)
        except OSError:
            pass  # the post-renderer is gone (helm was stopped): helm fails, which its caller reports
        finally:
            conn.close()

    def _accept(self):
        while True:
            try:
                conn, _addr = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._register, args=(conn,), name="aicr-gate-conn", daemon=True).start()

    def _register(self, conn):
        conn.settimeout(TOKEN_TIMEOUT)
        data = b""
        try:
            while not data.endswith(b"\n") and len(data) < 100:
                chunk = conn.recv(100)
                if not chunk:
                    break
                data += chunk
        except OSError:
            data = b""
        conn.settimeout(None)
        token = data.strip().decode("ascii", "replace")
        with self._lock:
            gate = self._gates.get(token)
            if gate is None or gate.conn is not None or self._closed:
                gate = None
            else:
                gate.conn = conn
                decided = gate.decision is not None
        if gate is None:
            conn.close()  # unknown token: the post-renderer reads EOF and helm writes nothing
        elif decided:
            self._send(gate, conn)

    def close(self):
        """Stop every gate still closed (their helm writes nothing) and remove the socket."""
        with self._lock:
            self._closed = True
            waiting = [g for g in self._gates.values() if g.decision is None]
        for gate in waiting:
            self.stop(gate, "this run ended")
        try:
            self._listener.close()
        except OSError:
            pass
        if self._own_socket_dir:
            shutil.rmtree(self._own_socket_dir, ignore_errors=True)


# -- what a chart reads before helm's post-renderer ------------------------------------------------------------------

class ChartTraits(object):
    __slots__ = ("crds", "lookup")

    def __init__(self, crds=False, lookup=False):
        self.crds = crds
        self.lookup = lookup

    def merge(self, other):
        self.crds = self.crds or other.crds
        self.lookup = self.lookup or other.lookup


def _classify(parts):
    """('crds' | 'template' | 'subchart' | None) for a path inside one chart, ``parts`` without the chart's own directory."""
    if not parts:
        return None
    if parts[0] == "crds" and len(parts) > 1:
        return "crds"
    if parts[0] == "templates" and len(parts) > 1:
        return "template"
    if parts[0] == "charts" and len(parts) > 1:
        return "subchart"
    return None


def _scan_dir(root, traits, budget):
    for base, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(base, root)
        rel_parts = [] if rel == "." else rel.split(os.sep)
        for fname in sorted(files):
            parts = rel_parts + [fname]
            kind = _classify(parts)
            if kind == "crds":
                traits.crds = True
            elif kind == "subchart":
                if len(parts) == 2 and fname.endswith(".tgz"):
                    with open(os.path.join(base, fname), "rb") as handle:
                        _scan_archive(handle, traits, budget)
                elif len(parts) > 2:
                    sub = _classify(parts[2:])
                    if sub == "crds":
                        traits.crds = True
                    elif sub == "template":
                        _scan_text(os.path.join(base, fname), traits, budget)
            elif kind == "template":
                _scan_text(os.path.join(base, fname), traits, budget)


def _scan_text(path, traits, budget):
    if traits.lookup:
        return
    with open(path, "rb") as handle:
        data = handle.read(MAX_SCANNED_BYTES)
    _check_template(data, traits, budget)


def _check_template(data, traits, budget):
    budget[0] -= len(data)
    if budget[0] < 0:
        raise ValueError("chart too large to scan")
    if _LOOKUP.search(data.decode("utf-8", "replace")):
        traits.lookup = True


def _scan_archive(fileobj, traits, budget):
    """A chart archive (``<name>/...``), its subchart archives included."""
    with bounded.open_tar(fileobj, "chart archive") as archive:  # a stream bounded as every chart archive (_common.bounded)
        for member in archive:
            if not member.isfile():
                continue
            parts = member.name.split("/")[1:]  # the chart's own directory first
            while len(parts) > 2 and parts[0] == "charts" and not parts[1].endswith(".tgz"):
                parts = parts[2:]  # an unpacked subchart: charts/<sub>/...
            kind = _classify(parts)
            if kind == "crds":
                traits.crds = True
            elif kind == "template" and not traits.lookup:
                if member.size > MAX_SCANNED_BYTES:
                    raise ValueError("template too large to scan")
                _check_template(archive.extractfile(member).read(), traits, budget)
            elif kind == "subchart" and len(parts) == 2 and parts[1].endswith(".tgz"):
                if member.size > MAX_SCANNED_BYTES:
                    raise ValueError("subchart too large to scan")
                _scan_archive(io.BytesIO(archive.extractfile(member).read()), traits, budget)


def chart_traits(path):
    """:class:`ChartTraits` of a local chart (directory or archive); None when it cannot be read (no early start)."""
    traits = ChartTraits()
    budget = [MAX_SCANNED_BYTES]
    try:
        if os.path.isdir(path):
            _scan_dir(path, traits, budget)
        else:
            with open(path, "rb") as handle:
                _scan_archive(handle, traits, budget)
    except (OSError, tarfile.TarError, ValueError, EOFError, zlib.error, AicrError):
        return None  # past a limit too: no early start (the chart is read, bounded, again where it is installed)
    return traits


def provides_api(docs, traits):
    """Whether a release adds API types: CRDs or APIServices among its objects (``docs``, the parsed manifest), or
    ``crds/`` in its chart (``traits``: :class:`ChartTraits`, None when unknown: then it may)."""
    if traits is None or traits.crds:
        return True
    return any(doc.get("kind") in API_KINDS for doc in docs)
