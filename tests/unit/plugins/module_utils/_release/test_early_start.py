"""Early start: which dependents' helms start while their dependencies become Ready, and that none writes before its gate."""

import io
import os
import tarfile
import threading
import types

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.readiness import READY, assess

from release_helpers import comp, engine, make_charts


class EarlyFakeHelm(object):
    """FakeHelm with start_upgrade/finish_upgrade/abandon_upgrade: "start" only records, "finish" installs (as helm
    would once its gate opens). ``extra_files``: chart -> {path inside the chart: text}, added to the pulled archive."""

    supports_early_start = True

    def __init__(self, fakes, cluster, charts, deps):
        self.inner = fakes.FakeHelm(cluster, charts)
        self.cluster = cluster
        self.deps = deps
        self.events = []
        self.extra_files = {}
        self.lock = threading.Lock()
        self.waiting = 0
        self.most_waiting = 0
        self.on_start = None  # called (with the release) once a dependent's helm waits at its gate

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _ready(self, name):
        return assess(self.cluster.get("apps/v1", "Deployment", name, "apps"))[0] == READY

    def _record(self, what, release, **extra):
        with self.lock:
            self.events.append(dict(extra, what=what, release=release, deps_ready=all(self._ready(d) for d in self.deps.get(release, ()))))

    def pull(self, chart_ref, repo, version, dest, extra_flags=None, timeout=300):
        path = self.inner.pull(chart_ref, repo, version, dest, extra_flags, timeout)
        chart = self.inner._chart_name(chart_ref)  # pylint: disable=protected-access
        extra = self.extra_files.get(chart)
        if extra:
            with tarfile.open(path, "r:gz") as old:
                members = [(m, old.extractfile(m).read()) for m in old.getmembers()]
            with tarfile.open(path, "w:gz") as tar:
                for member, data in members:
                    tar.addfile(member, io.BytesIO(data))
                for rel, text in extra.items():
                    info = tarfile.TarInfo("%s/%s" % (chart, rel))
                    info.size = len(text.encode())
                    tar.addfile(info, io.BytesIO(text.encode()))
        return path

    def start_upgrade(self, release, namespace, chart_path, values, labels, gates, gate, extra_flags=None, atomic=False, timeout=None, workdir=None):
        assert gate.token and os.path.exists(gates.path)
        self._record("start", release)
        with self.lock:
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
        if self.on_start is not None and self.deps.get(release):
            self.on_start(release)
        chart = os.path.basename(chart_path).rsplit("-", 1)[0]  # the pulled archive <chart>-<version>.tgz
        return types.SimpleNamespace(release=release, gate=gate, args=(release, namespace, chart, None, None, values, labels))

    def finish_upgrade(self, early, timeout=None):
        self._record("finish", early.release)
        with self.lock:
            self.waiting -= 1
        return self.inner.upgrade(*early.args)

    def abandon_upgrade(self, early, reason):
        self._record("abandon", early.release, reason=reason)
        with self.lock:
            self.waiting -= 1

    def upgrade(self, release, *args, **kwargs):
        self._record("upgrade", release)
        return self.inner.upgrade(release, *args, **kwargs)

    def of(self, release):
        return [e["what"] for e in self.events if e["release"] == release]


NEVER = 3600.0  # a readiness delay no test waits for: time moves on when the test says (the fake cluster's clock)


def chain(fakes, deps, delays, **opts):
    """Converge ``deps``; the dependencies' pods (``delays``: NEVER) become Ready only once a dependent's helm waits at
    its gate (so that an early start is the one way to finish before the timeout)."""
    cluster = fakes.FakeCluster()
    helm = EarlyFakeHelm(fakes, cluster, make_charts(fakes, delays), deps)
    helm.on_start = lambda release: cluster.clock.advance(2 * NEVER)
    recipe = [comp(name, deps.get(name, ())) for name in deps]
    opts.setdefault("validate_chart_schema", True)  # the module's default: remote charts are pulled (and so local)
    return helm, engine(cluster, helm, recipe, **opts).run()


def test_a_dependent_starts_while_its_dependency_becomes_ready_and_writes_only_once_it_is(fakes):
    deps = {"x": [], "y": ["x"], "z": ["y"]}
    helm, result = chain(fakes, deps, {"x": NEVER, "y": NEVER})
    assert all(c["phase"] == "Ready" for c in result["components"]), result.get("failed_message")
    for name in ("y", "z"):
        start, finish = [e for e in helm.events if e["release"] == name]
        assert (start["what"], start["deps_ready"]) == ("start", False)  # started while x (y) was not Ready
        assert (finish["what"], finish["deps_ready"]) == ("finish", True)  # wrote only after
    early = dict((c["name"], c.get("early_start", False)) for c in result["components"])
    assert early == {"x": True, "y": True, "z": True}  # x, a root, started while the run read its inventory


def test_dependents_of_a_release_that_adds_api_types_start_at_their_gate(fakes):
    deps = {"crds": [], "operator": ["crds"], "agent": ["operator"]}
    # validated: every chart is pulled, so what operator's chart holds is known although it starts at its gate
    helm, result = chain(fakes, deps, {"crds": 0.2, "operator": NEVER})
    assert all(c["phase"] == "Ready" for c in result["components"]), result.get("failed_message")
    assert helm.of("operator") == ["upgrade"]  # crds renders a CustomResourceDefinition: operator starts once it is served
    assert helm.of("agent") == ["start", "finish"]  # operator adds none


@pytest.mark.parametrize("extra", [{"crds/widget.yaml": "kind: CustomResourceDefinition\n"},
                                   {"templates/cm.yaml": "{{ $s := lookup \"v1\" \"Secret\" .Release.Namespace \"x\" }}\n"},
                                   {"charts/sub/crds/w.yaml": "kind: CustomResourceDefinition\n"}],
                         ids=["crds", "lookup", "subchart-crds"])
def test_a_chart_with_crds_or_lookup_starts_at_its_gate(fakes, extra):
    deps = {"x": [], "y": ["x"]}
    cluster = fakes.FakeCluster()
    helm = EarlyFakeHelm(fakes, cluster, make_charts(fakes, {"x": 0.1}), deps)
    helm.extra_files["y"] = extra
    result = engine(cluster, helm, [comp("x"), comp("y", ["x"])], validate_chart_schema=True).run()
    assert [c["phase"] for c in result["components"]] == ["Ready", "Ready"]
    assert helm.of("y") == ["upgrade"]
    assert helm.of("x") == ["start", "finish"]


def test_a_failed_dependency_stops_the_waiting_helm_which_writes_nothing(fakes):
    deps = {"x": [], "y": ["x"]}
    cluster = fakes.FakeCluster()
    helm = EarlyFakeHelm(fakes, cluster, make_charts(fakes, {"x": NEVER}), deps)

    def fail_x(_release):  # x's pod fails once y waits at its gate
        live = cluster.objects[("apps/v1", "Deployment", "apps", "x")]
        live["metadata"]["annotations"][fakes.FAIL] = "image pull"

    helm.on_start = fail_x
    result = engine(cluster, helm, [comp("x"), comp("y", ["x"])], timeout=5, validate_chart_schema=True).run()
    assert [c["phase"] for c in result["components"]] == ["Failed", "Blocked"]
    assert helm.of("y") == ["start", "abandon"]
    assert [e["reason"] for e in helm.events if e["what"] == "abandon"] == ["dependency of y failed"]
    assert cluster.get("apps/v1", "Deployment", "y", "apps") is None
    assert helm.waiting == 0


def test_a_remote_chart_that_is_not_validated_starts_at_its_gate(fakes):
    """Without validate_values nothing pulls a remote chart: pulling it only to start early costs a helm process more."""
    helm, result = chain(fakes, {"x": [], "y": ["x"]}, {"x": 0.1}, validate_chart_schema=False)
    assert [c["phase"] for c in result["components"]] == ["Ready", "Ready"]
    assert [e["what"] for e in helm.events] == ["upgrade", "upgrade"]
    assert not [c for c in helm.inner.calls if c[0] == "pull"]


def test_off_check_mode_and_no_op_start_nothing_early(fakes):
    deps = {"x": [], "y": ["x"]}
    helm, result = chain(fakes, deps, {}, early_start=False)
    assert [e["what"] for e in helm.events] == ["upgrade", "upgrade"]
    helm.events.clear()
    cluster = helm.cluster
    recipe = [comp("x"), comp("y", ["x"])]
    engine(cluster, helm, recipe, check_mode=True).run()
    again = engine(cluster, helm, recipe).run()
    assert [c["phase"] for c in again["components"]] == ["Unchanged", "Unchanged"]
    assert helm.events == []


def test_at_most_concurrency_helms_wait_at_their_gates_and_the_rest_still_converge(fakes):
    deps = dict([("root", [])] + [("d%d" % i, ["root"]) for i in range(5)])
    helm, result = chain(fakes, deps, {"root": NEVER}, concurrency=2)
    assert all(c["phase"] == "Ready" for c in result["components"]), result.get("failed_message")
    assert helm.most_waiting <= 2
    assert sum(1 for c in result["components"] if c.get("early_start")) >= 2
    assert helm.waiting == 0


def test_a_lost_lease_at_the_gate_stops_the_waiting_helm(fakes):
    """finish_upgrade is a change: the Lease is checked first; refused, the helm that waits is stopped, not left behind."""
    deps = {"x": [], "y": ["x"]}
    cluster = fakes.FakeCluster()
    helm = EarlyFakeHelm(fakes, cluster, make_charts(fakes, {"x": NEVER}), deps)
    finish = helm.finish_upgrade

    def refused(early, timeout=None):
        if early.release == "y":
            raise AicrError("lease: stack test is held by another run now")
        return finish(early, timeout)

    helm.finish_upgrade = refused
    helm.on_start = lambda release: cluster.clock.advance(2 * NEVER)
    result = engine(cluster, helm, [comp("x"), comp("y", ["x"])], timeout=5, validate_chart_schema=True).run()
    assert [c["phase"] for c in result["components"]] == ["Ready", "Failed"]
    assert helm.of("y") == ["start", "abandon"]
    assert helm.waiting == 0
