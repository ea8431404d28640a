# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where helm gets a chart: ``repository_mirrors`` (an upstream repository rewritten, exact or by ``/``-bounded prefix) and
the reference helm is given (``--repo <url>`` for HTTP repositories, ``oci://<registry>/<path>/<chart>`` for OCI ones, a
local chart path for ``file://`` or a path), every URL checked before helm's argv (``_common.component``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common.component import chart_reference, check_chart_source
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos


def _norm(url):
    return str(url).rstrip("/")


def normalize_mirrors(mirrors):
    """``{upstream: url | {url, plain_http, insecure_skip_tls_verify}}`` -> {upstream: dict}."""
    result = {}
    for upstream, target in (mirrors or {}).items():
        if isinstance(target, str):
            target = {"url": target}
        if not isinstance(target, dict) or not target.get("url"):
            raise AicrError("repository_mirrors: the mirror of %s must be a URL or a dict with 'url'; got %r" % (upstream, target), field="repository_mirrors")
        repos.refuse_userinfo(upstream, "repository_mirrors")
        repos.refuse_userinfo(target["url"], "repository_mirrors")
        unknown = set(target) - set(["url", "plain_http", "insecure_skip_tls_verify"])
        if unknown:
            raise AicrError("repository_mirrors: unknown keys %s for %s; allowed: url, plain_http, insecure_skip_tls_verify" % (sorted(unknown), upstream),
                            field="repository_mirrors")
        check_chart_source(None, None, target["url"], None, where="repository_mirrors: the mirror of %s" % repos.redact_url(upstream))
        result[_norm(upstream)] = dict(target, url=_norm(target["url"]))
    return result


def resolve_repository(repository, mirrors):
    """The mirror for ``repository`` (longest exact-or-prefix match), as {url, plain_http, ...}."""
    repo = _norm(repository or "")
    best = None
    for upstream, target in mirrors.items():
        if repo == upstream or repo.startswith(upstream + "/"):
            if best is None or len(upstream) > len(best):
                best = upstream
    if best is None:
        return {"url": repo, "mirrored": False}
    target = dict(mirrors[best])
    target["url"] = target["url"] + repo[len(best):]
    target["mirrored"] = True
    return target


def chart_source(chart, repository, mirrors):
    """``(chart_ref, repo_url_or_None, extra_flags, effective_location)`` for helm."""
    if not chart:
        raise AicrError("chart: a Helm component needs a chart name", field="chart")
    repos.refuse_userinfo(repository, "repository")
    check_chart_source(None, chart, repository, None, where="chart %s" % chart)  # gated_release's plan checked it first, naming the component
    target = resolve_repository(repository, mirrors)
    url = target["url"]
    flags = []
    if target.get("plain_http"):
        flags.append("--plain-http")
    if target.get("insecure_skip_tls_verify"):
        flags.append("--insecure-skip-tls-verify")
    if url.startswith("oci://"):
        return chart_reference(chart, url), None, flags, url
    if url.startswith("file://") or url.startswith("/"):
        base = url[len("file://"):] if url.startswith("file://") else url
        return os.path.join(base, chart), None, [], url
    if not url:
        raise AicrError("repository: component chart %s has no repository and no mirror" % chart, field="repository")
    return chart, url, flags, url
