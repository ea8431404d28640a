# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where values come from: a chart directory, a packaged ``.tgz``, a chart in a
repository (http or ``oci://``, fetched with ``helm pull``), or values files.

A chart's subcharts (``charts/<name>/`` directories and ``charts/*.tgz``) are read too,
so their values can be merged under their key (the dependency's alias when
Chart.yaml gives one).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tarfile
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import check_chart_source
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner
from ansible_collections.aicr.runtime.plugins.module_utils._schema import infer, nodes

try:
    from ansible.module_utils.urls import open_url
    HAS_URLS = True
except ImportError:  # pragma: no cover - always there inside Ansible
    HAS_URLS = False


class Chart:
    """A loaded chart: metadata, values text, shipped schema and subcharts [(key, Chart)]."""

    def __init__(self, name, version=None, app_version=None, values_text="", schema=None, subcharts=None, origin=None, dependencies=None):
        self.name = name
        self.version = version
        self.app_version = app_version
        self.values_text = values_text
        self._schema = schema or None  # a mapping, or the text of the shipped values.schema.json, parsed when first read
        self.subcharts = subcharts or []
        self.origin = origin
        self.dependencies = dependencies or []
        self._composed = None

    @property
    def schema(self):
        """The chart's shipped values.schema.json (None when it has none); generating a schema never reads it."""
        if isinstance(self._schema, str):
            self._schema = _json(self._schema, self.origin)
        return self._schema

    def node(self):
        """The inferred node tree of the chart, subcharts merged under their keys."""
        inferrer = infer.Inferrer(self.values_text, "%s/values.yaml" % (self.origin or self.name))
        root = inferrer.infer()
        self._composed = inferrer.root  # values() constructs the defaults from it instead of parsing the file again
        for key, sub in self.subcharts:
            nodes.nest_under(root, key, sub.node())
        return root

    def values(self):
        """The chart's default values, subchart defaults coalesced under their keys."""
        values = infer.load_values(self.values_text, "%s/values.yaml" % (self.origin or self.name), self._composed)
        for key, sub in self.subcharts:
            sub_values = sub.values()
            global_values = sub_values.pop("global", None)
            mine = values.get(key)
            if mine is None:
                values[key] = sub_values
            elif isinstance(mine, dict):
                values[key] = merge_null_deletes(sub_values, mine)
            if isinstance(global_values, dict):
                values["global"] = merge_null_deletes(global_values, values.get("global") or {})
        return values


def _parse_chart_yaml(text, origin):
    try:
        meta = deps.load(text, "chart %s: Chart.yaml" % origin) or {}
    except deps.yaml.YAMLError as exc:
        raise AicrError("chart %s: Chart.yaml is not valid YAML (%s)" % (origin, getattr(exc, "problem", exc)), field="chart", value=origin)
    if not isinstance(meta, dict) or not meta.get("name"):
        raise AicrError("chart %s: Chart.yaml has no name" % origin, field="chart", value=origin)
    return meta


def _aliases(meta):
    result = {}
    for dep in meta.get("dependencies") or []:
        if isinstance(dep, dict) and dep.get("name"):
            result[dep["name"]] = dep.get("alias") or dep["name"]
    return result


def load_dir(path):
    """A chart from an unpacked chart directory."""
    chart_yaml = os.path.join(path, "Chart.yaml")
    if not os.path.isfile(chart_yaml):
        raise AicrError("chart: %s has no Chart.yaml; allowed: a chart directory, a .tgz, or a repository chart" % path, field="chart", value=path)
    meta = _parse_chart_yaml(_read(chart_yaml), path)
    values_text = _read(os.path.join(path, "values.yaml"))
    schema_text = _read(os.path.join(path, "values.schema.json"))
    aliases = _aliases(meta)
    subcharts = []
    charts_dir = os.path.join(path, "charts")
    if os.path.isdir(charts_dir):
        for entry in sorted(os.listdir(charts_dir)):
            full = os.path.join(charts_dir, entry)
            if os.path.isdir(full) and os.path.isfile(os.path.join(full, "Chart.yaml")):
                sub = load_dir(full)
            elif entry.endswith(".tgz") and os.path.isfile(full):
                sub = load_tgz(full)
            else:
                continue
            subcharts.append((aliases.get(sub.name, sub.name), sub))
    return Chart(meta["name"], meta.get("version"), meta.get("appVersion"), values_text, schema_text, subcharts, path, meta.get("dependencies"))


def _read(path):
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as handle:
        return bounded.read_bounded(handle, path).decode("utf-8")


def _json(text, origin):
    if not text:
        return None
    try:
        return bounded.load_json(text, "chart %s: values.schema.json" % origin)
    except ValueError as exc:
        raise AicrError("chart %s: values.schema.json is not valid JSON (%s)" % (origin, exc), field="chart", value=origin)


def _chart_member(name):
    parts = name.split("/")
    if len(parts) < 2 or ".." in parts:
        return False
    return parts[-1] in ("Chart.yaml", "values.yaml", "values.schema.json") or parts[-1].endswith(".tgz")


def load_tgz(path):
    """A chart from a packaged chart archive (``helm package`` / ``helm pull`` output), its members read within
    ``_common.bounded``'s limits (a member or stream past them is refused, never read whole)."""
    try:
        members = bounded.read_tar(path, "chart archive %s" % path, _chart_member)
    except (tarfile.TarError, OSError) as exc:
        raise AicrError("chart: %s is not a readable chart archive (%s)" % (path, exc), field="chart", value=path)
    files = dict(("/".join(name.split("/")[1:]), data) for name, data in members.items())
    return _chart_from_files(files, path)


def _chart_from_files(files, origin):
    if "Chart.yaml" not in files:
        raise AicrError("chart: %s has no Chart.yaml at its top directory" % origin, field="chart", value=origin)
    meta = _parse_chart_yaml(files["Chart.yaml"].decode("utf-8"), origin)
    aliases = _aliases(meta)
    subcharts = []
    sub_names = sorted(set(name.split("/")[1] for name in files if name.startswith("charts/") and name.count("/") >= 2))
    for sub_name in sub_names:
        prefix = "charts/%s/" % sub_name
        sub_files = dict((k[len(prefix):], v) for k, v in files.items() if k.startswith(prefix))
        if "Chart.yaml" in sub_files:
            sub = _chart_from_files(sub_files, "%s/%s" % (origin, prefix.rstrip("/")))
            subcharts.append((aliases.get(sub.name, sub.name), sub))
    for name in sorted(files):
        if name.startswith("charts/") and name.count("/") == 1 and name.endswith(".tgz"):
            tmp = tempfile.mkdtemp(prefix="aicr-subchart-")
            try:
                sub_path = os.path.join(tmp, "sub.tgz")
                with open(sub_path, "wb") as handle:
                    handle.write(files[name])
                sub = load_tgz(sub_path)
                sub.origin = "%s/%s" % (origin, name)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            subcharts.append((aliases.get(sub.name, sub.name), sub))
    schema = files.get("values.schema.json")
    return Chart(meta["name"], meta.get("version"), meta.get("appVersion"), files.get("values.yaml", b"").decode("utf-8"),
                 schema.decode("utf-8") if schema else None, subcharts, origin, meta.get("dependencies"))


def pull(chart, version=None, repository=None, helm_binary="helm", insecure=False, repository_credentials=None):
    """``helm pull`` a chart from a repository (http or oci://) and load it, as gated_release pulls (``HelmRunner.pull``):
    with ``repository_credentials`` in files private to this call, helm's homes private too (nothing read from or left
    in the user's)."""
    if str(chart).startswith("oci://"):  # a whole reference: its registry path and its chart name, each as gated_release's
        registry, _sep, name = str(chart).rpartition("/")
        check_chart_source(None, name, registry, version, where="chart")
    else:
        check_chart_source(None, chart, repository, version, where="chart")
    tmp = tempfile.mkdtemp(prefix="aicr-pull-")  # 0700
    try:
        helm = HelmRunner(helm_binary, home=os.path.join(tmp, "home"), repository_credentials=repository_credentials,
                          credentials_dir=os.path.join(tmp, "auth"))
        flags = []
        if insecure:
            flags = ["--plain-http"] if str(chart).startswith("oci://") else ["--insecure-skip-tls-verify"]
        what = "chart: helm pull %s%s" % (chart, " --version %s" % version if version else "")
        try:
            archive = helm.pull(str(chart), repository, version, os.path.join(tmp, "chart"), extra_flags=flags, what=what)
        except AicrError as exc:
            if "field" not in exc.details:  # helm's own failure (not helm_binary, not repository_credentials): the chart's
                exc.details.update(field="chart", value=chart)
            raise
        loaded = load_tgz(archive)
        loaded.origin = chart if not repository else "%s (%s)" % (chart, repository)
        return loaded
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_chart(chart, version=None, repository=None, helm_binary="helm", **pull_options):
    """A chart given as a directory, a .tgz, an ``oci://`` reference or a repository chart name."""
    infer.require_yaml()
    if not chart:
        raise AicrError("chart: empty; allowed: a chart directory, a .tgz, oci://..., or a chart name with repository", field="chart")
    path = os.path.expanduser(str(chart))
    if not str(chart).startswith("oci://"):
        if os.path.isdir(path):
            return load_dir(path)
        if os.path.isfile(path):
            return load_tgz(path)
        if not repository and ("/" not in str(chart) or str(chart).startswith((".", "/", "~"))):
            raise AicrError("chart: %s does not exist; allowed: a chart directory, a .tgz, oci://..., or a chart name with repository" % chart,
                            field="chart", value=chart)
    return pull(str(chart), version, repository, helm_binary, **pull_options)


def _index_auth(repository, credentials):
    """``open_url`` keywords for ``repository``'s entry of ``credentials`` (the rule helm's pulls use)."""
    cred = repos.match(credentials, repository)
    if cred is None:
        return {}
    options = {"validate_certs": not cred.insecure}
    if cred.username:
        options.update(url_username=cred.username, url_password=cred.password, force_basic_auth=True)
    if cred.ca_file:
        options["ca_path"] = cred.ca_file
    if cred.cert_file:
        options.update(client_cert=cred.cert_file, client_key=cred.key_file)
    return options


def discover_versions(repository, chart_name, timeout=30, repository_credentials=None):
    """Versions of a chart listed in an http(s)/file repository's index.yaml, newest first as listed; the repository's
    ``repository_credentials`` entry (basic auth, CA, client certificate) applies as it does to ``helm pull``."""
    infer.require_yaml()
    if not repository or str(repository).startswith("oci://"):
        raise AicrError("discover_versions: repository %r has no index.yaml (oci registries list no versions); give versions instead" % (repository,),
                        field="repository", value=repository)
    url = str(repository).rstrip("/") + "/index.yaml"
    credentials = repos.normalize_credentials(repository_credentials)
    try:
        if url.startswith("file://"):
            with open(url[len("file://"):], "rb") as handle:
                text = bounded.read_bounded(handle, url).decode("utf-8")
        else:
            if not HAS_URLS:
                raise AicrError("discover_versions: ansible.module_utils.urls is not available", field="repository")
            response = open_url(url, timeout=timeout, **_index_auth(repository, credentials))
            text = bounded.read_bounded(response, url).decode("utf-8")
        index = deps.load(text, url) or {}
    except AicrError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        raise AicrError("repository: cannot read %s (%s)" % (url, repos.redact_passwords(str(exc), credentials)), field="repository", value=repository)
    entries = (index.get("entries") or {}).get(chart_name) or []
    if not entries:
        raise AicrError("repository: %s lists no chart named %r" % (url, chart_name), field="repository", value=repository)
    return [str(e.get("version")) for e in entries if e.get("version")]
