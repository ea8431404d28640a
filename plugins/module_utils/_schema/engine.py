# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one entry point the module, the lookup and roles share: sources → output.

``run(params)`` returns a result dict (``changed``, the output under its key,
``diff``/``actions`` when ``dest`` is written) and a failure message or None
(validate/compare with errors and ``fail_on_error``). Invalid input raises AicrError.
The steps are separate functions so a role can generate, compare with the live CRD
and apply in separate tasks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps, validation
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection
from ansible_collections.aicr.runtime.plugins.module_utils._kube import crd as kube_crd
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, describe
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat, crd as crd_mod, infer, jsonschema, nodes, refs, safety, sources
from ansible_collections.aicr.runtime.plugins.module_utils._schema import structural, validate, wellknown

OUTPUTS = ("json_schema", "crd", "validate", "compare")
RESULT_KEYS = {"json_schema": "schema", "crd": "crd", "validate": "errors", "compare": "findings"}

DEFAULTS = dict(
    output="json_schema", chart=None, chart_version=None, repository=None, helm_binary="helm", values_files=None, values=None,
    set=None, set_string=None, schema=None, draft="2020-12", name=None, group=None, kind=None, plural=None, domain=None,
    api_version=None, scope="Namespaced", versions=None, discover_versions=False, preserve_unknown_fields=False,
    old_crd=None, new_crd=None, kubeconfig=None, context=None, severities=None, fail_on_error=True, dest=None, dest_format="auto",
    compat_profile="aicr", k8s_schema_version=refs.DEFAULT_K8S_VERSION,
)


def _params(params):
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in (params or {}).items() if v is not None))
    check_params(merged)
    return merged


def _paths(problems, field, value):
    """A list of non-empty strings (None: not given)."""
    if value is None:
        return
    if not isinstance(value, (list, tuple)):
        problems.add(field, "a %s is not allowed; use a list" % type(value).__name__, value=value)
        return
    for index, item in enumerate(value):
        problems.text("%s[%d]" % (field, index), item)


def _document(problems, field, value, what):
    """A mapping (held to the node and depth limits) or a non-empty string (a file, YAML text or a name); None: not given."""
    if isinstance(value, dict):
        try:
            bounded.check_value(value, field)
        except AicrError as exc:
            problems.extend(exc)
    elif value is not None and not (isinstance(value, str) and value.strip()):
        problems.add(field, "a %s is not allowed; use %s" % (type(value).__name__, what), value=value)


def check_params(params):
    """One validation pass over the parameters, before a chart is pulled, a file read or a cluster reached: every problem
    (enums, names of the CRD, types, the ``set`` expressions, severities, what ``output`` needs) listed in ``errors``."""
    problems = Problems("values_schema")
    output = problems.choice("output", params["output"], OUTPUTS)
    problems.choice("draft", params.get("draft"), sorted(jsonschema.DRAFT_ALIASES))
    problems.choice("scope", params.get("scope"), ("Namespaced", "Cluster"))
    problems.choice("dest_format", params.get("dest_format"), ("auto", "json", "yaml"))
    try:
        refs.normalise_k8s_version(params.get("k8s_schema_version"))
    except AicrError as exc:
        problems.extend(exc)
    compat.severity_problems(problems, params.get("severities"), params.get("compat_profile") or "aicr")
    for field in ("chart", "chart_version", "repository", "helm_binary", "context", "dest"):
        problems.text(field, params.get(field))
    # the CRD's group is <name>.bundles.<domain>: a name is used as it is, never folded (My Stack/../x is no my-stack-x)
    problems.name("name", params.get("name"))
    crd_mod.name_problems(problems, group=params.get("group"), kind=params.get("kind"), plural=params.get("plural"),
                          api_version=params.get("api_version"), domain=params.get("domain"))
    _paths(problems, "values_files", params.get("values_files"))
    _paths(problems, "versions", params.get("versions"))
    if isinstance(params.get("versions"), (list, tuple)) and len(set(map(str, params["versions"]))) != len(params["versions"]):
        problems.add("versions", "%r lists a version twice; allowed: each version once" % (list(params["versions"]),), value=list(params["versions"]))
    if params.get("values") is not None and problems.mapping("values", params["values"]):
        _document(problems, "values", params["values"], "a mapping")
    for field in ("set", "set_string"):
        _paths(problems, field, params.get(field))
        for expression in params.get(field) or [] if isinstance(params.get(field), (list, tuple)) else []:
            try:
                bounded.check_value(validate.parse_set([expression], as_string=field == "set_string", field=field), field)
            except AicrError as exc:
                problems.extend(exc)
    _document(problems, "schema", params.get("schema"), "a JSON Schema mapping or the path of one")
    for field in ("old_crd", "new_crd"):
        _document(problems, field, params.get(field), "a CRD mapping, a file or the name of a live CRD")
    sources = params.get("chart") or params.get("values_files")
    if output == "compare" and params.get("old_crd") is None:
        problems.add("old_crd", "required with output=compare; allowed: a CRD file, a mapping, or the name of a live CRD")
    if output == "validate" and not params.get("chart") and params.get("schema") is None:
        problems.add("schema", "required with output=validate when no chart is given (a chart's schema is generated); allowed: a JSON Schema "
                     "mapping or file")
    if output in ("json_schema", "crd") or (output == "compare" and params.get("new_crd") is None):
        if not sources:
            what = "JSON Schema" if output == "json_schema" else "CRD"
            problems.add("chart", "a chart or at least one values file is required to generate a %s (output=%s)" % (what, output))
    problems.raise_if_any()


def _read_text(path, field):
    path = os.path.expanduser(str(path))
    if not os.path.isfile(path):
        raise AicrError("%s: file %s does not exist" % (field, path), field=field, value=path)
    with open(path, "rb") as handle:
        return bounded.read_bounded(handle, "%s %s" % (field, path)).decode("utf-8")


def load_sources(params):
    """(chart or None, [(path, text)] of values files)."""
    chart = None
    if params.get("chart"):
        chart = sources.load_chart(params["chart"], params.get("chart_version"), params.get("repository"), params.get("helm_binary") or "helm",
                                   insecure=bool(params.get("plain_http")), repository_credentials=params.get("repository_credentials"))
    files = [(str(path), _read_text(path, "values_files")) for path in params.get("values_files") or []]
    return chart, files


def build_node(chart, files, warnings=None, draft="2020-12", k8s_schema_version=None):
    """The node tree of the sources, references resolved offline (``refs``), widened until the chart's own values
    pass it (``safety``)."""
    warnings = [] if warnings is None else warnings
    resolver = refs.Resolver(k8s_version=k8s_schema_version)
    node = None
    if chart is not None:
        node = chart.node()
        origin = str(chart.origin or "")
        resolver.base_dir = origin if os.path.isdir(origin) else os.path.dirname(os.path.abspath(origin or "."))
        refs.resolve_tree(node, resolver, warnings, nodes.prune_hidden)
    for path, text in files:
        resolver.base_dir = os.path.dirname(os.path.abspath(path))
        file_node = refs.resolve_tree(infer.infer_text(text, path), resolver, warnings, nodes.prune_hidden)
        node = nodes.merge(node, file_node)
    if node is None:
        return node
    wellknown.type_leaves(node, resolver.k8s_version)
    if resolver.bundle:
        node["defs"] = resolver.bundle
    safety.widen_to_defaults(node, own_values(chart, files), draft, warnings)
    return safety.finish(node, warnings)


def own_values(chart, files):
    """The chart's default values ⊕ the values files (what the generated schema must accept)."""
    values = chart.values() if chart is not None else {}
    for path, text in files:
        values = merge_null_deletes(values, infer.load_values(text, path))
    return values


def chart_name(params, chart, files):
    if params.get("name"):
        return params["name"]
    if chart is not None:
        return chart.name
    if files:
        parent = os.path.basename(os.path.dirname(os.path.abspath(files[0][0])))
        return parent or "values"
    return "values"


def generate_crd(params, chart, files, node=None, warnings=None):
    """(crd, dropped keywords) for the sources; raises if the result is not structural."""
    node = node if node is not None else build_node(chart, files, warnings, k8s_schema_version=params.get("k8s_schema_version"))
    versions = params.get("versions")
    if not versions and params.get("discover_versions"):
        versions = sources.discover_versions(params.get("repository"), chart.name if chart else chart_name(params, chart, files),
                                             repository_credentials=params.get("repository_credentials"))
    crd, dropped = crd_mod.build_crd(
        node, chart_name(params, chart, files), group=params.get("group"), kind=params.get("kind"), plural=params.get("plural"),
        domain=params.get("domain"), api_version=params.get("api_version"), scope=params.get("scope") or "Namespaced",
        versions=versions, preserve_unknown=bool(params.get("preserve_unknown_fields")), chart_version=chart.version if chart else None)
    violations = structural.check_crd(crd)
    if violations:
        raise AicrError("crd: the generated CRD is not structural: %s" % violations[0]["message"], field="crd", violations=violations)
    return crd, dropped


def load_crd(value, field, kubeconfig=None, context=None):
    """A CRD from a dict, a YAML/JSON file (first CRD document), or the name of a live CRD.

    Returns None for a live name the cluster does not have.
    """
    if isinstance(value, dict):
        return value
    text = str(value)
    path = os.path.expanduser(text)
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            try:
                documents = list(deps.load_all(bounded.read_bounded(handle, "%s %s" % (field, path)).decode("utf-8"), "%s %s" % (field, path)))
            except deps.yaml.YAMLError as exc:
                raise AicrError("%s: %s is not valid YAML (%s)" % (field, path, getattr(exc, "problem", exc)), field=field, value=path)
        for document in documents:
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                return document
        raise AicrError("%s: %s holds no CustomResourceDefinition" % (field, path), field=field, value=path)
    if "/" in text or text.endswith((".yaml", ".yml", ".json")) or "." not in text:
        raise AicrError("%s: %r is neither a file nor a CRD name (<plural>.<group>)" % (field, text), field=field, value=text)
    return read_live_crd(text, kubeconfig, context)


def read_live_crd(name, kubeconfig=None, context=None):
    """The live CRD ``name`` (None when the cluster has none), through the collection's client."""
    connection.require_kubernetes("to read a live CRD")
    try:
        return connection.client_for(kubeconfig, context).get_path(kube_crd.path(name))
    except ClusterError as exc:
        if not exc.status:
            raise AicrError("old_crd: cannot reach the cluster to read CRD %s (%s)" % (name, describe(exc)), field="old_crd", value=name)
        raise AicrError("old_crd: cannot read CRD %s from the cluster (HTTP %s)" % (name, describe(exc)), field="old_crd", value=name)


def _load_schema(value):
    if isinstance(value, dict):
        return value
    text = _read_text(value, "schema")
    try:
        return bounded.load_json(text, "schema %s" % value)
    except ValueError:
        loaded = deps.load(text, "schema %s" % value)
        if not isinstance(loaded, dict):
            raise AicrError("schema: %s is not a JSON Schema mapping" % value, field="schema", value=value)
        return loaded


def values_to_validate(params, chart, files):
    values = own_values(chart, files)
    if params.get("values"):
        if not isinstance(params["values"], dict):
            raise AicrError("values: must be a mapping, got %s" % type(params["values"]).__name__, field="values")
        values = merge_null_deletes(values, params["values"])
    if params.get("set"):
        values = merge_null_deletes(values, validate.parse_set(params["set"]))
    if params.get("set_string"):
        values = merge_null_deletes(values, validate.parse_set(params["set_string"], as_string=True, field="set_string"))
    bounded.check_value(values, "the values to validate")  # values files, inline values and set expressions together
    return values


def render(content, fmt):
    if fmt == "json":
        return json.dumps(content, indent=2, sort_keys=False) + "\n"
    return deps.yaml.dump(content, Dumper=deps.Dumper, sort_keys=False, default_flow_style=False, width=160, allow_unicode=True)


def write_dest(dest, content, fmt="auto", check_mode=False):
    """Write content to dest if it differs. Returns (changed, diff, actions)."""
    dest = os.path.expanduser(str(dest))
    if fmt == "auto":
        fmt = "json" if dest.endswith(".json") else "yaml"
    if fmt not in ("json", "yaml"):
        raise AicrError("dest_format: %r is not allowed; allowed: auto, json, yaml" % fmt, field="dest_format", value=fmt)
    text = render(content, fmt)
    before = None
    if os.path.exists(dest):
        if os.path.isdir(dest):
            raise AicrError("dest: %s is a directory; allowed: a file path" % dest, field="dest", value=dest)
        with open(dest) as handle:
            before = handle.read()
    if before == text:
        return False, None, []
    diff = {"before": before or "", "after": text, "before_header": dest, "after_header": dest}
    actions = ["write %s (%d bytes)" % (dest, len(text.encode("utf-8")))]
    if not check_mode:
        directory = os.path.dirname(os.path.abspath(dest))
        if not os.path.isdir(directory):
            raise AicrError("dest: directory %s does not exist" % directory, field="dest", value=dest)
        handle, tmp = tempfile.mkstemp(dir=directory, prefix=".aicr-")
        try:
            with os.fdopen(handle, "w") as out:
                out.write(text)
            if before is not None:
                os.chmod(tmp, os.stat(dest).st_mode & 0o7777)
            else:
                os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
        except OSError as exc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise AicrError("dest: cannot write %s (%s)" % (dest, exc), field="dest", value=dest)
    return True, diff, actions


def run(params, check_mode=False):
    """Do what ``output`` asks. Returns the result (``call_engine``'s protocol: a ``failed_message`` when ``fail_on_error``
    and the values do not validate or the CRD change is breaking)."""
    infer.require_yaml()
    params = _params(params)
    output = params["output"]
    result = {"changed": False}
    failure = None
    if output == "compare" and params.get("new_crd") is not None:
        chart, files = None, []
    else:
        chart, files = load_sources(params)
    if chart is not None:
        result["chart"] = {"name": chart.name, "version": chart.version, "app_version": chart.app_version,
                           "subcharts": [key for key, _sub in chart.subcharts]}
    warnings = []
    if output == "json_schema":
        node = build_node(chart, files, warnings, params["draft"], params.get("k8s_schema_version"))
        content = jsonschema.to_json_schema(node, params["draft"], title=chart.name if chart else params.get("name"))
        result["schema"] = content
    elif output == "crd":
        content, dropped = generate_crd(params, chart, files, warnings=warnings)
        result["crd"] = content
        result["dropped"] = dropped
    elif output == "validate":
        if params.get("schema") is not None:
            schema = _load_schema(params["schema"])
        else:  # a chart: check_params refused neither
            schema = jsonschema.to_json_schema(build_node(chart, [], warnings, params["draft"], params.get("k8s_schema_version")), params["draft"])
        values = values_to_validate(params, chart, files)
        content = validation.validate(schema, values, warnings=warnings)
        result["errors"] = content
        result["valid"] = not content
        if content and params["fail_on_error"]:
            failure = "values do not validate: %d violation(s): %s" % (len(content), validation.summarise(content))
    else:
        old = load_crd(params["old_crd"], "old_crd", params.get("kubeconfig"), params.get("context"))
        if params.get("new_crd") is not None:
            new = load_crd(params["new_crd"], "new_crd", params.get("kubeconfig"), params.get("context"))
            if new is None:
                raise AicrError("new_crd: no CRD named %s in the cluster" % params["new_crd"], field="new_crd")
        else:
            new = generate_crd(params, chart, files, warnings=warnings)[0]
        result["old_found"] = old is not None
        content = compat.compare(old, new, params.get("severities"), params.get("compat_profile") or "aicr") if old is not None else []
        result["findings"] = content
        result["breaking"] = any(f["severity"] == "error" for f in content)
        result["summary"] = compat.summary(content)
        if result["breaking"] and params["fail_on_error"]:
            failure = "breaking changes from %s: %s" % (old.get("metadata", {}).get("name"), result["summary"])
    if warnings:
        result["warnings"] = warnings
    if params.get("dest"):
        changed, diff, actions = write_dest(params["dest"], content, params.get("dest_format") or "auto", check_mode)
        result["changed"] = changed
        result["dest"] = os.path.expanduser(str(params["dest"]))
        result["actions"] = actions
        if diff:
            result["diff"] = diff
    if failure:
        result["failed_message"] = failure
    return result
