# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The module side of an engine call, written once: missing libraries, engine errors, unexpected failures.

A module builds its ``AnsibleModule`` and calls :func:`call_engine`; it gets the engine's result or the task
fails with one line - ``missing_required_lib`` for a missing package, the ``AicrError``'s ``msg`` and details,
or ``<module>: unexpected <Exception>: <first line>`` (the traceback only in ``exception``, shown with ``-vvv``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError, first_line
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection

# Where each third-party package is guarded (its ``HAS_X``/``X_IMPORT_ERROR``, see ``_common.deps``). PyYAML's and
# kubernetes' guards import nothing; the others' guarding modules are loaded by name only when a module requires the
# package (importing requests or jsonschema costs a module start about 0.1 s), from this layer, above all of them.
_GUARDED_IN = {
    "jsonschema": ("_common.validation", "JSONSCHEMA"),
    "requests": ("_fabric.transport", "REQUESTS"),
    "jmespath": ("_common.assertions", "JMESPATH"),
}


def guard(package):
    """``(HAS_X, X_IMPORT_ERROR)`` of ``package`` (PyYAML, kubernetes, jsonschema, requests, jmespath), from the module that guards it."""
    if package == "PyYAML":
        return deps.HAS_YAML, deps.YAML_IMPORT_ERROR
    if package == "kubernetes":
        return connection.HAS_KUBERNETES, connection.KUBERNETES_IMPORT_ERROR
    where, prefix = _GUARDED_IN[package]
    guarded = importlib.import_module("ansible_collections.aicr.runtime.plugins.module_utils." + where)
    return getattr(guarded, "HAS_" + prefix), getattr(guarded, prefix + "_IMPORT_ERROR")


def hide_kubeconfig_secrets(module):
    """The secrets of a ``kubeconfig`` parameter given as a dict (tokens, passwords, key data:
    ``_kube.connection.kubeconfig_secrets``) become no_log values; the rest of it stays readable."""
    kubeconfig = (getattr(module, "params", None) or {}).get("kubeconfig")
    if isinstance(kubeconfig, dict):
        hide(module, connection.kubeconfig_secrets(kubeconfig))


def require_libraries(module, packages):
    """``fail_json(missing_required_lib(...))`` for the first of ``packages`` that cannot be imported.

    Every module calls it first (directly or through :func:`call_engine`), so it also hides the secrets of a dict
    ``kubeconfig`` (:func:`hide_kubeconfig_secrets`) before anything can be returned.
    """
    hide_kubeconfig_secrets(module)
    from ansible.module_utils.basic import missing_required_lib  # pylint: disable=import-outside-toplevel
    for package in packages:
        present, error = guard(package)
        if not present:
            module.fail_json(msg=missing_required_lib(package), exception=error)


def hide(module, secrets):
    """Add ``secrets`` (strings) to the module's no_log values: Ansible masks them in the whole result (``invocation``,
    ``msg``, ``diff``, warnings), as it does a no_log option's value."""
    values = getattr(module, "no_log_values", None)
    if values is not None:
        values.update(s for s in secrets if s)


def call_engine(module, name, engine, requires=(), secrets=(), temporary=True, on_failure=None, warnings_as=None):
    """``engine()``'s result, delivered by the one result protocol; the task fails in one line when a library is missing
    or the engine raises.

    The protocol (every engine returns a dict): its ``warnings`` become Ansible warnings (and, with ``warnings_as``, stay
    in the result under that key); its ``diff`` is dropped unless the task runs with ``--diff``; a ``failed_message``
    fails the task with that ``msg`` and the rest of the result, as an ``AicrError`` fails it with its ``msg`` and
    details. The module then only calls ``exit_json(**result)``.

    Before the engine runs, ``secrets`` and the secrets of a ``kubeconfig`` given as a dict (its tokens, passwords and
    key data; :func:`hide_kubeconfig_secrets`) are added to the module's no_log values.

    SIGTERM while the engine runs (AWX's cancel) raises ``_common.cancel.Cancelled`` in this thread: the engine's cleanup
    runs as for an error (helm children stopped, temp files removed, the Lease released) and the task fails with
    ``<name>: cancelled (SIGTERM), done before: ..., not done: ...`` (``cancelled: true``; ``temporary``: the engine has
    temporary files, removed on the way out), carrying what the engine reported done so far (``cancel.report``: its
    ``actions``, ``pending``...) and ``changed`` when anything was done. ``on_failure(result)``, when given, shapes a
    failed task's result dict.
    """
    shape = on_failure or (lambda result: result)

    def failed(result):
        return shape(_delivered(module, result, warnings_as))

    hide(module, secrets)
    require_libraries(module, requires)
    cancel.reset()
    try:
        with cancel.sigterm_cancels():
            result = engine()
    except cancel.Cancelled as exc:
        stopped = cancel.stopped() or list(exc.details.get("stopped") or [])
        done = cancel.notes()
        result = cancel.partial_result()
        result.update(msg=cancel.message(name, stopped, temporary=temporary), cancelled=True, stopped=stopped, done=done)
        result["changed"] = bool(result.get("changed")) or bool(done)  # a note is a change: never "changed: false" after one
        module.fail_json(**failed(result))
    except AicrError as exc:
        module.fail_json(**failed(exc.to_result()))
    except Exception as exc:  # pylint: disable=broad-except  # never a raw traceback for the user
        module.fail_json(msg="%s: unexpected %s: %s" % (name, exc.__class__.__name__, first_line(exc)), exception=traceback.format_exc())
    else:
        failed_message = result.pop("failed_message", None)
        if failed_message:
            module.fail_json(msg=failed_message, **failed(result))
        return _delivered(module, result, warnings_as)
    return None  # pragma: no cover - fail_json exits


def _delivered(module, result, warnings_as):
    """``result`` with its ``warnings`` given to Ansible (kept as ``warnings_as`` when named) and its ``diff`` only with ``--diff``."""
    warnings = result.pop("warnings", None) or []
    for warning in warnings:
        module.warn(warning)
    if warnings_as:
        result[warnings_as] = list(warnings)
    if not getattr(module, "_diff", True):
        result.pop("diff", None)
    return result
