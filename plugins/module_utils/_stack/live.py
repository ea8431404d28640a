# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Live status: a rollout's (or a fabric run's) transitions written to a stack's status while it runs.

``LiveStatus`` is the ``on_transition`` hook of the release engine (component results) and of the fabric
service (device transitions): it records each transition (cheap, never raises) and a background thread
writes the latest state of everything that moved, at most once per ``interval`` seconds, plus a final
flush on ``close()``. :func:`run_with_live_status` is how a module runs its engine with it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_NAMESPACE
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack.status import StatusWriter
from ansible_collections.aicr.runtime.plugins.module_utils._stack.store import make_store


class LiveStatus:
    """Coalescing ``on_transition`` hook: component transitions reach the status at most every ``interval`` seconds.

    Results are keyed by ``key`` (the latest per key is written) and written with ``apply`` (default
    ``writer.apply_components``; ``writer.apply_device_transitions`` with ``key="res_uuid"`` for devices).

    ``on_transition(result)`` only records the component's latest result and wakes the writer thread, so it
    is safe and quick to call from the scheduler threads. The thread writes the first transition at once,
    then whatever accumulated once ``interval`` has passed since the last write; ``close()`` writes what is
    left and stops it. A failed write is retried with the next batch; after ``max_failures`` failures in a
    row live status is given up (a warning says why) and the rollout is never affected.
    """

    def __init__(self, writer, interval=0.5, max_failures=3, clock=time.monotonic, apply=None, key="name"):
        self.writer = writer
        self.apply = apply or writer.apply_components
        self.key = key
        self.interval = float(interval)
        self.max_failures = max_failures
        self.clock = clock
        self.transitions = 0
        self.writes = 0
        self.batches = 0
        self.warnings = []
        self._pending = {}
        self._order = []
        self._cond = threading.Condition()
        self._closed = False
        self._disabled = False
        self._failures = 0
        self._last_write = None
        self._thread = threading.Thread(target=self._loop, name="aicr-live-status-%s" % writer.name)
        self._thread.daemon = True
        self._thread.start()

    def on_transition(self, component_result):
        """Record a component's new phase (a gated_release component result); never raises, never blocks on I/O."""
        name = (component_result or {}).get(self.key)
        if not name:
            return
        with self._cond:
            if self._closed or self._disabled:
                return
            self.transitions += 1
            if name not in self._pending:
                self._order.append(name)
            self._pending[name] = copy.deepcopy(component_result)
            self._cond.notify_all()

    def _take(self):
        batch = [self._pending[n] for n in self._order]
        self._pending = {}
        self._order = []
        return batch

    def _loop(self):
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                if not self._closed and self._last_write is not None:
                    wait = self._last_write + self.interval - self.clock()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                batch = self._take()
            self._write(batch)

    def _write(self, batch):
        try:
            _before, _after, changed, _events = self.apply(batch)
        except Exception as exc:  # pylint: disable=broad-except  # live status must never break the rollout
            msg = exc.msg if isinstance(exc, AicrError) else "%s: %s" % (exc.__class__.__name__, exc)
            with self._cond:
                self._failures += 1
                self._last_write = self.clock()
                for result in batch:  # retry with the next batch unless a newer result arrived meanwhile
                    if result[self.key] not in self._pending:
                        self._order.append(result[self.key])
                        self._pending[result[self.key]] = result
                if self._failures >= self.max_failures:
                    self._disabled = True
                    self._pending, self._order = {}, []
                    self._warn("live status of stack %s given up after %d failed writes: %s" % (self.writer.name, self._failures, msg[:300]))
                else:
                    self._warn("live status of stack %s: a write failed (retried): %s" % (self.writer.name, msg[:300]))
            return
        with self._cond:
            self._failures = 0
            self._last_write = self.clock()
            self.batches += 1
            if changed:
                self.writes += 1

    def _warn(self, text):
        if text not in self.warnings and len(self.warnings) < 5:
            self.warnings.append(text)

    def close(self, timeout=120):
        """Write what is pending and stop the thread; returns a summary (transitions, writes, conflicts, warnings)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._warn("live status of stack %s: the last write did not finish within %ss" % (self.writer.name, timeout))
        return self.summary()

    def summary(self):
        return {"stack": self.writer.name, "backend": self.writer.store.backend, "transitions": self.transitions, "writes": self.writes,
                "conflicts": self.writer.conflicts, "warnings": list(self.warnings)}


def live_status(client, name, backend="crd", namespace=STACK_NAMESPACE, interval=0.5, devices=False):
    """A started ``LiveStatus`` for stack ``name``, or (None, warning) when the stack cannot be read.

    ``devices``: a hook for fabric_device transitions (``status.devices``, keyed by the device's fabric id)
    instead of gated_release component results (``status.components``)."""
    writer = StatusWriter(make_store(client, backend, namespace, "status_namespace"), name)
    try:
        writer.store.read(name)
    except AicrError as exc:
        return None, "status_stack: live status disabled: %s" % exc.msg
    if devices:
        return LiveStatus(writer, interval=interval, apply=writer.apply_device_transitions, key="res_uuid"), None
    return LiveStatus(writer, interval=interval), None


def attach_summary(result, live, live_warning):
    """Flush and stop the live status writer: its summary goes to ``live_status``, its warnings (and ``live_warning``) to
    ``warnings``; returns ``result``."""
    warnings = list(result.pop("warnings", None) or [])
    if live_warning:
        warnings.append(live_warning)
    if live is not None and "live_status" not in result:
        summary = live.close()
        warnings.extend(summary.pop("warnings"))
        result["live_status"] = summary
    if warnings:
        result["warnings"] = warnings
    return result


def run_with_live_status(live, live_warning, run):
    """``run(on_transition)`` (the hook is None without live status); the live status summary is attached to its result,
    or to the details of the AicrError it raised."""
    try:
        result = run(live.on_transition if live is not None else None)
    except AicrError as exc:
        attach_summary(exc.details, live, live_warning)
        raise
    except BaseException:
        if live is not None:
            live.close()
        raise
    return attach_summary(result, live, live_warning)
