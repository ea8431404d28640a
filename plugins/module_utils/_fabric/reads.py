# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Reads of a machine that wait (:class:`MachineReads`): until its devices settle, and after a change was sent.

After an ambiguous outcome the fabric itself did not answer - a timeout, a connection cut after the request went out,
or a gateway's 502/503/504 - the machine is re-read every ``poll_interval`` until the change shows or ``settle_timeout``
has passed; after a 500, an error answer or a task's end (the fabric is done) once. A mutation is sent again only after
an unknown outcome the re-read showed had no effect, at most ``mutation_retries`` times (:meth:`MachineReads.send_again`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import RESPONSE, TASK, AmbiguousOutcome, FabricHTTPError


class MachineReads:
    """Waiting reads over a :class:`~.context.RunContext` (its backend, options, clock and pause)."""

    def __init__(self, context):
        self.context = context

    def settle(self, run, devices, done, what, timeout=None):
        """Re-read until ``done(devices)``; fails with ``what`` after ``timeout`` (``wait_timeout``)."""
        ctx = self.context
        wait_timeout = ctx.options.wait_timeout
        deadline = ctx.clock() + (wait_timeout if timeout is None else timeout)
        while not done(devices):
            if ctx.clock() >= deadline:
                raise AicrError("%s after %.0fs (wait_timeout)" % (what, wait_timeout), machine=run.machine_id)
            ctx.between_polls()
            ctx.pause()
            ctx.between_polls()
            devices = ctx.backend.read_machine(run.machine_id)
        return devices

    def reread(self, run, found, error, timeout):
        """Re-read until ``found(devices)`` is truthy; once only when the fabric has finished answering."""
        ctx = self.context
        deadline = ctx.clock() + timeout
        while True:
            devices = ctx.backend.read_machine(run.machine_id)
            hit = found(devices)
            if hit:
                return hit, devices
            once = isinstance(error, FabricHTTPError) or (isinstance(error, AmbiguousOutcome) and error.kind in (RESPONSE, TASK))
            if once or ctx.clock() >= deadline:
                return None, devices
            ctx.between_polls()
            ctx.pause()

    def reread_after(self, run, target, what, found, error, timeout, on_failure):
        """:meth:`reread` after ``what`` was sent; when the machine cannot be read then, ``on_failure(error)`` records the
        change as pending and the error (naming what was sent, its outcome unknown) is raised."""
        try:
            return self.reread(run, found, error, timeout)
        except AicrError as exc:
            failed = AicrError("%s: %s sent, then re-reading the machine failed: %s; its outcome is not known - re-run to converge "
                               "(nothing re-sent)" % (target.label, what, exc.msg), **exc.details)
            on_failure(failed)
            raise failed

    def send_again(self, error, attempts):
        """A mutation is sent again only after an unknown outcome that the re-read showed had no effect, and never after a
        task the fabric accepted (it may still complete)."""
        return isinstance(error, AmbiguousOutcome) and error.kind != TASK and attempts <= self.context.options.mutation_retries
