# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What every collaborator of one fabric run shares (issue 37: explicit collaborators instead of mixins).

:class:`RunOptions` holds the run's options (normalised once); :class:`RunContext` holds the backend, the cluster view,
the stack's device records (and every stack's, for the orphan sweep), the orphan ledger, the options, the clock and the
pause, the stack's Lease gate - and the few steps every collaborator takes the same way: machines in worker threads
(:meth:`RunContext.each`), a machine's error kept on its run (:meth:`RunContext.guard`), the checks before a change
and between two polls. It holds no state of the run's machines: that is each :class:`~.targets.MachineRun`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


class RunOptions:
    """fabric_device's options as the run reads them (see docs/modules/fabric_device.md)."""

    def __init__(self, check_mode=False, force_detach=False, operator_coexistence="refuse", wait=True, wait_timeout=300.0,
                 verify_visible=False, poll_interval=2.0, settle_timeout=60.0, max_workers=8, mutation_retries=1, partial=False,
                 orphans=None, orphan_grace=600.0, adopt=None):
        self.check_mode = check_mode
        self.force_detach = force_detach
        self.operator_coexistence = operator_coexistence
        self.wait = wait
        self.wait_timeout = float(wait_timeout)
        self.verify_visible = verify_visible
        self.poll_interval = float(poll_interval)
        self.settle_timeout = float(settle_timeout)
        self.max_workers = max(1, int(max_workers))
        self.mutation_retries = max(0, int(mutation_retries))
        self.partial = bool(partial)
        self.orphans = orphans
        self.orphan_grace = float(orphan_grace)
        self.adopt = set(adopt or [])


class RunContext:
    """One fabric run's shared inputs. ``records`` is a :class:`~.records.DeviceRecords` (loaded here, once): with a stack
    it is the run's ownership (``records``); every stack's records are ``all_records`` (the orphan sweep). ``gate`` is called
    before each attach and detach (``exclusive.StackGate``: the stack's Lease)."""

    def __init__(self, backend, cluster=None, options=None, records=None, ledger=None, clock=time.monotonic, sleep=cancel.pause, gate=None):
        self.backend = backend
        self.cluster = cluster
        self.options = options if options is not None else RunOptions()
        loaded = records.load() if records is not None else None
        self.all_records = loaded  # every stack's records (the orphan sweep)
        self.records = loaded if loaded is not None and loaded.stack is not None else None  # ownership: this stack's
        self.ledger = ledger
        self.clock = clock
        self.sleep = sleep
        self.gate = gate

    def each(self, runs, work):
        """``work(run)`` for every run, in worker threads even for one machine: SIGTERM's Cancelled is raised in the main
        thread, which only waits here, and never in the middle of a request; the workers stop at their next cancel.check."""
        with ThreadPoolExecutor(max_workers=max(1, min(self.options.max_workers, len(runs)))) as pool:
            list(pool.map(work, runs))

    @staticmethod
    def guard(run, work):
        """Run ``work()``; an error becomes the machine's error (never a traceback)."""
        try:
            return work()
        except AicrError as exc:
            run.error = exc.msg
            run.error_details = dict(exc.details)
        except Exception as exc:  # pylint: disable=broad-except
            # Never let a traceback reach the user; name the machine and the failure.
            run.error = "machine %s: unexpected %s: %s" % (run.machine_id, exc.__class__.__name__, exc)
        return None

    def between_polls(self):
        """Between two reads of a wait: not after a SIGTERM, nor once this attempt is being restarted under the Lease."""
        cancel.check()
        if self.gate is not None:
            self.gate.between_polls()

    def before_change(self, what):
        """Right before a request that changes the fabric: not after a SIGTERM, and with ``stack`` only under its Lease."""
        cancel.check(what)
        if self.gate is not None:
            self.gate(what)

    def pause(self):
        """The pause between two polls (``poll_interval``; ``cancel.pause`` ends it on SIGTERM)."""
        self.sleep(self.options.poll_interval)
