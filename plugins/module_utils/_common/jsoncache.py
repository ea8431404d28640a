# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""JSON files of the on-disk caches (parsed catalogs, rendered manifests, helm versions), and where they live.

:func:`default_cache_dir` is ``$AICR_RUNTIME_CACHE_DIR``, else ``$XDG_CACHE_HOME/aicr-runtime``, else
``~/.cache/aicr-runtime`` (the default of every module's ``cache_dir``).

A cache only saves work: a file that is missing, unreadable or half-written reads as a miss, and a
failed write is ignored. Writes go to a temporary file in the same directory, then ``os.replace``,
so concurrent runs (forks, several clusters at once) never read half a file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

CACHE_ENV = "AICR_RUNTIME_CACHE_DIR"


def default_cache_dir():
    """``$AICR_RUNTIME_CACHE_DIR``, else ``$XDG_CACHE_HOME/aicr-runtime``, else ``~/.cache/aicr-runtime``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "aicr-runtime")


def load(path):
    """The JSON document at ``path``, or None when there is none (or it cannot be read)."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def store(path, document):
    """Write ``document`` (JSON-serialisable, or already serialised text) to ``path`` atomically; True on success."""
    staging = None
    try:
        text = document if isinstance(document, str) else json.dumps(document)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        handle, staging = tempfile.mkstemp(dir=parent, prefix=".cache-")
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(staging, path)
        return True
    except (OSError, TypeError, ValueError):
        if staging is not None:
            try:
                os.unlink(staging)
            except OSError:
                pass
        return False
