# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Helm as a CLI run with argv lists, its release storage and chart repositories (private: not a public API).

Shared by gated_release (installs, upgrades, renders) and values_schema (pulls charts).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
