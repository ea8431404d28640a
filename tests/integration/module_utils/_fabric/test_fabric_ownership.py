"""The fault matrix, continued: devices owned per stack and the orphan sweep (issue #19, items 4 and 5).

The fabric is the HTTPS simulator; the stacks' device records and the orphan ledger are ConfigMaps on the lab's real
kube-apiserver, read and written as the least-privilege ``fabric`` identity in the test's namespace. Cases: two stacks
sharing a machine and a model (each counts and prunes only its own), a run killed after the attach and before the
record (the next run adopts the device, or reports it when ambiguous, or drops an intent whose attach never happened),
and the orphan sweep (report, within grace left alone, detach after grace, check mode, a recorded device never touched,
the drain check, devices held by an open intent).
"""

import json
import time

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import KubernetesClusterView
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.orphans import LEDGER_NAME, OrphanLedger
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import DeviceRecords, records_name
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

from doubles import FakeCluster  # pylint: disable=import-error


class Killed(BaseException):
    """The process ending mid-run (not an error the service could catch)."""


@pytest.fixture
def own(fab, kube, client):
    """``own.records(stack)``, ``own.run(stack, targets)``, ``own.stored(stack)``: records in the test's namespace as ``fabric``."""
    fabric = client("fabric")

    class Own:
        namespace = kube.namespace

        @staticmethod
        def records(stack=None, cls=DeviceRecords, **kw):
            return cls(fabric, kube.namespace, stack=stack, **kw)

        @staticmethod
        def run(stack, targets, records=None, **options):
            if "orphans" in options:
                options.setdefault("ledger", OrphanLedger(fabric, kube.namespace, dry_run=options.get("check_mode", False)))
            records = records or Own.records(stack, dry_run=options.get("check_mode", False))
            return fab.run(targets, records=records, max_workers=1, **options)

        @staticmethod
        def stored(stack):
            obj = kube.rest.get("/api/v1/namespaces/%s/configmaps/%s" % (kube.namespace, records_name(stack)))
            return obj, json.loads(obj["data"]["records"])

        @staticmethod
        def ledger():
            obj = kube.get("/api/v1/namespaces/%s/configmaps/%s" % (kube.namespace, LEDGER_NAME))
            return json.loads(obj["data"]["orphans"]) if obj else None

        @staticmethod
        def backdate_ledger(seconds):
            """The ledger's first-seen times moved ``seconds`` into the past (as admin: the clock has moved on)."""
            from ansible_collections.aicr.runtime.plugins.module_utils._common.timeutil import age_seconds, millis_from_epoch  # noqa
            path = "/api/v1/namespaces/%s/configmaps/%s" % (kube.namespace, LEDGER_NAME)
            obj = kube.rest.get(path)
            entries = json.loads(obj["data"]["orphans"])
            now = fabric.server_time()
            for entry in entries.values():
                entry["first_seen"] = millis_from_epoch(now - age_seconds(entry["first_seen"], now) - seconds)
            obj["data"]["orphans"] = json.dumps(entries)
            kube.rest.request("PUT", path, body=obj)

    return Own


def uuids(items):
    return sorted(d["res_uuid"] for d in items)


def a100(fab, count, machine=0, **kw):
    return [Target(machine_id=fab.machines[machine], model="A100", count=count, **kw)]


# --- two stacks on one machine --------------------------------------------------------------------------------

def test_two_stacks_sharing_a_machine_and_a_model_each_count_and_prune_only_their_own(fab, own):
    first, error = own.run("alpha", a100(fab, 2))
    assert error is None, error.msg
    second, error = own.run("beta", a100(fab, 1))
    assert error is None, error.msg
    assert len(fab.devices()) == 3 and len(second["attached"]) == 1, "beta must not count alpha's two A100s"
    alpha, beta = uuids(first["owned"]), uuids(second["owned"])
    assert len(alpha) == 2 and len(beta) == 1 and not set(alpha) & set(beta)

    obj, stored = own.stored("alpha")
    assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "aicr-runtime", "aicr.io/stack": "alpha",
                                         "app.kubernetes.io/component": "fabric-devices"}
    assert [m["manager"] for m in obj["metadata"]["managedFields"]] == ["aicr-runtime"]
    assert uuids(stored) == alpha and all(r["stack"] == "alpha" and r["machine"] == fab.machines[0] and r["run_id"] for r in stored)

    # converged: no mutation, no record write
    fab.control.clear_requests()
    again, error = own.run("alpha", a100(fab, 2))
    assert error is None and again["changed"] is False and again["records"]["writes"] == 0 and fab.mutations() == []

    # alpha asks for another device's id it does not own: left alone, said so
    foreign, error = own.run("alpha", [Target(machine_id=fab.machines[0], state="absent", devices=beta)])
    assert error is None and foreign["changed"] is False, error
    assert any("are not recorded for stack alpha; not detached" in w for w in foreign["warnings"])

    # alpha prunes (count 0): only its own two go; beta's stays and beta's record is untouched
    pruned, error = own.run("alpha", a100(fab, 0))
    assert error is None, error.msg
    assert uuids(pruned["detached"]) == alpha
    assert uuids(fab.devices()) == beta
    assert own.stored("alpha")[1] == [] and uuids(own.stored("beta")[1]) == beta

    # beta's absent (every A100 of beta) detaches only beta's; a device nobody recorded stays
    stray = fab.control.seed(fab.machines[0], "A100", 1)[0]["res_uuid"]
    gone, error = own.run("beta", [Target(machine_id=fab.machines[0], model="A100", state="absent")])
    assert error is None and uuids(gone["detached"]) == beta
    assert uuids(fab.devices()) == [stray]


def test_a_recorded_device_the_fabric_lost_is_forgotten(fab, own):
    done, error = own.run("alpha", a100(fab, 1))
    assert error is None
    recorded = uuids(done["owned"])
    fab.control.fault(op="read", action="omit_device")  # one read misses it: marked, not forgotten
    glitch, error = own.run("alpha", a100(fab, 1))
    assert error is None and glitch["attached"] == [] and fab.mutations("attach") == [fab.mutations("attach")[0]], "no second attach"
    assert any("are not on the machine; forgotten if the next run misses them too" in w for w in glitch["warnings"]), glitch["warnings"]
    back, error = own.run("alpha", a100(fab, 1))
    assert error is None and back["changed"] is False and uuids(back["owned"]) == recorded
    assert "missing" not in own.stored("alpha")[1][0]

    fab.control.reset(machines=4)  # the device is gone from the fabric (detached by someone else)
    own.run("alpha", a100(fab, 0))
    again, error = own.run("alpha", a100(fab, 0))
    assert error is None and again["detached"] == []
    assert any("are no longer attached; records removed" in w for w in again["warnings"]), again["warnings"]
    assert own.stored("alpha")[1] == []


# --- killed between the attach and its record -----------------------------------------------------------------

class KilledAfterAttach(DeviceRecords):
    """The run ends after the fabric attached the device and before the record is completed."""

    def confirm(self, intent, device, adopted=False):
        raise Killed()


class Ordered(DeviceRecords):
    """Asserts the intent is stored before the attach is sent and completed after it."""

    sim = None

    def intend(self, *args, **kw):
        assert self.sim.control.requests(op="attach") == [], "intent must be written before the PATCH"
        return DeviceRecords.intend(self, *args, **kw)

    def confirm(self, intent, device, adopted=False):
        assert len(self.sim.control.requests(op="attach")) == 1, "the record is completed after the PATCH"
        return DeviceRecords.confirm(self, intent, device, adopted)


def test_the_intent_is_written_before_the_attach_and_completed_after(fab, own):
    Ordered.sim = fab
    fab.control.clear_requests()
    done, error = own.run("alpha", a100(fab, 1), records=own.records("alpha", cls=Ordered))
    assert error is None and done["records"]["writes"] == 2
    record = own.stored("alpha")[1][0]
    assert record["res_uuid"] == done["attached"][0]["res_uuid"] and record["model"] == "A100" and record["type"] == "gpu"
    assert record["pool"] and record["time"] and record["attached"] and "seen" not in record


def test_killed_after_attach_then_rerun_adopts_the_device(fab, own):
    with pytest.raises(Killed):
        own.run("alpha", a100(fab, 1), records=own.records("alpha", cls=KilledAfterAttach))
    attached = fab.devices()
    assert len(attached) == 1
    intent = own.stored("alpha")[1]
    assert len(intent) == 1 and intent[0]["res_uuid"] is None and intent[0]["seen"] == []

    # another stack never adopts it, and does not count it
    other, error = own.run("beta", a100(fab, 0))
    assert error is None and other["changed"] is False and len(fab.devices()) == 1

    fab.control.clear_requests()
    rerun, error = own.run("alpha", a100(fab, 1))
    assert error is None, error.msg
    assert fab.mutations() == [], "the device must be adopted, not attached a second time"
    assert uuids(rerun["records"]["adopted"]) == uuids(attached) == uuids(rerun["owned"])
    assert rerun["changed"] is True
    assert any("adopted into stack alpha" in w for w in rerun["warnings"]), rerun["warnings"]
    stored = own.stored("alpha")[1]
    assert [(r["res_uuid"], r["adopted"]) for r in stored] == [(attached[0]["res_uuid"], True)]

    converged, error = own.run("alpha", a100(fab, 1))
    assert error is None and converged["changed"] is False and converged["records"]["writes"] == 0


def test_killed_after_attach_with_other_new_devices_is_reported_not_adopted(fab, own):
    with pytest.raises(Killed):
        own.run("alpha", a100(fab, 1), records=own.records("alpha", cls=KilledAfterAttach))
    fab.control.seed(fab.machines[0], "A100", 1)  # someone else attached one more meanwhile
    fab.control.clear_requests()
    rerun, error = own.run("alpha", a100(fab, 1))
    assert error is None, error.msg
    assert rerun["records"]["adopted"] == [] and rerun["owned"] == []
    assert fab.mutations() == [], "an unresolved intent counts as held: nothing is attached twice"
    assert any("2 devices no stack records appeared since" in w and "ambiguous, not adopted" in w for w in rerun["warnings"]), rerun["warnings"]
    assert own.stored("alpha")[1][0]["res_uuid"] is None

    # the sweep leaves both alone: they are held by the open intent
    fake = FakeCluster()
    fake.add_node("n0", fab.machines[0])
    sweep, error = own.run(None, [], orphans="detach", orphan_grace=0, cluster=KubernetesClusterView(fake))
    assert error is None, error.msg
    assert [d["action"] for d in sweep["orphans"]["devices"]] == ["held", "held"] and len(fab.devices()) == 2


class KilledBeforeAttach(DeviceRecords):
    """The run ends after writing the intent, before the PATCH."""

    def intend(self, *args, **kw):
        DeviceRecords.intend(self, *args, **kw)
        raise Killed()


def test_an_intent_whose_attach_never_happened_is_dropped(fab, own):
    with pytest.raises(Killed):
        own.run("alpha", a100(fab, 1), records=own.records("alpha", cls=KilledBeforeAttach))
    assert fab.devices() == [] and own.stored("alpha")[1][0]["res_uuid"] is None
    rerun, error = own.run("alpha", a100(fab, 1))
    assert error is None and len(rerun["attached"]) == 1
    assert any("attach(es) never happened" in w for w in rerun["warnings"]), rerun["warnings"]
    assert uuids(own.stored("alpha")[1]) == uuids(rerun["attached"])


def test_a_refused_attach_leaves_no_open_intent(fab, own):
    fab.control.fault(op="attach", action="error", status=409, body="fti")
    _result, error = own.run("alpha", a100(fab, 1))
    assert error is not None and "HTTP 409" in error.msg
    assert own.stored("alpha")[1] == []


def test_a_gateway_timeout_while_the_manager_still_attaches_leaves_one_device_under_the_intent(fab, own):
    """504 from a gateway while the manager is still attaching: the machine is re-read until the device shows, it is
    adopted under the one intent, and nothing is sent again (before issue 35 it was: two devices, one of them leaked)."""
    fab.control.clear_requests()
    fab.control.fault(op="attach", action="late_commit", status=504, delay=0.5)
    done, error = own.run("alpha", a100(fab, 1))
    deadline = time.monotonic() + 10
    while any(e.get("late_commit") == "pending" for e in fab.control.requests(op="attach")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert error is None, error.msg
    assert len(fab.devices()) == 1 and len(fab.mutations("attach")) == 1, fab.devices()
    assert uuids(own.stored("alpha")[1]) == uuids(fab.devices()) == uuids(done["owned"])
    assert all(record["res_uuid"] for record in own.stored("alpha")[1]), "no open intent left"
    again, error = own.run("alpha", a100(fab, 1))
    assert error is None and again["changed"] is False and len(fab.devices()) == 1


def test_check_mode_with_a_stack_writes_no_record(fab, own, kube):
    planned, error = own.run("alpha", a100(fab, 2), check_mode=True)
    assert error is None and [a["action"] for a in planned["actions"]] == ["attach", "attach"]
    assert kube.get("/api/v1/namespaces/%s/configmaps/%s" % (kube.namespace, records_name("alpha"))) is None
    assert fab.mutations() == []


# --- the orphan sweep --------------------------------------------------------------------------------------------

def test_orphans_report_then_within_grace_then_detach_after_grace(fab, own):
    mine, error = own.run("alpha", a100(fab, 1))
    assert error is None
    recorded = uuids(mine["owned"])
    orphan = fab.control.seed(fab.machines[0], "A100", 1)[0]["res_uuid"]
    targets = [Target(machine_id=fab.machines[0], model="A100", count=1)]

    fab.control.clear_requests()
    report, error = own.run("alpha", targets, orphans="report")
    assert error is None, error.msg
    found = report["orphans"]["devices"]
    assert [(d["res_uuid"], d["action"]) for d in found] == [(orphan, "reported")]
    assert found[0]["first_seen"] and found[0]["detach_after"] > 590
    assert report["changed"] is False and fab.mutations() == [] and report["orphans"]["ledger_writes"] == 1
    assert any("no stack records: %s" % orphan in w for w in report["warnings"]), report["warnings"]
    first_seen = own.ledger()[orphan]["first_seen"]

    again, error = own.run("alpha", targets, orphans="report")
    assert error is None and again["orphans"]["ledger_writes"] == 0, "a converged sweep writes nothing"
    assert own.ledger()[orphan]["first_seen"] == first_seen

    within, error = own.run("alpha", targets, orphans="detach")
    assert error is None and [d["action"] for d in within["orphans"]["devices"]] == ["within_grace"]
    assert within["changed"] is False and fab.mutations() == [] and len(fab.devices()) == 2

    own.backdate_ledger(601)
    planned, error = own.run("alpha", targets, orphans="detach", check_mode=True)
    assert error is None and [d["action"] for d in planned["orphans"]["devices"]] == ["would_detach"]
    assert [(a["action"], a["res_uuid"], a["orphan"]) for a in planned["actions"]] == [("detach", orphan, True)]
    assert fab.mutations() == []

    swept, error = own.run("alpha", targets, orphans="detach")
    assert error is None, error.msg
    assert [d["action"] for d in swept["orphans"]["devices"]] == ["detached"] and uuids(swept["detached"]) == [orphan]
    assert uuids(fab.devices()) == recorded, "the recorded device is never touched"
    assert own.ledger() == {}
    fab.control.clear_requests()
    done, error = own.run("alpha", targets, orphans="detach")
    assert error is None and done["changed"] is False and done["orphans"]["devices"] == [] and fab.mutations() == []


def test_orphan_sweep_alone_covers_the_clusters_nodes_and_runs_the_drain_check(fab, own):
    fake = FakeCluster()
    fake.add_node("n0", fab.machines[0])
    fake.add_node("n1", fab.machines[1])
    fake.add_node("elsewhere", "not-on-this-fabric")
    fake.add_node("plain")
    fake.add_gpu_pod("n1", "default", "trainer", 1)
    cluster = KubernetesClusterView(fake)
    kept = fab.control.seed(fab.machines[0], "A100", 1)[0]["res_uuid"]
    busy = fab.control.seed(fab.machines[1], "A100", 1)[0]["res_uuid"]
    never = fab.control.seed(fab.machines[2], "A100", 1)[0]["res_uuid"]  # no node for machine 2: not the cluster's
    own.run(None, [], orphans="report", cluster=cluster)
    own.backdate_ledger(601)
    swept, error = own.run(None, [], orphans="detach", cluster=cluster, force_detach=False)
    assert error is None, error.msg
    actions = dict((d["res_uuid"], (d["action"], d["node"])) for d in swept["orphans"]["devices"])
    assert actions == {kept: ("detached", "n0"), busy: ("refused", "n1")}
    assert any("pods on node n1 request nvidia.com/gpu: default/trainer" in w for w in swept["warnings"]), swept["warnings"]
    assert any("machine not-on-this-fabric (node elsewhere) not swept" in w for w in swept["warnings"]), swept["warnings"]
    assert uuids(fab.devices(1)) == [busy] and uuids(fab.devices(2)) == [never] and fab.devices(0) == []


def test_adopt_takes_over_devices_from_before_the_records_up_to_the_count(fab, own):
    seeded = [d["res_uuid"] for d in fab.control.seed(fab.machines[0], "A100", 3)]
    beta, error = own.run("beta", [Target(machine_id=fab.machines[0], model="A100", count=1)], adopt=[seeded[2]])
    assert error is None and uuids(beta["owned"]) == [seeded[2]]
    fab.control.clear_requests()
    alpha, error = own.run("alpha", a100(fab, 2), adopt=seeded)  # seeded[2] is beta's now: never taken
    assert error is None, error.msg
    assert fab.mutations() == [] and alpha["changed"] is True
    assert uuids(alpha["owned"]) == sorted(seeded[:2]) and uuids(alpha["records"]["adopted"]) == sorted(seeded[:2])
    assert all(r["adopted"] for r in own.stored("alpha")[1])
    again, error = own.run("alpha", a100(fab, 2), adopt=seeded)
    assert error is None and again["changed"] is False and again["records"]["writes"] == 0


# --- forged records (issue #35, low finding): trusted only by exact name and the collection's field manager -----------

def forge_records(kube, name, stack, records, manager=None):
    """A records ConfigMap labelled and filled like the collection's, written by the lab's admin (field manager
    ``aicr-lab``, or ``manager`` when it claims one)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": kube.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "aicr-runtime", "aicr.io/stack": stack,
                                    "app.kubernetes.io/component": "fabric-devices"}},
            "data": {"stack": stack, "records": json.dumps(records)}}
    kube.rest.request("POST", "/api/v1/namespaces/%s/configmaps" % kube.namespace, body=body, query={"fieldManager": manager} if manager else None)


def test_a_forged_records_configmap_never_replaces_a_stacks_own(fab, own, kube):
    """On the base commit the last listed ConfigMap whose ``data.stack`` named the stack became its records: a forgery
    listing beta's device made alpha's prune detach it."""
    mine, error = own.run("alpha", a100(fab, 1))
    assert error is None
    theirs, error = own.run("beta", a100(fab, 1))
    assert error is None
    beta = uuids(theirs["owned"])
    stolen = [dict(own.stored("beta")[1][0], stack="alpha")]
    forge_records(kube, "aicr-devices-zzz", "alpha", stolen)  # a name listed after alpha's own
    forge_records(kube, "aicr-devices-gamma", "gamma", stolen)  # the exact name of a stack, not written by the collection

    pruned, error = own.run("alpha", a100(fab, 0))
    assert error is None, error.msg
    assert uuids(pruned["detached"]) == uuids(mine["owned"]) and uuids(fab.devices()) == beta, "beta's device is never alpha's"
    claims = dict((c["name"], c) for c in pruned["records"]["foreign_claims"])
    assert sorted(claims) == ["aicr-devices-gamma", "aicr-devices-zzz"]
    assert claims["aicr-devices-zzz"]["message"] == ("foreign claim: ConfigMap %s/aicr-devices-zzz (claims stack alpha) is not named "
                                                     "aicr-devices-alpha, the records ConfigMap of stack alpha; ignored" % kube.namespace)
    assert claims["aicr-devices-gamma"]["reason"] == "was not written by aicr-runtime (field managers: aicr-lab)"
    assert claims["aicr-devices-zzz"]["message"] in pruned["warnings"]

    # a stack with only a forged record owns nothing: its absent detaches nothing
    gone, error = own.run("gamma", [Target(machine_id=fab.machines[0], model="A100", state="absent")])
    assert error is None and gone["detached"] == [] and gone["owned"] == [] and uuids(fab.devices()) == beta
    assert own.stored("beta")[1][0]["res_uuid"] == beta[0], "beta's own records untouched"


def test_a_forged_orphan_ledger_does_not_cut_the_grace_short(fab, own, kube):
    orphan = fab.control.seed(fab.machines[0], "A100", 1)[0]["res_uuid"]
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": LEDGER_NAME, "namespace": kube.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "aicr-runtime", "app.kubernetes.io/component": "fabric-orphans"}},
            "data": {"orphans": json.dumps({orphan: {"first_seen": "2000-01-01T00:00:00.000Z", "machine": fab.machines[0]}})}}
    kube.rest.request("POST", "/api/v1/namespaces/%s/configmaps" % kube.namespace, body=body)  # back-dated, by someone else
    fake = FakeCluster()
    fake.add_node("n0", fab.machines[0])
    sweep, error = own.run(None, [], orphans="detach", cluster=KubernetesClusterView(fake))
    assert error is None, error.msg
    assert [(d["res_uuid"], d["action"]) for d in sweep["orphans"]["devices"]] == [(orphan, "within_grace")] and len(fab.devices()) == 1
    assert [c["name"] for c in sweep["orphans"]["foreign_claims"]] == [LEDGER_NAME]
    assert any(w.startswith("foreign claim: ConfigMap %s/%s was not written by aicr-runtime" % (kube.namespace, LEDGER_NAME)) for w in sweep["warnings"])
    assert own.ledger()[orphan]["first_seen"] != "2000-01-01T00:00:00.000Z", "the next write replaces it with what this run saw"
