# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gated_release's options, declared once (issue 37): type, default, choices and what else the collection derives.

``OPTIONS`` is the one declaration: the module's argument spec is :func:`argument_spec` (the keys Ansible knows), the
engine's defaults are :func:`default` (``engine.Options`` writes none of its own), the options the ``option_problems``
lookup checks on the controller are :data:`OFFLINE`, and the flags every ``helm upgrade --install`` (and ``helm
rollback``) carries are :func:`helm_flags`. The module's ``DOCUMENTATION`` says the same (``ansible-test
validate-modules`` and ``tests/unit/plugins/modules/test_gated_release_spec.py`` hold it equal), and a role variable
given to an option is declared as it is (``tests/unit/roles/test_role_module_options.py``).

Keys beside Ansible's, taken out of :func:`argument_spec`:

- ``offline``: checked without a recipe, a cluster or this host's files - the ``option_problems`` lookup runs its check;
- ``minimum``/``maximum``: an ``int`` or ``float`` in that range, checked by ``engine.Options`` (``Problems.number``);
- ``helm_flag``: given to helm as ``<flag> <value>`` on every install, upgrade and rollback.

A new option is one entry here (at the end), its ``DOCUMENTATION`` entry, and whatever reads it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import DEFAULT_SENSITIVE_VALUES
from ansible_collections.aicr.runtime.plugins.module_utils._helm.repositories import REPOSITORY_CREDENTIALS_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import KUBE_ARG_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.options import RESOLVE_SPEC, SNAPSHOT_SPEC
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift, preflight
from ansible_collections.aicr.runtime.plugins.module_utils._release.chartcrds import CHART_CRDS
from ansible_collections.aicr.runtime.plugins.module_utils._release.rollback import ON_FAILURE
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import LIVE_STATUS_ARG_SPEC

LEASE_NAMESPACE = "aicr-system"  # the stack Lease and inventory live here by default, never in `default`
HELM_HISTORY_MAX = 10  # helm's own default for --history-max
EXTENSIONS = frozenset(("offline", "minimum", "maximum", "helm_flag"))

OPTIONS = dict(
    recipe=dict(type="raw"),
    resolve=dict(type="dict", options=dict(RESOLVE_SPEC, **SNAPSHOT_SPEC)),
    catalog=dict(type="path"),
    stack=dict(type="str", offline=True),
    state=dict(type="str", choices=["present", "absent"], default="present", offline=True),
    prune=dict(type="bool", default=False),
    helm_binary=dict(type="str", default="helm"),
    helm_home=dict(type="path"),
    repository_mirrors=dict(type="dict", default={}, offline=True),
    repository_credentials=REPOSITORY_CREDENTIALS_SPEC,
    skip_components=dict(type="list", elements="str", default=[]),
    component_overrides=dict(type="dict", default={}),
    skip_deployment_order=dict(type="bool", default=False),
    concurrency=dict(type="int", default=4, offline=True),
    validate_values=dict(type="bool", default=True),
    early_start=dict(type="bool", default=True),
    values_schemas=dict(type="dict", default={}),
    atomic=dict(type="bool", default=False),
    clear_pending=dict(type="bool", default=False),
    adopt=dict(type="bool", default=False),
    sensitive_values=dict(type="list", elements="str", default=list(DEFAULT_SENSITIVE_VALUES)),
    lease_namespace=dict(type="str", default=LEASE_NAMESPACE, offline=True),
    lease_duration=dict(type="int", default=60, offline=True),
    holder_message=dict(type="str"),
    cache_dir=dict(type="path"),
    render_cache=dict(type="bool", default=True),
    timeout=dict(type="int", default=600, offline=True),
    overall_timeout=dict(type="int", default=3600, offline=True),
    poll_interval=dict(type="float", default=0.5, offline=True),
    snapshot=dict(type="raw"),
    preflight=dict(type="str", choices=list(preflight.MODES), default="auto", offline=True),
    health_checks=dict(type="bool", default=True, offline=True),
    health_check_timeout=dict(type="float", offline=True),
    health_check_skip=dict(type="list", elements="str", default=[], offline=True),
    on_failure=dict(type="str", choices=list(ON_FAILURE), default="hold", offline=True),
    drift=dict(type="str", choices=list(drift.MODES), default="ignore", offline=True),
    drift_ignore=dict(type="dict", default={}, offline=True),
    chart_crds=dict(type="str", choices=list(CHART_CRDS), default="helm"),
    allow_breaking_crd_changes=dict(type="list", elements="str", default=[]),
    chart_cache=dict(type="bool", default=True),
    history_max=dict(type="int", default=HELM_HISTORY_MAX, minimum=0, helm_flag="--history-max", offline=True),
)
OPTIONS.update(KUBE_ARG_SPEC)
OPTIONS.update(LIVE_STATUS_ARG_SPEC)
OPTIONS["status_stack"] = dict(OPTIONS["status_stack"], offline=True)  # a stack name, checked as ``stack`` is

OFFLINE = tuple(name for name, spec in OPTIONS.items() if spec.get("offline"))
RANGED = tuple(name for name, spec in OPTIONS.items() if "minimum" in spec or "maximum" in spec)


def argument_spec():
    """The module's argument spec: :data:`OPTIONS` without the collection's own keys (a fresh copy, defaults included)."""
    return dict((name, _copy(dict((k, v) for k, v in spec.items() if k not in EXTENSIONS))) for name, spec in OPTIONS.items())


def default(name):
    """The default of option ``name`` (a copy: a list or dict default is never shared between runs)."""
    return _copy(OPTIONS[name].get("default"))


def given(values, name):
    """``values[name]`` (module parameters or engine settings), or the option's declared default when it is not given (None)."""
    value = values.get(name)
    return default(name) if value is None else value


def helm_flags(values):
    """``[flag, value, ...]`` for every option with a ``helm_flag`` in ``values`` (an option not given: its default)."""
    argv = []
    for name, spec in OPTIONS.items():
        if spec.get("helm_flag"):
            value = values.get(name)
            argv += [spec["helm_flag"], str(default(name) if value is None else value)]
    return argv


def check_together(options, problems):
    """The rules between options (each option's own range is its declaration): added to ``problems``."""
    if options.on_failure == "rollback" and options.history_max == 1:  # 0: every revision kept
        problems.add("history_max", "1 is not allowed with on_failure: rollback; use 0 (unlimited) or at least 2 (the last known good "
                     "revision must still exist to roll back to)", value=1, allowed=">= 2 or 0")


def _copy(value):
    if isinstance(value, dict):
        return dict((k, _copy(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
