"""Never misreport (issue 36): a fabric change that happened - or may have - is in the result even when the run then
fails: ``changed: true``, the device in ``attached`` / ``detached`` / ``rolled_back`` with its state, and every change whose
outcome was not final in ``pending`` (also in ``actions``, marked ``pending``, with the device's last ``status`` and the
``reason``). The issue's case: an asynchronous attach still being added at ``wait_timeout`` failed with ``changed: false,
attached: []`` while the GPU stayed attached."""

import time

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import FAILED, PENDING, READY, REMOVING
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import AmbiguousOutcome, FabricHTTPError, Transport

from test_fabric_service import MemoryBackend, cluster_of, service  # pylint: disable=import-error


def ticking():
    """A clock that moves 10 s per read: a wait's deadline has passed at its first check (no real time waited)."""
    ticks = iter(range(0, 10 ** 6, 10))
    return lambda: next(ticks)


class Asynchronous(MemoryBackend):
    """An asynchronous fabric (the Cluster Manager's way): attach ``n`` adds a device in ``phases[n - 1]`` (default ready);
    a detach leaves the device ``removing`` when ``removes`` is false."""

    asynchronous = True

    def __init__(self, machines, phases=(), removes=True, **kw):
        super(Asynchronous, self).__init__(machines, **kw)
        self.phases = list(phases)
        self.removes = removes
        self.attaches = 0

    def attach(self, machine_id, dtype, model, devices):
        self.calls.append(("attach", machine_id, model))
        self.attaches += 1
        phase = self.phases[self.attaches - 1] if self.attaches <= len(self.phases) else READY
        self.add(machine_id, model, dtype, phase=phase)

    def detach(self, machine_id, device, devices):
        if self.removes:
            return super(Asynchronous, self).detach(machine_id, device, devices)
        self.calls.append(("detach", machine_id, device.res_uuid))
        for known in self.machines[machine_id]:
            if known.res_uuid == device.res_uuid:
                known.phase = REMOVING
        return None


def failing(run):
    with pytest.raises(AicrError) as info:
        run()
    return info.value


def only(details, *keys):
    return [dict((k, item.get(k)) for k in keys) for item in details]


def test_an_attach_still_being_added_at_wait_timeout_is_reported_attached_and_pending():
    backend = Asynchronous(["m0"], phases=[PENDING])
    error = failing(lambda: service(backend, wait_timeout=1, clock=ticking()).run([Target(machine_id="m0", model="A100", count=1)]))
    assert error.msg == ("machine m0: device r-1 still being added after 1s (wait_timeout); it stays attached (status pending) - re-run to "
                         "converge, or raise wait_timeout")
    details = error.details
    assert details["changed"] is True
    assert only(details["attached"], "res_uuid", "status", "machine") == [{"res_uuid": "r-1", "status": "pending", "machine": "m0"}]
    assert only(details["actions"], "action", "res_uuid", "pending", "status") == [
        {"action": "attach", "res_uuid": "r-1", "pending": True, "status": "pending"}]
    assert details["pending"] == details["actions"] and details["pending"][0]["reason"] == error.msg
    assert [d["res_uuid"] for d in details["devices"]] == ["r-1"]  # the machine as it is after the run
    assert [d.res_uuid for d in backend.machines["m0"]] == ["r-1"]


def test_the_status_hook_hears_of_a_device_attached_but_still_pending():
    backend = Asynchronous(["m0"], phases=[PENDING])
    seen = []
    failing(lambda: service(backend, wait_timeout=1, clock=ticking(), on_transition=seen.append).run([Target(machine_id="m0", model="A100", count=1)]))
    assert [(r["event"], r["res_uuid"], r["status"]) for r in seen] == [("attached", "r-1", "pending")]


def test_an_accepted_attach_that_never_shows_is_pending_with_no_device():
    class Accepts(MemoryBackend):
        def attach(self, machine_id, dtype, model, devices):
            self.calls.append(("attach", machine_id, model))

    error = failing(lambda: service(Accepts(["m0"])).run([Target(machine_id="m0", model="A100", count=1)]))
    assert "the fabric accepted the attach but no new gpu device appeared" in error.msg
    assert error.details["changed"] is True and error.details["attached"] == []
    assert only(error.details["pending"], "action", "res_uuid", "status", "reason") == [
        {"action": "attach", "res_uuid": None, "status": None, "reason": error.msg}]


def test_an_unknown_outcome_sent_again_and_still_unknown_is_pending():
    class TimesOut(MemoryBackend):
        def attach(self, machine_id, dtype, model, devices):
            self.calls.append(("attach", machine_id, model))
            raise AmbiguousOutcome("attach: HTTP 504: gateway timeout from a gateway; the fabric behind it may still be applying it", kind="transport",
                                   status=504)

    backend = TimesOut(["m0"])
    error = failing(lambda: service(backend).run([Target(machine_id="m0", model="A100", count=1)]))
    assert error.msg == "m0: attach: HTTP 504: gateway timeout from a gateway; the fabric behind it may still be applying it"
    assert [c[0] for c in backend.mutations()] == ["attach", "attach"]
    assert error.details["changed"] is True
    assert only(error.details["pending"], "action", "res_uuid", "pending") == [{"action": "attach", "res_uuid": None, "pending": True}]


def test_a_definite_refusal_is_no_change():
    class Refuses(MemoryBackend):
        def attach(self, machine_id, dtype, model, devices):
            self.calls.append(("attach", machine_id, model))
            raise FabricHTTPError("attach: HTTP 409: insufficient_resources", status=409)

    error = failing(lambda: service(Refuses(["m0"])).run([Target(machine_id="m0", model="A100", count=1)]))
    assert error.details["changed"] is False and error.details["pending"] == [] and error.details["actions"] == []


class ReadFailsAfterTheChange(MemoryBackend):
    """The fabric stops answering reads once a change was sent."""

    def __init__(self, machines):
        super(ReadFailsAfterTheChange, self).__init__(machines)
        self.changed = False

    def read_machine(self, machine_id):
        if self.changed:
            raise AicrError("GET machine %s: connection failed (refused) (after 2 attempts)" % machine_id, field="endpoint")
        return super(ReadFailsAfterTheChange, self).read_machine(machine_id)

    def attach(self, machine_id, dtype, model, devices):
        super(ReadFailsAfterTheChange, self).attach(machine_id, dtype, model, devices)
        self.changed = True

    def detach(self, machine_id, device, devices):
        super(ReadFailsAfterTheChange, self).detach(machine_id, device, devices)
        self.changed = True


def test_a_reread_that_fails_after_an_attach_leaves_the_attach_pending():
    backend = ReadFailsAfterTheChange(["m0"])
    error = failing(lambda: service(backend).run([Target(machine_id="m0", model="A100", count=1)]))
    assert error.msg == ("machine m0: attach of a gpu A100 to machine m0 sent, then re-reading the machine failed: GET machine m0: connection "
                         "failed (refused) (after 2 attempts); its outcome is not known - re-run to converge (nothing re-sent)")
    assert error.details["changed"] is True and len(backend.machines["m0"]) == 1
    assert only(error.details["pending"], "action", "res_uuid") == [{"action": "attach", "res_uuid": None}]


def test_a_reread_that_fails_after_a_detach_leaves_the_detach_pending():
    backend = ReadFailsAfterTheChange(["m0"])
    device = backend.add("m0")
    error = failing(lambda: service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", state="absent")]))
    assert "detach of %s from machine m0 sent, then re-reading the machine failed" % device.res_uuid in error.msg
    assert error.details["changed"] is True
    assert only(error.details["pending"], "action", "res_uuid", "status") == [{"action": "detach", "res_uuid": device.res_uuid, "status": "ok"}]


def test_a_detach_still_removing_at_wait_timeout_is_reported_detached_and_pending():
    backend = Asynchronous(["m0"], removes=False)
    device = backend.add("m0")
    seen = []
    error = failing(lambda: service(backend, force_detach=True, wait_timeout=1, clock=ticking(), on_transition=seen.append).run(
        [Target(machine_id="m0", model="A100", count=0)]))
    assert error.msg == ("machine m0: %s is still being removed after 1s (wait_timeout); the fabric goes on removing it (status removing) - "
                         "re-run to converge, or raise wait_timeout" % device.res_uuid)
    assert error.details["changed"] is True
    assert only(error.details["detached"], "res_uuid", "status") == [{"res_uuid": device.res_uuid, "status": "removing"}]
    assert only(error.details["pending"], "action", "res_uuid", "status") == [{"action": "detach", "res_uuid": device.res_uuid, "status": "removing"}]
    assert seen == []  # still on the machine: the stack's status keeps the device until a run sees it gone


def test_an_accepted_detach_that_never_shows_is_pending():
    class Ignores(MemoryBackend):
        def detach(self, machine_id, device, devices):
            self.calls.append(("detach", machine_id, device.res_uuid))

    backend = Ignores(["m0"])
    device = backend.add("m0")
    error = failing(lambda: service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", count=0)]))
    assert "the fabric accepted the detach of %s but it is still attached" % device.res_uuid in error.msg
    assert error.details["changed"] is True and error.details["detached"] == []
    assert only(error.details["pending"], "action", "res_uuid", "status") == [{"action": "detach", "res_uuid": device.res_uuid, "status": "ok"}]


def test_a_failed_device_whose_rollback_fails_is_reported_attached():
    class CannotDetach(Asynchronous):
        def detach(self, machine_id, device, devices):
            self.calls.append(("detach", machine_id, device.res_uuid))
            raise FabricHTTPError("detach: HTTP 409: device busy", status=409)

    backend = CannotDetach(["m0"], phases=[FAILED])
    error = failing(lambda: service(backend).run([Target(machine_id="m0", model="A100", count=1)]))
    assert error.msg.startswith("machine m0: attached device r-1 failed and rolling it back failed too: machine m0: detach of r-1 failed"), error.msg
    assert error.details["changed"] is True
    assert only(error.details["attached"], "res_uuid", "status") == [{"res_uuid": "r-1", "status": "failed"}]
    assert error.details["rolled_back"] == []


def test_all_or_nothing_names_the_device_a_pending_attach_left():
    """Attach 2 of 2 is still being added at wait_timeout: the first is rolled back, the second stays - and the message
    says so instead of 'nothing attached'."""
    backend = Asynchronous(["m0"], phases=[READY, PENDING])
    error = failing(lambda: service(backend, force_detach=True, wait_timeout=1, clock=ticking()).run([Target(machine_id="m0", model="A100", count=2)]))
    assert error.msg.startswith("machine m0: attach 2 of 2 failed: machine m0: device r-2 still being added after 1s (wait_timeout)")
    assert error.msg.endswith("; rolled back the 1 attached before it (r-1); still attached by this run: r-2"), error.msg
    assert [d["res_uuid"] for d in error.details["attached"]] == ["r-2"] and [d["res_uuid"] for d in error.details["rolled_back"]] == ["r-1"]
    assert error.details["kept"] == ["r-2"] and error.details["changed"] is True
    assert [d.res_uuid for d in backend.machines["m0"]] == ["r-2"]


def test_partial_keeps_a_pending_device_too():
    backend = Asynchronous(["m0"], phases=[READY, PENDING])
    error = failing(lambda: service(backend, partial=True, wait_timeout=1, clock=ticking()).run([Target(machine_id="m0", model="A100", count=2)]))
    assert "partial=true keeps the 2 attached: r-1, r-2" in error.msg
    assert error.details["kept"] == ["r-1", "r-2"] and [d["res_uuid"] for d in error.details["attached"]] == ["r-1", "r-2"]


class StubRecords:
    """Every stack's device records, empty (the orphan sweep's view)."""

    stack = None
    foreign_claims = []
    warnings = []

    def load(self):
        return self

    def recorded_by_anyone(self):
        return set()

    def open_intents(self, machine=None, others=False):
        return []

    def clock(self):
        return 0


class RefusedLedger:
    def load(self):
        raise AicrError("orphans: reading ConfigMap aicr-system/aicr-fabric-orphans failed: 403 forbidden", field="orphans", status=403)


def test_an_orphan_sweep_failing_after_the_targets_reports_what_they_did():
    backend = MemoryBackend(["m0"])
    error = failing(lambda: service(backend, records=StubRecords(), orphans="report", ledger=RefusedLedger()).run(
        [Target(machine_id="m0", model="A100", count=1)]))
    assert error.msg == "orphans: reading ConfigMap aicr-system/aicr-fabric-orphans failed: 403 forbidden"
    assert error.details["changed"] is True and [d["res_uuid"] for d in error.details["attached"]] == ["r-1"]
    assert error.details["status"] == 403 and error.details["field"] == "orphans"


class Ledger:
    """An orphan ledger that reads and writes nothing."""

    entries = {}
    foreign_claims = []
    writes = 0

    def load(self):
        return self

    def save(self):
        return None


def test_an_orphan_detach_sent_whose_outcome_is_open_is_pending_not_refused():
    class Ignores(MemoryBackend):
        def detach(self, machine_id, device, devices):
            self.calls.append(("detach", machine_id, device.res_uuid))

    backend = Ignores(["m0"])
    orphan = backend.add("m0")
    cluster, _fake = cluster_of({"node-0": "m0"})
    result = service(backend, cluster, records=StubRecords(), orphans="detach", orphan_grace=0, ledger=Ledger(), force_detach=True).run([])
    assert result["changed"] is True
    assert only(result["orphans"]["devices"], "res_uuid", "action") == [{"res_uuid": orphan.res_uuid, "action": "pending"}]
    assert "the fabric accepted the detach of %s but it is still attached" % orphan.res_uuid in result["orphans"]["devices"][0]["reason"]
    assert only(result["pending"], "action", "res_uuid", "orphan") == [{"action": "detach", "res_uuid": orphan.res_uuid, "orphan": True}]


# --- on the HTTPS fabric simulator ------------------------------------------------------------------------------------

def test_the_issues_case_on_the_cluster_manager(fab):
    """provider fti_cm, count 1: the Cluster Manager keeps the device ADDING past wait_timeout - the failed result lists it
    attached and pending, and the fabric has it."""
    fab.control.configure(cm_polls=1000)
    error = failing(lambda: fab.service("fti_cm", wait_timeout=1, clock=ticking()).run([Target(machine_id=fab.machines[0], model="A100", count=1)]))
    on_fabric = [d["res_uuid"] for d in fab.devices()]
    assert len(on_fabric) == 1 and "still being added after 1s (wait_timeout); it stays attached (status pending)" in error.msg
    assert error.details["changed"] is True
    assert only(error.details["attached"], "res_uuid", "status") == [{"res_uuid": on_fabric[0], "status": "pending"}]
    assert only(error.details["pending"], "action", "res_uuid") == [{"action": "attach", "res_uuid": on_fabric[0]}]


def test_a_redfish_task_still_running_is_a_pending_attach_never_resent(fab):
    fab.control.configure(rf_tasks=1000)
    backend = fab.backend("redfish")
    backend.task_timeout, backend.clock = 3.0, ticking()
    error = failing(lambda: fab.service("redfish", backend=backend).run([Target(machine_id=fab.machines[0], model="A100", count=1)]))
    assert "the fabric's task is still running after 3s" in error.msg and len(fab.mutations("attach")) == 1
    assert error.details["changed"] is True
    assert only(error.details["pending"], "action", "res_uuid", "reason") == [{"action": "attach", "res_uuid": None, "reason": error.msg}]


def _late_commit_outcomes(fab, op):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        outcomes = [e["late_commit"] for e in fab.control.requests(op=op) if e.get("late_commit")]
        if outcomes and "pending" not in outcomes:
            return outcomes
        time.sleep(0.05)
    raise AssertionError("the late commit never landed")


def test_a_gateways_504_whose_attach_lands_after_the_run_was_reported_pending(fab):
    """The gateway answers 504 and the manager applies the attach only after the run gave up (released by the test once
    the run has failed): the failed run said changed, and pending; the device then is there."""
    fab.control.fault(op="attach", action="late_commit", status=504, release=True)
    error = failing(lambda: fab.service("fti_fm", mutation_retries=0, clock=ticking()).run([Target(machine_id=fab.machines[0], model="A100", count=1)]))
    assert "HTTP 504" in error.msg and fab.devices() == []
    assert error.details["changed"] is True
    assert only(error.details["pending"], "action", "res_uuid", "status") == [{"action": "attach", "res_uuid": None, "status": None}]
    fab.control.release()
    assert _late_commit_outcomes(fab, "attach") == ["applied"]
    assert len(fab.devices()) == 1


def test_a_mutation_that_never_connected_is_no_unknown_outcome():
    """Connection refused: the request never left this host - not ambiguous (no pending change, retried as a read is)."""
    transport = Transport("127.0.0.1:9", timeout=0.5, read_retries=1, retry_backoff=0.01)
    with pytest.raises(AicrError) as info:
        transport.request("PATCH", "/fabric_manager/api/v1/machines/m/update", json_body={}, what="attach")
    assert not isinstance(info.value, AmbiguousOutcome)
    assert info.value.msg.startswith("attach: connection failed") and info.value.msg.endswith("(after 2 attempts)")
