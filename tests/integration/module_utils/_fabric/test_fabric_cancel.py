"""SIGTERM (AWX's cancel) during a fabric run, on the HTTPS simulator: no attach or detach starts after it, the one in
flight is finished, a wait stops at its next poll, and what was done is noted for the task's message.

The signal is real (``os.kill`` of this process from a machine thread, at a known step); ``_common.cancel`` turns it
into ``Cancelled`` in the main thread, which only waits for the machine threads.
"""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.exclusive import GatedClient, fabric_lease_name, run_exclusive
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import DeviceRecords
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

from sigterm import fresh_cancel_state, sigterm_self  # noqa: F401  pylint: disable=import-error,unused-import


def test_sigterm_under_the_stack_lease_stops_the_run_and_releases_the_lease(fab, kube, client):
    """A run of a stack holds the stack's fabric Lease while it attaches: a SIGTERM after its first attach stops it as
    above, and the Lease is deleted on the way out (the next run need not wait for it to expire)."""
    as_fabric = client("fabric")
    attached = []

    def on_transition(record):
        attached.append(record["res_uuid"])
        if len(attached) == 1:
            sigterm_self()

    def attempt(gate):
        records = DeviceRecords(GatedClient(as_fabric, gate), kube.namespace, stack="cancelled")
        service = fab.service("fti_fm", records=records, gate=gate, on_transition=on_transition)
        return service.run([Target(machine_id=fab.machines[0], model="A100", count=3)])

    with pytest.raises(cancel.Cancelled):
        with cancel.sigterm_cancels():
            run_exclusive(as_fabric, "cancelled", kube.namespace, attempt)
    assert len(fab.mutations("attach")) == 1 and [d["res_uuid"] for d in fab.devices()] == attached
    lease = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (kube.namespace, fabric_lease_name("cancelled"))
    assert kube.get(lease) is None, "the Lease was released"
    assert "Lease %s/%s released" % (kube.namespace, fabric_lease_name("cancelled")) in cancel.message("fabric_device", temporary=False)
