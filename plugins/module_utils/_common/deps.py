# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""PyYAML, guarded once (the HAS_X pattern), the one YAML loader, and where the other third-party packages are guarded.

Each third-party package is imported in one place only, with its ``HAS_X``/``X_IMPORT_ERROR`` guard next to the
one code that needs it, so a module never pays for a package it does not use:

- PyYAML: here (nearly every engine reads YAML);
- kubernetes: ``_kube.connection`` (the one way to reach a cluster);
- jsonschema: ``_common.validation`` (the one JSON-Schema validation);
- requests: ``_fabric.transport`` (the fabric's HTTPS transport);
- jmespath: ``_common.assertions`` (health checks' expressions).

``_entry.module.guard`` finds any of them by name (``call_engine`` fails a module with ``missing_required_lib``);
engines call :func:`require` (PyYAML) or the guarding module's own check (``_kube.connection.require_kubernetes``)
where a package is needed at run time.

:class:`Loader` is the only YAML loader: PyYAML's safe loader (libyaml's ``CSafeLoader`` when available) that reads
timestamps as strings (as Helm's YAML to JSON does) and the YAML 1.1 ``=`` (value) key some CRD schemas carry as a
string. Catalogs, values files, charts, manifests and CRDs are all read with it, through :func:`load`, :func:`load_all`
and :func:`compose`, which hold every document to ``_common.bounded``'s limits (input bytes, nesting depth, nodes, and the
nodes aliases add) before anything is constructed: an alias bomb is refused in one line, unexpanded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

try:
    import yaml

    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError:
    yaml = None
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()

if HAS_YAML:
    BaseLoader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # SafeLoader when PyYAML lacks libyaml

    class Loader(BaseLoader):  # pylint: disable=too-many-ancestors
        """Safe loader: timestamps and the YAML 1.1 ``=`` (value) key stay strings."""

    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
    Dumper = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
else:  # pragma: no cover - the modules refuse to run without PyYAML
    BaseLoader = Loader = Dumper = None


def require_present(package, present, error, why, field=None):
    """Raise ``AicrError("the Python package '<package>' is required <why>")`` when ``present`` is false (``error``: the
    import's traceback, the guard's ``X_IMPORT_ERROR``)."""
    if not present:
        details = {"missing_library": package, "exception": error}
        if field:
            details["field"] = field
        raise AicrError("the Python package '%s' is required %s" % (package, why), **details)


def require(package, why, field=None):
    """:func:`require_present` for PyYAML (``package``: ``"PyYAML"``, the one package guarded here)."""
    if package != "PyYAML":
        raise ValueError("deps.require guards PyYAML only; %s is guarded where it is imported" % package)
    require_present(package, HAS_YAML, YAML_IMPORT_ERROR, why, field=field)


def _parser(text, source, lim, loader):
    """A ``loader`` over ``text`` whose nesting is known to stay within the depth limit (bytes checked first)."""
    bounded.check_bytes(text, source, lim)
    if not bounded.yaml_depth_within(text, bounded.SAFE_COMPOSE_DEPTH):
        probe = loader(text)
        try:
            bounded.check_yaml_events(probe, source, lim)
        finally:
            probe.dispose()
    return loader(text)


def _nodes(text, source, lim, loader):
    """Each composed, bounded document node of ``text`` (a generator), with the loader that composed it."""
    parser = _parser(text, source, lim, loader)
    try:
        while parser.check_node():
            node = parser.get_node()
            bounded.check_yaml_node(node, source, lim)
            yield parser, node
    finally:
        parser.dispose()


def load(text, source="a YAML document", limits=None):
    """One YAML document with :class:`Loader`, within the limits of ``_common.bounded`` (``source`` names ``text`` in a
    refusal). An empty document is None, as ``yaml.load``'s."""
    lim = limits or bounded.limits()
    parser = _parser(text, source, lim, Loader)
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        bounded.check_yaml_node(node, source, lim)
        return parser.construct_document(node)
    finally:
        parser.dispose()


def load_all(text, source="a YAML stream", limits=None):
    """Every YAML document of ``text`` with :class:`Loader` (a generator), each within the limits of ``_common.bounded``."""
    lim = limits or bounded.limits()
    for parser, node in _nodes(text, source, lim, Loader):
        yield parser.construct_document(node)


def compose(text, source="a YAML document", loader=None, limits=None):
    """The node of one YAML document (``loader``: :data:`BaseLoader` by default), within the limits of ``_common.bounded``."""
    lim = limits or bounded.limits()
    parser = _parser(text, source, lim, loader or BaseLoader)
    try:
        node = parser.get_single_node()
        if node is not None:
            bounded.check_yaml_node(node, source, lim)
        return node
    finally:
        parser.dispose()
