# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Recipe resolution engine: AICR v0.19.0 ``pkg/recipe`` semantics in plain Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
