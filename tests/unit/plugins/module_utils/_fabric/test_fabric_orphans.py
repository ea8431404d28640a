"""The orphan sweep alone (``_fabric/orphans.py``): the in-memory backend, stand-ins for every stack's records, the
ledger, the drain check and the detach it is given - no service, no cluster, no ConfigMap."""

from ansible_collections.aicr.runtime.plugins.module_utils._common.timeutil import millis_from_epoch
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.orphans import OrphanSweep
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun

from test_fabric_attach import Detacher  # pylint: disable=import-error
from test_fabric_detach import Checks  # pylint: disable=import-error
from test_fabric_service import MemoryBackend  # pylint: disable=import-error

NOW = 1800000000.0


class AllRecords:
    """Every stack's records: ``recorded`` devices, ``intents`` of other stacks; the API server's clock at NOW."""

    stack = None

    def __init__(self, recorded=(), intents=()):
        self.recorded = dict((u, "alpha") for u in recorded)
        self.intents = list(intents)
        self.foreign_claims = []

    def load(self):
        return self

    def recorded_by_anyone(self):
        return dict(self.recorded)

    def open_intents(self, machine=None, others=False):
        return list(self.intents) if others else []

    @staticmethod
    def clock():
        return NOW


class Ledger:
    def __init__(self, entries=None):
        self.entries = dict(entries or {})
        self.foreign_claims = []
        self.writes = 0

    def load(self):
        pass

    def save(self):
        self.writes += 1


def test_a_refused_orphan_is_left_a_recorded_one_never_seen_and_a_held_one_named():
    backend = MemoryBackend(["m0"])
    recorded, busy, free, held = backend.add("m0"), backend.add("m0"), backend.add("m0"), backend.add("m0", "H100")
    long_ago = millis_from_epoch(NOW - 3600)
    ledger = Ledger(dict((d.res_uuid, {"first_seen": long_ago}) for d in (busy, free)))
    intent = {"machine": "m0", "type": "gpu", "model": "h100", "stack": "beta", "run_id": "run-7", "seen": []}
    ctx = RunContext(backend, options=RunOptions(orphans="detach", orphan_grace=600, max_workers=1),
                     records=AllRecords(recorded=[recorded.res_uuid], intents=[intent]), ledger=ledger)
    checks, detacher = Checks(busy=[busy.res_uuid]), Detacher(backend)
    run = MachineRun("m0", "n0")
    sweep = OrphanSweep(ctx, checks, detacher, Changes()).sweep([run])
    actions = dict((d["res_uuid"], d["action"]) for d in sweep["devices"])
    assert actions == {busy.res_uuid: "refused", free.res_uuid: "detached", held.res_uuid: "held"}
    assert checks.asked == [busy.res_uuid, free.res_uuid] and detacher.calls == [(free.res_uuid, False, False)]
    assert backend.mutations() == [("detach", "m0", free.res_uuid)] and ledger.writes == 1
    assert list(ledger.entries) == [busy.res_uuid], "the detached orphan leaves the ledger; the held one never enters it"
    assert sweep["machines"] == 1 and sweep["mode"] == "detach" and sweep["grace"] == 600.0
