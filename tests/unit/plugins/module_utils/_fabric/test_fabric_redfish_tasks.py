"""Redfish actions that run as tasks (DMTF Redfish specification, asynchronous operations): ``202 Accepted`` with a task
monitor in ``Location``, polled until it gives the action's own answer.

On the HTTPS simulator (option ``rf_tasks``: the monitor answers 202 that many times, then the action's answer, and is gone
afterwards): attach and detach complete through the monitor, once each; a task ending in Exception or with the action's
error fails the target naming the fabric's message, nothing re-sent; a task still running at the deadline is an unknown
outcome, never re-sent. With a stub transport: a monitor on another host is never asked (the credentials go to the
endpoint only), an absolute monitor URL on the endpoint is followed by its path, ``Retry-After`` is honoured and capped.
"""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.redfish import MAX_RETRY_AFTER, RedfishBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import FabricHTTPError, Response

MONITORS = "/redfish/v1/TaskService/TaskMonitors/"


class SteppingClock:
    """A clock that moves ``step`` seconds each time it is read (a deadline is reached after a known number of polls)."""

    def __init__(self, step=1.0):
        self.now = 0.0
        self.step = step

    def __call__(self):
        self.now += self.step
        return self.now


def task_backend(fab, **settings):
    backend = fab.backend("redfish")
    for name, value in settings.items():
        setattr(backend, name, value)
    return backend


def monitor_reads(fab):
    return [e for e in fab.control.requests() if e["route"] == "rf.task"]


def test_attach_and_detach_complete_through_the_task_monitor_and_a_rerun_sends_nothing(fab):
    fab.control.configure(rf_tasks=2)
    fab.control.clear_requests()
    target = Target(machine_id=fab.machines[0], model="A100", count=1)
    result, error = fab.run([target], "redfish")
    assert error is None, error.msg
    assert [d["model"] for d in result["attached"]] == ["A100"] and fab.models() == ["A100"]
    assert len(fab.mutations("attach")) == 1
    reads = monitor_reads(fab)
    # two answers "still running" (202), then the action's own answer (204): the change was applied at that third read
    assert [e["status"] for e in reads] == [202, 202, 204], reads
    assert len(set(e["path"] for e in reads)) == 1 and reads[0]["path"].startswith(MONITORS)

    fab.control.clear_requests()
    again, error = fab.run([target], "redfish")
    assert error is None and again["changed"] is False and fab.control.requests(mutating=True) == []

    fab.control.clear_requests()
    gone, error = fab.run([Target(machine_id=fab.machines[0], state="absent", devices=[result["attached"][0]["res_uuid"]])], "redfish")
    assert error is None, error.msg
    assert [d["res_uuid"] for d in gone["detached"]] == [result["attached"][0]["res_uuid"]] and fab.devices() == []
    assert len(fab.mutations("detach")) == 1 and [e["status"] for e in monitor_reads(fab)] == [202, 202, 204]


def test_a_task_ending_in_exception_fails_the_target_with_the_fabrics_message_and_is_not_resent(fab):
    fab.control.configure(rf_tasks=1)
    fab.control.fault(op="attach", action="task_exception", message="PCIe switch port 7 is down")
    fab.control.clear_requests()
    _result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert error is not None
    assert "the fabric's task ended Exception (TaskStatus Critical): PCIe switch port 7 is down" in error.msg, error.msg
    assert fab.devices() == [] and len(fab.mutations("attach")) == 1
    assert [e["status"] for e in monitor_reads(fab)] == [202, 200]


def test_a_task_answering_the_actions_error_fails_the_target_naming_it(fab):
    fab.control.configure(rf_tasks=0)
    fab.control.fault(op="attach", action="task_error", status=409, message="resource block is claimed by system m7")
    fab.control.clear_requests()
    _result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert error is not None
    assert "task monitor: HTTP 409" in error.msg and "resource block is claimed by system m7" in error.msg, error.msg
    assert fab.devices() == [] and len(fab.mutations("attach")) == 1


def test_a_task_still_running_at_the_deadline_is_an_unknown_outcome_never_resent(fab):
    fab.control.configure(rf_tasks=1000)
    fab.control.clear_requests()
    backend = task_backend(fab, task_timeout=3.0, clock=SteppingClock())
    _result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish", backend=backend)
    assert error is not None
    assert "the fabric's task is still running after 3s (task monitor %s" % MONITORS in error.msg, error.msg
    assert "re-run to converge (nothing re-sent)" in error.msg
    assert len(fab.mutations("attach")) == 1 and 0 < len(monitor_reads(fab)) < 5


class ScriptedTransport:
    """The action's answer, then the monitor's answers in order; records every request."""

    base_url = "https://bmc.example:8443"

    def __init__(self, action, monitor):
        self.action = action
        self.monitor = list(monitor)
        self.sent = []

    def request(self, method, path, params=None, json_body=None, form=None, authenticate=True, what=None):
        self.sent.append((method, path))
        if method == "POST":
            return self.action
        answer = self.monitor.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def accepted(location=None, retry_after=None, body=None, date=None):
    headers = {"Date": date} if date else {}
    if location:
        headers["Location"] = location
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return Response(202, json.dumps(body or {"TaskState": "Running"}), "application/json", headers=headers)


def scripted(action, monitor, sleeps=None):
    backend = RedfishBackend(ScriptedTransport(action, monitor), task_timeout=600, task_poll_interval=0.5,
                             sleep=(sleeps.append if sleeps is not None else lambda s: None))
    backend._actions["s1"] = {"#ComputerSystem.RemoveResourceBlock": "/redfish/v1/Systems/s1/Actions/ComputerSystem.RemoveResourceBlock"}
    return backend


class Block:
    res_uuid = "b1"
    ref = "/redfish/v1/CompositionService/ResourceBlocks/b1"


def test_a_monitor_on_another_host_is_never_asked():
    backend = scripted(accepted("https://collector.example/redfish/v1/TaskService/TaskMonitors/9"), [])
    with pytest.raises(AicrError) as raised:
        backend.detach("s1", Block(), [])
    assert "named a task monitor on another host (https://collector.example)" in raised.value.msg
    assert "not followed (the credentials go to the endpoint only)" in raised.value.msg
    assert [m for m, _p in backend.transport.sent] == ["POST"]


def test_an_absolute_monitor_on_the_endpoint_is_followed_by_its_path_and_retry_after_is_honoured():
    sleeps = []
    done = Response(204, "", "")
    backend = scripted(accepted("HTTPS://BMC.example:8443/redfish/v1/TaskService/TaskMonitors/3", retry_after="2"),
                       [accepted(retry_after="3600"), accepted(), done], sleeps)
    backend.detach("s1", Block(), [])
    assert backend.transport.sent[1:] == [("GET", MONITORS + "3")] * 3
    # the action's Retry-After, the monitor's (capped), then no header: the poll interval
    assert sleeps == [2.0, MAX_RETRY_AFTER, 0.5]


def test_a_retry_after_http_date_counts_from_the_fabrics_own_date():
    """RFC 9110's other form: an HTTP-date, counted from the answer's ``Date`` (the fabric's clock: this host's may be
    hours off); one without a Date from this host's clock (a past date: no wait); an unreadable one: the poll interval."""
    sleeps = []
    done = Response(204, "", "")
    fabric_now = "Wed, 02 Dec 2026 23:00:00 GMT"
    backend = scripted(accepted(MONITORS + "6", retry_after="Wed, 02 Dec 2026 23:00:07 GMT", date=fabric_now),
                       [accepted(retry_after="Wed, 02 Dec 2026 22:59:00 GMT", date=fabric_now), accepted(retry_after="Thu, 01 Jan 1970 00:00:00 GMT"),
                        accepted(retry_after="soon"), done], sleeps)
    backend.detach("s1", Block(), [])
    assert sleeps == [7.0, 0.0, 0.0, 0.5]


def test_the_tasks_monitor_from_its_body_and_a_gone_monitor_leaves_the_outcome_to_the_reread():
    body = {"TaskState": "Running", "TaskMonitor": MONITORS + "5"}
    backend = scripted(accepted(body=body), [FabricHTTPError("gone", status=404)])
    backend.detach("s1", Block(), [])  # returns: the service's re-read of the system says whether the block left
    assert backend.transport.sent == [("POST", "/redfish/v1/Systems/s1/Actions/ComputerSystem.RemoveResourceBlock"), ("GET", MONITORS + "5")]


@pytest.mark.parametrize("failure", [FabricHTTPError("x: task monitor: HTTP 503: busy (after 2 attempts)", status=503),
                                     FabricHTTPError("x: authentication rejected (HTTP 401: no)", status=401),
                                     AicrError("x: connection failed (refused) (after 2 attempts)")])
def test_a_monitor_that_cannot_be_read_is_an_unknown_outcome_not_a_refusal(failure):
    backend = scripted(accepted(MONITORS + "4"), [failure])
    with pytest.raises(AicrError) as raised:
        backend.detach("s1", Block(), [])
    assert not isinstance(raised.value, FabricHTTPError)  # a FabricHTTPError would tell the service the fabric refused it
    assert raised.value.msg.endswith("the fabric's task may or may not complete - re-run to converge (nothing re-sent)")
