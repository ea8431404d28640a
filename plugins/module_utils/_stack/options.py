# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSES/Apache-2.0.txt or https://www.apache.org/licenses/LICENSE-2.0)
"""Module options shared by several modules, each with its doc fragment.

- ``STACK_STORE_ARG_SPEC`` (doc fragment ``aicr.runtime.stack_store``): where the stacks a module reads or
  writes are kept - stack_status and stack_info.
- ``LIVE_STATUS_ARG_SPEC`` (doc fragment ``aicr.runtime.live_status``: ``status_backend``, ``status_namespace``):
  modules that write live progress to a stack's status; each documents ``status_stack`` itself, since what it
  writes differs (components or devices).
- :func:`check_stack_options`: every option that names a stack is a valid stack name (a DNS-1123 label), checked before
  the module contacts the cluster - the one check gated_release, fabric_device, stack_status and stack_info share.

The default namespace of both is ``aicr-system`` (``STACK_NAMESPACE``): never ``default``, where a tenant may write.
Kept free of third-party imports so an argument spec can always be built.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_NAMESPACE, check_stack_name

STACK_STORE_ARG_SPEC = dict(
    backend=dict(type="str", choices=["crd", "configmap"], default="crd"),
    namespace=dict(type="str", default=STACK_NAMESPACE),
)

LIVE_STATUS_ARG_SPEC = dict(
    status_stack=dict(type="str"),
    status_backend=dict(type="str", choices=["crd", "configmap"], default="crd"),
    status_namespace=dict(type="str", default=STACK_NAMESPACE),
)


def check_stack_options(params, *fields):
    """Raise ``AicrError`` (one line: the field, the value, what is allowed) for the first of ``fields`` in ``params``
    that is set and is not a valid stack name; a list (stack_info's ``names``) is checked item by item as ``field[i]``."""
    for field in fields:
        value = params.get(field)
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                check_stack_name("%s[%d]" % (field, index), item)
        elif value is not None and value != "":
            check_stack_name(field, value)
