# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the stack_info and stack_status modules do, as plain functions over module parameters.

Installing the ClusterStack CRD (``install_crd``) is crd_publish's engine (``_schema.publish.publish_definition``, over
``_kube.crd``): server-side apply, compared by dry run, then waited for until Established with its names accepted (a CRD
being deleted is waited for until it is gone, then created again; ``NamesAccepted=False`` fails).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_NAMESPACE
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import HIDDEN, Sensitive
from ansible_collections.aicr.runtime.plugins.module_utils._kube import crd as kube_crd
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._schema import publish
from ansible_collections.aicr.runtime.plugins.module_utils._stack import crd as stack_crd
from ansible_collections.aicr.runtime.plugins.module_utils._stack import decide as stack_decide
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model as stack_model
from ansible_collections.aicr.runtime.plugins.module_utils._stack import releases, store, upgrade
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import check_stack_options
from ansible_collections.aicr.runtime.plugins.module_utils._stack.status import StatusWriter

UPDATE_KEYS = ("phase", "phase_message", "conditions", "components", "replace_components", "devices", "recipe", "events",
               "observed_generation", "reconcile", "catalog")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CRD_WAIT = dict(allow_breaking=True, force_conflicts=True, wait=True, wait_timeout=30, wait_sleep=0.1)


def _client(params):
    return client_for(params.get("kubeconfig") or None, params.get("context") or None)


def ensure_crd(client, crd, check_mode=False, timeout=30.0):
    """Install or update a CRD (the ClusterStack CRD) and wait until it is Established; returns (changed, action)."""
    name = crd["metadata"]["name"]
    result = publish.publish_definition(client, publish.check_definition(crd), dict(CRD_WAIT, wait_timeout=timeout), check_mode=check_mode)
    if result["action"] == "unchanged":
        return False, "CRD %s unchanged" % name
    return True, "%s%s CRD %s" % ("would " if check_mode else "", result["action"], name)


def shown_spec(spec, show_values=False):
    """A stack's spec as stack_info and stack_status return it: secrets (``_common.sensitive``'s default rule, the one
    gated_release uses: ``componentOverrides.*.values`` keys, URL passwords in ``repositoryMirrors`` and anywhere else)
    ``<hidden>``, unless ``show_values``. AWX keeps every task's result in its job events."""
    return spec if show_values else Sensitive().redact(spec)


def shown_annotations(annotations, show_values=False):
    """A stack's annotations as stack_info returns them: ``kubectl apply``'s last-applied-configuration holds the whole
    object as JSON, spec and its secrets included; it is shown with them hidden (as :func:`shown_spec`)."""
    if show_values:
        return annotations
    shown = Sensitive().redact(annotations)
    text = annotations.get(LAST_APPLIED)
    if isinstance(text, str):
        try:
            shown[LAST_APPLIED] = json.dumps(Sensitive().redact(json.loads(text)), sort_keys=True)
        except ValueError:
            shown[LAST_APPLIED] = HIDDEN
    return shown


def spec_secrets(params):
    """The secret strings of a spec given to stack_status (``spec``), for the module's no_log values: the ``invocation``
    Ansible returns then never has them."""
    return Sensitive().secret_strings(params.get("spec") or {})


def describe(stack, default_resync_seconds, default_auto_update, now, show_values=False):
    """One stack with its catalog selection and reconcile decision (its spec's secrets hidden unless ``show_values``)."""
    spec = stack.get("spec") or {}
    status = stack.get("status") or {}
    auto_update, source = stack_decide.auto_update_of(spec, default_auto_update)
    catalog = None
    catalog_error = None
    try:
        catalog = releases.select(spec.get("catalog"), (status.get("recipe") or {}).get("catalogVersion"), auto_update)
        if auto_update:  # only a safe upgrade plan moves the stack by itself
            catalog = upgrade.hold_back(stack, catalog)
        catalog.update(auto_update=auto_update, auto_update_source=source)
    except AicrError as exc:
        catalog_error = exc.msg
    try:
        decision = stack_decide.decide(stack, now, default_resync_seconds, catalog)
    except AicrError as exc:
        decision = {"needs_converge": False, "suspended": False, "reason": exc.msg, "error": exc.msg}
    if catalog_error:
        decision["catalog_error"] = catalog_error
    meta = stack.get("metadata") or {}
    return {"name": meta.get("name"), "generation": meta.get("generation"), "annotations": shown_annotations(meta.get("annotations") or {}, show_values),
            "spec": shown_spec(spec, show_values), "status": status,
            "catalog": catalog or {"error": catalog_error, "auto_update": auto_update, "auto_update_source": source},
            "decision": decision, "needs_converge": bool(decision.get("needs_converge")), "reason": decision.get("reason")}


def _store(client, params):
    return store.make_store(client, params.get("backend") or "crd", params.get("namespace") or STACK_NAMESPACE)


def _check_store(problems, params, *stack_fields):
    """The options every stack module shares: the store (``backend``, ``namespace``) and the stack names in ``stack_fields``."""
    problems.choice("backend", params.get("backend"), ("crd", "configmap"))
    problems.name("namespace", params.get("namespace"))
    try:
        check_stack_options(params, *stack_fields)
    except AicrError as exc:
        problems.extend(exc)


def check_info(params):
    """stack_info's one validation pass, before the cluster is reached; returns the resync interval in seconds."""
    problems = Problems("stack_info")
    _check_store(problems, params, "names")
    if params.get("names") is not None and not isinstance(params["names"], (list, tuple)):
        problems.add("names", "a %s is not allowed; use a list of stack names" % type(params["names"]).__name__)
    resync = None
    try:
        resync = stack_decide.parse_duration(params.get("resync_interval") if params.get("resync_interval") is not None else 300,
                                             field="resync_interval")
    except AicrError as exc:
        problems.extend(exc)
    problems.raise_if_any()
    return resync


def check_status(params):
    """stack_status's one validation pass, before the cluster is reached: the stack, the store, the spec and the update."""
    problems = Problems("stack_status")
    _check_store(problems, params, "name")
    if not params.get("name") and not params.get("install_crd"):
        problems.add("name", "missing; allowed: a stack name (or install_crd=true alone)")
    if params.get("spec") is not None:
        if (params.get("backend") or "crd") != "configmap":
            problems.add("spec", "only allowed with backend=configmap; allowed: edit a ClusterStack's spec with kubectl")
        elif problems.mapping("spec", params["spec"]):
            try:  # what the store writes it must read again (it reads a stack's spec within the same limits)
                bounded.check_value(params["spec"], "spec")
            except AicrError as exc:
                problems.extend(exc)
    stack_model.check_update(problems, dict((k, params[k]) for k in UPDATE_KEYS if params.get(k) is not None))
    problems.raise_if_any()


def info(params, now=None):
    """Stacks of the store (filtered by ``names``) with their decisions; ``foreign_claims`` and ``refused`` (see store)."""
    resync = check_info(params)
    now = now or timeutil.utcnow()
    client = _client(params)
    backend = _store(client, params)
    if backend.backend == "crd" and client.get_path(kube_crd.path(store.CRD_NAME)) is None:
        return {"changed": False, "crd_installed": False, "stacks": [], "foreign_claims": [], "refused": []}
    stacks = backend.list()
    names = params.get("names") or []
    refused = sorted((name, msg) for name, msg in backend.refused.items() if not names or name in names)
    if names:
        stacks = [s for s in stacks if s["metadata"]["name"] in names]
    described = [describe(s, resync, bool(params.get("auto_update")), now, bool(params.get("show_values"))) for s in stacks]
    result = {"changed": False, "stacks": described, "converge": [s["name"] for s in described if s["needs_converge"]],
              # every foreign claim of the store, whatever ``names`` says: each is a forgery or a stale object to look at
              "foreign_claims": list(backend.foreign_claims),
              "refused": [{"name": name, "msg": msg} for name, msg in refused]}
    warnings = [claim["message"] for claim in backend.foreign_claims] + [msg for _name, msg in refused]
    if warnings:
        result["warnings"] = warnings
    if backend.backend == "crd":
        result["crd_installed"] = True
    return result


def update_status(params, check_mode=False, diff=False):
    """Ensure the CRD / the inventory spec and apply one status update; the stack_status module's result."""
    check_status(params)
    client = _client(params)
    actions = []
    changed = False
    if params.get("install_crd"):
        crd_changed, action = ensure_crd(client, stack_crd.build_crd(), check_mode=check_mode)
        changed = changed or crd_changed
        if crd_changed:
            actions.append(action)
    name = params.get("name")
    if not name:  # install_crd alone (check_status refused neither)
        return {"changed": changed, "actions": actions}
    backend = _store(client, params)
    result = {"changed": changed, "actions": actions, "name": name, "backend": backend.backend}
    spec_before = None
    if params.get("spec") is not None:  # backend=configmap (check_status)
        spec_changed, before, after = backend.ensure_spec(name, params["spec"], check_mode=check_mode)
        if spec_changed:
            spec_before = (before or {}).get("spec")
            actions.append("%s spec of stack %s (generation %s)" % ("would set" if check_mode else "set", name, after["metadata"]["generation"]))
            result["changed"] = True
        if check_mode and spec_changed:
            result.update(status=(before or {}).get("status") or {}, generation=after["metadata"]["generation"], events=[])
            return result
    update = dict((k, params[k]) for k in UPDATE_KEYS if params.get(k) is not None)
    writer = StatusWriter(backend, name, check_mode=check_mode)
    before, after, status_changed, events = writer.apply(update)
    if status_changed:
        result["changed"] = True
        phase_note = " (phase %s)" % after["status"]["phase"] if after["status"].get("phase") else ""
        actions.append("%s status of stack %s%s" % ("would update" if check_mode else "updated", name, phase_note))
    result.update(status=after.get("status") or {}, generation=(after.get("metadata") or {}).get("generation"), events=events,
                  conflicts=writer.conflicts)
    if diff:
        result["diff"] = {"before": {"status": before.get("status") or {}}, "after": {"status": after.get("status") or {}}}
        if spec_before is not None:
            # secrets as gated_release's diff shows them: <hidden>, <changed> after when they changed
            result["diff"]["before"]["spec"], result["diff"]["after"]["spec"] = Sensitive().redact_pair(spec_before, params["spec"])
    return result
