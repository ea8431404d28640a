# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Ansible-facing entry code, one layer above the engines (private: not a public API).

``module`` is the module side of every engine call (``call_engine``); the other files turn one module's parameters into
engine calls and results where those cross engine packages. Only plugins (modules, lookups) import from here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
