"""One run at a time changes a stack's devices (``_fabric/exclusive.py``): the stack's fabric Lease.

The fabric is the HTTPS simulator; the device records and the Lease live on the lab's real kube-apiserver, read and
written as the least-privilege ``fabric`` identity (the shipped Role ``aicr-runtime:lease`` bound in the test's
namespace, as a user binds it in ``stack_namespace``). A run is held inside its first attach by a records double that
waits on an event (no sleeps), while a second run of the same stack starts.
"""

import threading

import pytest

from aicr_lab.controlplane import identities
from aicr_lab.controlplane.rest import ApiError

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric import exclusive as exclusive_module
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.exclusive import GatedClient, fabric_lease_name, run_exclusive
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import DeviceRecords
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

from waiting import wait_for  # pylint: disable=import-error

LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"
WAIT = 30  # seconds a test waits for the other thread's step before it fails


def a100(fab, count, machine=0):
    return [Target(machine_id=fab.machines[machine], model="A100", count=count)]


class HeldInsideAttach(DeviceRecords):
    """Stops the run after its first intent is stored (under the Lease) until the test lets it go on."""

    inside = None
    go_on = None

    def intend(self, *args, **kw):
        intent = DeviceRecords.intend(self, *args, **kw)
        if self.client.gate.lease is not None:
            HeldInsideAttach.inside.set()
            assert HeldInsideAttach.go_on.wait(WAIT), "the test never let the first run go on"
        return intent


@pytest.fixture
def exclusive(fab, kube, client):
    """``exclusive.run(stack, count, records_cls=DeviceRecords, namespace=None, identity="fabric")``: one fabric_device run
    of ``stack`` as run.py makes it (records and service rebuilt per attempt, under run_exclusive)."""

    class Exclusive:
        namespace = kube.namespace

        @staticmethod
        def run(stack, count, records_cls=DeviceRecords, namespace=None, identity="fabric"):
            as_identity = client(identity)
            namespace = namespace or kube.namespace

            def attempt(gate):
                records = records_cls(GatedClient(as_identity, gate), namespace, stack=stack)
                return fab.service(records=records, gate=gate, max_workers=1).run(a100(fab, count))

            return run_exclusive(as_identity, stack, namespace, attempt, message="test run of stack %s" % stack)

        @staticmethod
        def lease(stack, namespace=None):
            return kube.get((LEASES % (namespace or kube.namespace)) + "/" + fabric_lease_name(stack))

    return Exclusive


def test_a_run_that_changes_something_holds_the_lease_and_a_converged_rerun_takes_none(fab, exclusive, kube):
    fab.control.clear_requests()
    mark = kube.audit_mark()
    first = exclusive.run("alpha", 2)
    assert first["changed"] is True and len(first["attached"]) == 2
    writes = [(e["verb"], e["resource"]) for e in kube.audit(since=mark, mutating=True, user=kube.user("fabric"))]
    assert writes[0] == ("create", "leases") and writes[-1] == ("delete", "leases"), "every record write under the Lease: %s" % writes
    assert ("patch", "configmaps") in writes
    assert first["lease"] == "%s/%s" % (exclusive.namespace, fabric_lease_name("alpha"))
    assert len(fab.mutations("attach")) == 2, "the restart under the Lease attached the deficit once, not twice"
    assert exclusive.lease("alpha") is None, "the Lease is released (deleted) at the end"

    mark = kube.audit_mark()
    fab.control.clear_requests()
    again = exclusive.run("alpha", 2)
    assert again["changed"] is False and again["lease"] is None
    assert fab.mutations() == []
    assert kube.audit(since=mark, mutating=True, user=kube.user("fabric")) == [], "a converged re-run makes no mutating call"


def test_a_second_run_of_the_stack_while_the_first_holds_the_lease_fails_and_changes_nothing(fab, exclusive):
    HeldInsideAttach.inside, HeldInsideAttach.go_on = threading.Event(), threading.Event()
    outcome = {}

    def first_run():
        try:
            outcome["result"] = exclusive.run("beta", 2, records_cls=HeldInsideAttach)
        except AicrError as exc:  # reported below: the assertion names it
            outcome["error"] = exc

    fab.control.clear_requests()
    worker = threading.Thread(target=first_run)
    worker.start()
    try:
        assert HeldInsideAttach.inside.wait(WAIT), "the first run never reached its first attach"
        with pytest.raises(AicrError) as refused:
            exclusive.run("beta", 2)
    finally:
        HeldInsideAttach.go_on.set()
        worker.join(WAIT)
    assert refused.value.msg.startswith("lease: stack beta is being converged on the fabric by "), refused.value.msg
    assert "test run of stack beta" in refused.value.msg and refused.value.details["lease"].endswith(fabric_lease_name("beta"))
    assert "error" not in outcome, outcome.get("error")
    assert len(outcome["result"]["attached"]) == 2
    assert len(fab.mutations("attach")) == 2, "only the run holding the Lease attached"
    assert len([d for d in fab.devices(0) if d["model"].lower() == "a100"]) == 2


def test_the_lease_of_a_killed_run_is_taken_over_once_it_expired(fab, exclusive, kube):
    kube.rest.create(LEASES % exclusive.namespace, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": fabric_lease_name("gamma")},
        "spec": {"holderIdentity": "killed@elsewhere/1-dead", "leaseDurationSeconds": 10,
                 "renewTime": "2026-01-01T00:00:00.000000Z", "acquireTime": "2026-01-01T00:00:00.000000Z"}})
    done = exclusive.run("gamma", 1)
    assert len(done["attached"]) == 1
    assert any("took over" in w and "killed@elsewhere/1-dead" in w for w in done["warnings"]), done["warnings"]
    assert exclusive.lease("gamma") is None


def test_without_the_lease_role_in_stack_namespace_the_run_stops_before_any_change(fab, exclusive, kube):
    # ConfigMaps there (the status backend's role, bound by mistake instead of the lease Role): the device records are
    # read, and the Lease is refused (without any role there the records' read is refused first: test_fabric_device.py)
    unbound = kube.create_namespace("fab-unbound", lease_role=False)
    identities.bind_cluster_role_in_namespace(kube.rest, unbound, "aicr-runtime:stack-configmap", identities=("fabric",))
    kube.wait_authorized("fabric", unbound, "", "configmaps", verb="list")
    fab.control.clear_requests()
    with pytest.raises(AicrError) as refused:
        exclusive.run("delta", 1, namespace=unbound)
    message = refused.value.msg
    # the verb and resource refused (from the request), the namespace, and the Role to bind there (issue 36)
    assert message.startswith("lease: this identity may not get leases (coordination.k8s.io) in namespace %s (stack_namespace); bind the Role "
                              "aicr-runtime:lease in namespace %s with a RoleBinding" % (unbound, unbound)), message
    assert refused.value.details["field"] == "stack_namespace" and refused.value.details["status"] == 403
    assert refused.value.details["rbac"] == {"kind": "Role", "name": "aicr-runtime:lease", "namespace": unbound,
                                             "files": ["meta/rbac/aicr-system.yaml", "examples/rbac/lease-rolebinding.yaml"]}
    assert refused.value.details["request"] == {"verb": "get", "resource": "leases", "group": "coordination.k8s.io", "namespace": unbound,
                                                "name": "aicr-fabric-delta"}
    assert fab.mutations() == [], "nothing was attached"


class LeaseStolenAfterTheLastWrite(DeviceRecords):
    """After the run's last record write (the attached device confirmed), another holder overwrites the stack's Lease;
    returns once the run's renewal has found it."""

    kube = None

    def confirm(self, *args, **kw):
        DeviceRecords.confirm(self, *args, **kw)
        lease = self.client.gate.lease
        path = (LEASES % self.namespace) + "/" + lease.name
        for _attempt in range(5):  # a renewal of the run between the read and the write makes it a 409: read again
            live = LeaseStolenAfterTheLastWrite.kube.get(path)
            live["spec"]["holderIdentity"] = "thief@elsewhere/9-z"
            try:
                LeaseStolenAfterTheLastWrite.kube.rest.request("PUT", path, body=live)
                break
            except ApiError as exc:
                if exc.status != 409:
                    raise
        wait_for(lambda: lease.lost is not None, 10, "the renewal after the theft never ran")


def test_a_lease_lost_after_the_last_change_fails_the_run_and_reports_what_it_did(fab, exclusive, kube, monkeypatch):
    monkeypatch.setattr(exclusive_module, "LEASE_DURATION", 5)  # renewed every 1.7 s (the shortest duration StackLease takes)
    LeaseStolenAfterTheLastWrite.kube = kube
    with pytest.raises(AicrError) as lost:
        exclusive.run("epsilon", 1, records_cls=LeaseStolenAfterTheLastWrite)
    message, details = lost.value.msg, lost.value.details
    assert message.startswith("lease: this run lost the Lease of stack epsilon after its last change: ") and "thief@elsewhere/9-z" in message, message
    assert details["changed"] is True and len(details["attached"]) == 1 and len(fab.mutations("attach")) == 1, details
    assert details["lease"] == "%s/%s" % (exclusive.namespace, fabric_lease_name("epsilon"))
    live = exclusive.lease("epsilon")
    assert live["spec"]["holderIdentity"] == "thief@elsewhere/9-z", "the other holder's Lease is left alone"
