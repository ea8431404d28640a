# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One lock per key, made on first use: threads doing the same once-per-key work (read a namespace, fetch a
repository's index) wait for the first of them instead of repeating it, while different keys go on in parallel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading


class KeyedLocks(object):
    """``locks(key)``: the lock of ``key`` (the same object for the same key, for the life of this instance)."""

    def __init__(self):
        self._guard = threading.Lock()
        self._locks = {}

    def __call__(self, key):
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())
