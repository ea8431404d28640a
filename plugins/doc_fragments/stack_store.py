# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Where the stacks a module reads or writes are kept (ClusterStack objects or ConfigMaps)."""

    DOCUMENTATION = r"""
options:
  backend:
    description:
      - C(crd) for ClusterStack objects; C(configmap) for stacks declared in inventory, kept in ConfigMaps.
    type: str
    choices: [crd, configmap]
    default: crd
  namespace:
    description:
      - Namespace of the ConfigMaps (O(backend=configmap)). Keep it a namespace only the collection's identity may write
        ConfigMaps in (never a tenant's) - it is the boundary of who may declare a stack.
      - A stack is the ConfigMap C(aicr-stack-<name>) whose label C(runtime.aicr.io/stack) is C(<name>) and which the collection
        wrote (field manager C(aicr-runtime) among its C(managedFields)); any other labelled ConfigMap is a foreign claim -
        ignored with a warning starting C(foreign claim:). Two ConfigMaps written with that field manager that claim one stack
        refuse that stack.
      - The identity needs the ClusterRole C(aicr-runtime:stack-configmap) there, bound by a RoleBinding in this namespace only.
      - A DNS-1123 label; any other value fails before the cluster is contacted.
    type: str
    default: aicr-system
"""
