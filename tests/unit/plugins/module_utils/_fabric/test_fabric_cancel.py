"""SIGTERM (AWX's cancel) during a fabric run, on the HTTPS simulator: no attach or detach starts after it, the one in
flight is finished, a wait stops at its next poll, and what was done is noted for the task's message.

The signal is real (``os.kill`` of this process from a machine thread, at a known step); ``_common.cancel`` turns it
into ``Cancelled`` in the main thread, which only waits for the machine threads.
"""

import signal
import threading
import time

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

from sigterm import fresh_cancel_state, sigterm_self  # noqa: F401  pylint: disable=import-error,unused-import


def run_cancellable(service, targets):
    with pytest.raises(cancel.Cancelled):
        with cancel.sigterm_cancels():
            service.run(targets)


def test_sigterm_after_the_first_attach_starts_no_other_and_notes_the_first(fab):
    machine = fab.machines[0]
    attached = []

    def on_transition(record):
        attached.append(record["res_uuid"])
        if len(attached) == 1:
            sigterm_self()

    run_cancellable(fab.service("fti_fm", on_transition=on_transition), [Target(machine_id=machine, model="A100", count=3)])
    assert len(fab.mutations("attach")) == 1 and [d["res_uuid"] for d in fab.devices()] == attached
    assert cancel.notes() == ["attach of a gpu A100 to machine %s sent" % machine, "A100 %s attached to machine %s" % (attached[0], machine)]
    assert cancel.message("fabric_device", temporary=False) == (
        "fabric_device: cancelled (SIGTERM) - done before: attach of a gpu A100 to machine %s sent; A100 %s attached to machine %s - "
        "not done: everything not listed as done (nothing else was started)" % (machine, attached[0], machine))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is only installed while the run lasts
    # what the task's result carries (call_engine): the attach done, not a bare changed: false (t36-fabric)
    partial = cancel.partial_result()
    assert partial["changed"] is True and [d["res_uuid"] for d in partial["attached"]] == attached
    assert [(a["action"], a["res_uuid"]) for a in partial["actions"]] == [("attach", attached[0])] and partial["pending"] == []


def test_sigterm_while_waiting_for_an_asynchronous_attach_stops_the_wait_and_sends_nothing_more(fab):
    fab.control.configure(cm_polls=1000)  # the Cluster Manager keeps the device ADDING
    backend = fab.backend("fti_cm")
    read_machine = backend.read_machine
    reads = []

    def reading(machine_id):
        devices = read_machine(machine_id)
        reads.append(machine_id)
        if len(reads) == 4:  # planned, attached, then waiting for the device to be ready
            sigterm_self()
        return devices

    backend.read_machine = reading
    run_cancellable(fab.service("fti_cm", backend=backend, wait_timeout=600), [Target(machine_id=fab.machines[0], model="A100", count=2)])
    assert len(fab.mutations("attach")) == 1 and len(reads) == 4
    assert cancel.notes() == ["attach of a gpu A100 to machine %s sent" % fab.machines[0]]
    assert cancel.partial_result()["attached"] == [], "the device was still being added: sent (noted), not attached"


def test_sigterm_ends_the_pause_between_two_polls_at_once(fab):
    """A wait's pause between two polls (a minute here: poll_interval=60) ends on SIGTERM, and the run stops then, not
    at its next poll (``cancel.pause``, the service's default sleep)."""
    fab.control.configure(cm_polls=1000)  # the Cluster Manager keeps the device ADDING: the service waits for it
    service = fab.service("fti_cm", wait_timeout=600, poll_interval=60)
    pause = service.sleep
    pauses = []

    def pausing(seconds):
        pauses.append(seconds)
        threading.Thread(target=sigterm_self).start()  # SIGTERM arrives while this worker pauses
        pause(seconds)

    service.sleep = pausing
    began = time.monotonic()
    run_cancellable(service, [Target(machine_id=fab.machines[0], model="A100", count=1)])
    assert pauses == [60.0] and len(fab.mutations("attach")) == 1
    assert time.monotonic() - began < 50, "the minute's pause was not cut short by SIGTERM"


def test_sigterm_before_a_detach_leaves_the_device_attached(fab):
    machine = fab.machines[1]
    seeded = fab.control.seed(machine, "A100", 2)
    detached = []

    def on_transition(record):
        detached.append(record["res_uuid"])
        sigterm_self()

    run_cancellable(fab.service("fti_fm", on_transition=on_transition), [Target(machine_id=machine, model="A100", count=0)])
    assert len(fab.mutations("detach")) == 1 and len(fab.devices(1)) == 1
    assert cancel.notes() == ["%s detached from machine %s" % (detached[0], machine)]
    assert detached[0] in [d["res_uuid"] for d in seeded]
