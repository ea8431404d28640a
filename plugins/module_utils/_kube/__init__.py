# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one way the collection reaches a Kubernetes API server (private: not a public API)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
