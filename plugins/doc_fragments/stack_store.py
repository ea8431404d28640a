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
      - Namespace of the ConfigMaps (O(backend=configmap)).
      - The identity needs the ClusterRole C(aicr-runtime:stack-configmap) there, bound by a RoleBinding in this namespace only.
    type: str
    default: default
"""
