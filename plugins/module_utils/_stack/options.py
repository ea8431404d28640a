# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSES/Apache-2.0.txt or https://www.apache.org/licenses/LICENSE-2.0)
"""Module options shared by several modules, each with its doc fragment.

- ``STACK_STORE_ARG_SPEC`` (doc fragment ``aicr.runtime.stack_store``): where the stacks a module reads or
  writes are kept - stack_status and stack_info.
- ``LIVE_STATUS_ARG_SPEC`` (doc fragment ``aicr.runtime.live_status``: ``status_backend``, ``status_namespace``):
  modules that write live progress to a stack's status; each documents ``status_stack`` itself, since what it
  writes differs (components or devices).

Kept free of third-party imports so an argument spec can always be built.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

STACK_STORE_ARG_SPEC = dict(
    backend=dict(type="str", choices=["crd", "configmap"], default="crd"),
    namespace=dict(type="str", default="default"),
)

LIVE_STATUS_ARG_SPEC = dict(
    status_stack=dict(type="str"),
    status_backend=dict(type="str", choices=["crd", "configmap"], default="crd"),
    status_namespace=dict(type="str", default="default"),
)
