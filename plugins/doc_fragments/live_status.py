# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Where a module writes live progress to a stack's status (with its own O(status_stack) option)."""

    DOCUMENTATION = r"""
options:
  status_backend:
    description:
      - Where O(status_stack) lives - C(crd) (a C(runtime.aicr.io/v1alpha1) C(ClusterStack)) or C(configmap)
        (ConfigMap C(aicr-stack-<name>) in O(status_namespace)).
    type: str
    choices: [crd, configmap]
    default: crd
  status_namespace:
    description:
      - Namespace of the stack's ConfigMap when O(status_backend=configmap). A ConfigMap there that the collection did not
        write (field manager C(aicr-runtime)) or whose C(runtime.aicr.io/stack) label is not its name's stack is a foreign
        claim - live status is disabled with a warning rather than written to it.
      - The identity needs the ClusterRole C(aicr-runtime:stack-configmap) there, bound by a RoleBinding in this namespace only.
    type: str
    default: aicr-system
"""
