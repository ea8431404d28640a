"""SIGTERM turns into Cancelled in the main thread; helm children (also from worker threads) are stopped; call_engine
fails in one line saying what was done. Each test sends SIGTERM to this very process, inside ``sigterm_cancels``."""

import os
import signal
import threading
import time

import pytest
from waiting import wait_for  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.module import call_engine
from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
from ansible_collections.aicr.runtime.plugins.module_utils._helm import children


@pytest.fixture(autouse=True)
def fresh():
    cancel.reset()
    yield
    cancel.reset()


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self):
        self.params = {}
        self.no_log_values = set()
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise Failed()


def test_sigterm_raises_cancelled_in_the_main_thread_and_runs_the_hooks_once():
    stopped = []
    cancel.on_cancel(lambda: stopped.append("x") or ["helm upgrade --install a"])
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(cancel.Cancelled) as error:
        with cancel.sigterm_cancels():
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for(lambda: False, 10, "the signal")  # interrupted by Cancelled
    assert error.value.msg == "cancelled (SIGTERM)" and error.value.details["stopped"] == ["helm upgrade --install a"]
    assert stopped == ["x"] and cancel.requested()
    assert signal.getsignal(signal.SIGTERM) == previous, "the previous handler is restored"
    # Cancelled is no Exception: no engine's `except Exception` (nor `except AicrError`) swallows it
    assert not isinstance(error.value, Exception) and not isinstance(error.value, AicrError)


def test_a_second_sigterm_during_cleanup_does_not_interrupt_it():
    cleaned = []
    with pytest.raises(cancel.Cancelled):
        with cancel.sigterm_cancels():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                wait_for(lambda: False, 10, "the signal")
            finally:
                os.kill(os.getpid(), signal.SIGTERM)  # ignored: the cleanup goes on
                cleaned.append("done")
    assert cleaned == ["done"]


def test_workers_stop_at_their_next_check():
    seen = []

    def worker():
        try:
            while True:
                cancel.check("the next read")
                time.sleep(0.01)
        except cancel.Cancelled as exc:
            seen.append(exc.msg)

    thread = threading.Thread(target=worker)
    thread.start()
    with pytest.raises(cancel.Cancelled):
        with cancel.sigterm_cancels():
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for(lambda: False, 10, "the signal")
    thread.join(timeout=10)
    assert seen == ["cancelled (SIGTERM): the next read not started"]


def test_a_helm_child_started_from_a_worker_thread_is_stopped(tmp_path):
    """A real child process (a 'helm' that never ends) started by HelmRunner in a worker thread is terminated by SIGTERM
    of this process; the worker's call ends with Cancelled, and no child is left."""
    marker = tmp_path / "started"
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\necho $$ > %s\nexec sleep 600\n" % marker)
    fake.chmod(0o755)
    runner = helm.HelmRunner(str(fake))
    outcome = []

    def worker():
        try:
            runner.run(["upgrade", "--install", "slow"], what="helm upgrade --install slow")
        except BaseException as exc:  # pylint: disable=broad-except
            outcome.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    wait_for(lambda: marker.exists() and marker.read_text().strip(), 30, "the helm child")
    child = int(marker.read_text())
    with pytest.raises(cancel.Cancelled) as error:
        with cancel.sigterm_cancels():
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for(lambda: False, 10, "the signal")
    thread.join(timeout=10)
    assert error.value.details["stopped"] == ["helm upgrade --install slow"]
    assert isinstance(outcome[0], cancel.Cancelled) and outcome[0].msg == "cancelled (SIGTERM): helm upgrade --install slow stopped"
    assert not os.path.exists("/proc/%d" % child) or open("/proc/%d/stat" % child).read().rsplit(")", 1)[1].split()[0] == "Z"
    assert children._children == {}  # pylint: disable=protected-access


def test_a_helm_child_that_exited_before_sigterm_is_not_reported_stopped(tmp_path):
    """Between a helm child's exit and its worker collecting it, SIGTERM stops only what still runs: the finished child
    is its worker's to report (done), never "stopped" as well."""
    finished = children.start_child(["/bin/sh", "-c", "exit 0"], dict(os.environ), "helm upgrade --install slow")
    running = children.start_child(["/bin/sh", "-c", "exec sleep 600"], dict(os.environ), "helm upgrade --install hooks")
    try:
        wait_for(lambda: not children.alive(finished), 30, "the first child's exit")
        assert children.stop_children(grace=10) == ["helm upgrade --install hooks"]
        assert finished.returncode is None, "the exited child is left to its worker to collect"
    finally:
        for proc in (finished, running):
            children.collect_child(proc, 30)
    assert running.returncode == -signal.SIGTERM and finished.returncode == 0


def test_call_engine_fails_in_one_line_saying_what_was_done_and_stopped():
    module = FakeModule()

    def engine():
        cancel.note("helm upgrade --install a done")
        cancel.on_cancel(lambda: ["helm upgrade --install b"])
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for(lambda: False, 10, "the signal")
        finally:
            cancel.cleaned("Lease ns/aicr-runtime-x released")

    with pytest.raises(Failed):
        call_engine(module, "gated_release", engine)
    assert module.failed["msg"] == ("gated_release: cancelled (SIGTERM) - done before: helm upgrade --install a done - stopped: helm upgrade "
                                    "--install b - cleaned up: Lease ns/aicr-runtime-x released; temporary files removed - not done: everything "
                                    "not listed as done (nothing else was started)")
    assert module.failed["cancelled"] is True and module.failed["done"] == ["helm upgrade --install a done"]
    assert module.failed["changed"] is True, "something was done: a cancelled task never says changed: false after a change"
    assert "exception" not in module.failed


def cancelled(engine):
    module = FakeModule()

    def cancelled_engine():
        engine()
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(lambda: False, 10, "the signal")

    with pytest.raises(Failed):
        call_engine(module, "fabric_device", cancelled_engine, temporary=False)
    return module.failed


def test_a_cancelled_task_carries_what_the_engine_reported_done():
    """t36-fabric: a cancelled fabric_device run that had attached a device said changed: false, with only the notes."""
    def engine():
        cancel.report(lambda: {"changed": False, "attached": [{"res_uuid": "u1"}], "actions": [{"action": "attach", "res_uuid": "u1"}],
                               "pending": [{"action": "attach", "pending": True}]})
        cancel.note("A100 u1 attached to machine m1")

    failed = cancelled(engine)
    assert failed["changed"] is True and failed["attached"] == [{"res_uuid": "u1"}] and failed["done"] == ["A100 u1 attached to machine m1"]
    assert failed["actions"] == [{"action": "attach", "res_uuid": "u1"}] and failed["pending"] == [{"action": "attach", "pending": True}]
    assert failed["msg"].startswith("fabric_device: cancelled (SIGTERM) - done before: A100 u1 attached to machine m1")


def test_a_cancelled_task_that_did_nothing_says_changed_false_and_a_failing_report_is_left_out():
    def broken():
        raise RuntimeError("no")

    failed = cancelled(lambda: cancel.report(broken))
    assert failed["changed"] is False and failed["done"] == [] and "no change" in failed["msg"]
    failed = cancelled(lambda: cancel.report(lambda: {"changed": True, "actions": ["x"]}))
    assert failed["changed"] is True, "the engine's own changed counts too"


def test_outside_an_engine_call_sigterm_keeps_its_default():
    assert signal.getsignal(signal.SIGTERM) != cancel._handler  # pylint: disable=protected-access
    result = call_engine(FakeModule(), "x", lambda: {"ok": True})
    assert result == {"ok": True} and signal.getsignal(signal.SIGTERM) != cancel._handler  # pylint: disable=protected-access
