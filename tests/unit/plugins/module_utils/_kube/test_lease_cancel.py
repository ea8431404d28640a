"""After SIGTERM (``_common.cancel``) the Lease-guarded client refuses every call, reads included; its readiness
watches are cut into short slices so that a waiting worker sees the cancellation soon; release says the Lease went."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import CANCEL_WATCH_SECONDS, Guarded


@pytest.fixture(autouse=True)
def fresh():
    cancel.reset()
    yield
    cancel.reset()


class Lease:
    def __init__(self):
        self.checks = 0

    def check(self):
        self.checks += 1


class Client:
    def __init__(self):
        self.calls = []
        self.server = "https://h"

    def get(self, *args):
        self.calls.append(("get", args))
        return {}

    def create(self, body):
        self.calls.append(("create", body))
        return body

    def apply(self, body, dry_run=False):
        self.calls.append(("apply", dry_run))
        return body

    def watch_until(self, api_version, kind, name, namespace, resource_version, timeout, done):
        self.calls.append(("watch", timeout))
        return True


def test_before_cancel_reads_pass_and_mutations_check_the_lease():
    client, lease = Client(), Lease()
    guarded = Guarded(client, lease)
    guarded.get("v1", "ConfigMap", "a", "ns")
    guarded.apply({}, dry_run=True)
    guarded.create({})
    assert lease.checks == 1 and [c[0] for c in client.calls] == ["get", "apply", "create"]
    assert guarded.server == "https://h"  # plain attributes are not wrapped


def test_watches_are_cut_into_short_slices_where_sigterm_cannot_end_them():
    client = Client()
    Guarded(client, Lease()).watch_until("v1", "Pod", "p", "ns", "1", 30.0, lambda obj: True)
    assert client.calls == [("watch", CANCEL_WATCH_SECONDS)]
    Guarded(client, Lease()).watch_until("v1", "Pod", "p", "ns", "1", 0.5, lambda obj: True)
    assert client.calls[-1] == ("watch", 0.5)


def test_a_watch_sigterm_can_end_is_not_cut():
    client = Client()
    client.watches_interruptible = True
    Guarded(client, Lease()).watch_until("v1", "Pod", "p", "ns", "1", 30.0, lambda obj: True)
    assert client.calls == [("watch", 30.0)]


def test_after_cancel_every_call_is_refused_reads_included():
    client, lease = Client(), Lease()
    guarded = Guarded(client, lease)
    cancel._event.set()  # pylint: disable=protected-access  # what the SIGTERM handler does first
    for call in (lambda: guarded.get("v1", "Pod", "p", "ns"), lambda: guarded.create({}), lambda: guarded.apply({}, dry_run=True)):
        with pytest.raises(cancel.Cancelled, match=r"^cancelled \(SIGTERM\): \w+ \(a (read|change)\) not started$"):
            call()
    assert client.calls == [] and lease.checks == 0
