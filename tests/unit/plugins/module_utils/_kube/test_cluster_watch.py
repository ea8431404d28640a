"""wait_ready observes readiness through a watch, not by sleeping (the watch itself against the lab's kube-apiserver:
tests/integration/module_utils/_kube/test_cluster_watch.py)."""

from ansible_collections.aicr.runtime.plugins.module_utils._release.context import RunContext
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options


def test_wait_ready_watches_instead_of_sleeping(fakes):
    class WatchingFakeCluster(fakes.FakeCluster):
        """The unit tests' fake cluster plus a watch that advances the fake clock until the object is Ready."""

        def __init__(self):
            super(WatchingFakeCluster, self).__init__()
            self.watches = []

        def watch_until(self, api_version, kind, name, namespace, resource_version, timeout, done):
            self.watches.append((kind, name, resource_version, timeout))
            for _step in range(100):
                obj = self.get(api_version, kind, name, namespace, counted=False) or {}
                if done(obj):
                    return obj
                self.clock.advance(0.5)
            return True

        def get(self, api_version, kind, name, namespace=None, counted=True):
            if counted:
                self.reads.append((kind, name))
            return super(WatchingFakeCluster, self).get(api_version, kind, name, namespace)

    fake = WatchingFakeCluster()
    fake.reads = []
    web = fakes.deployment("web", delay=3)
    web["metadata"]["namespace"] = "default"
    fake.apply(web)
    slept = []
    ctx = RunContext(fake, None, None, Options(poll_interval=5), clock=fake.clock, sleep=slept.append)
    comp = type("Comp", (), {"name": "web"})()
    ctx.wait_ready(comp, [("apps/v1", "Deployment", "web", "default")], fake.clock() + 60, "release web")
    assert fake.watches and fake.watches[0][:2] == ("Deployment", "web")
    assert not slept, "with a watch there is no polling sleep"
    # read once before the watch; the Ready object the watch delivered is not read again
    assert fake.reads == [("Deployment", "web")]
