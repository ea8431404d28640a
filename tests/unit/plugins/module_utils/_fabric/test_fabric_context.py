"""The fabric run's context alone (``_fabric/context.py``): options normalised once, records split into the stack's and
everyone's, machines in worker threads, a machine's error kept on its run (issue 37: each collaborator tested alone)."""

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun


class Records:
    """A DeviceRecords stand-in: ``load()`` returns itself, ``stack`` as given."""

    def __init__(self, stack):
        self.stack = stack
        self.loads = 0

    def load(self):
        self.loads += 1
        return self


def test_options_are_normalised_once():
    options = RunOptions(wait_timeout="5", poll_interval=1, max_workers=0, mutation_retries=-3, partial=None, adopt=["r-1", "r-1"])
    assert (options.wait_timeout, options.poll_interval, options.max_workers, options.mutation_retries) == (5.0, 1.0, 1, 0)
    assert options.partial is False and options.adopt == {"r-1"}
    assert RunContext(backend=None).options.check_mode is False, "no options given: the defaults"


def test_records_load_once_and_only_a_stacks_are_its_ownership():
    mine = Records("alpha")
    ctx = RunContext(backend=None, records=mine)
    assert mine.loads == 1 and ctx.records is mine and ctx.all_records is mine
    sweep_only = Records(None)  # the orphan sweep alone: every stack's records, no ownership
    ctx = RunContext(backend=None, records=sweep_only)
    assert ctx.records is None and ctx.all_records is sweep_only
    assert RunContext(backend=None).all_records is None


def test_each_runs_every_machine_in_a_worker_thread_and_guard_keeps_its_error():
    ctx = RunContext(backend=None, options=RunOptions(max_workers=4))
    runs = [MachineRun("m%d" % i, None) for i in range(3)]
    threads = {}

    def work(run):
        threads[run.machine_id] = threading.current_thread() is threading.main_thread()

        def fail():
            if run.machine_id == "m1":
                raise AicrError("m1: refused", field="x")
            if run.machine_id == "m2":
                raise KeyError("boom")
            return "done"
        return ctx.guard(run, fail)

    ctx.each(runs, work)
    assert threads == {"m0": False, "m1": False, "m2": False}, "never in the main thread (SIGTERM is raised there)"
    assert [r.error for r in runs] == [None, "m1: refused", "machine m2: unexpected KeyError: 'boom'"]
    assert runs[1].error_details == {"field": "x"}


def test_before_change_and_between_polls_ask_the_gate():
    calls = []

    class Gate:
        def __call__(self, what):
            calls.append(("change", what))

        def between_polls(self):
            calls.append(("poll",))

    paused = []
    ctx = RunContext(backend=None, options=RunOptions(poll_interval=3), sleep=paused.append, gate=Gate())
    ctx.before_change("attach of a gpu")
    ctx.between_polls()
    ctx.pause()
    assert calls == [("change", "attach of a gpu"), ("poll",)] and paused == [3.0]
