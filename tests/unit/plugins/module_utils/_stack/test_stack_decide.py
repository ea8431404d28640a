"""Reconcile decision: suspend, generation, annotation, unfinished runs, autoUpdate, resync interval."""

import datetime

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import decide as d

NOW = datetime.datetime(2026, 11, 29, 12, 0, 0)


def stack(generation=2, observed=2, phase="Ready", last="2026-11-29T11:58:00Z", spec=None, annotation=None, handled=None):
    meta = {"name": "s", "generation": generation, "annotations": {}}
    if annotation is not None:
        meta["annotations"][d.RECONCILE_ANNOTATION] = annotation
    status = {"phase": phase, "observedGeneration": observed, "reconcile": {"lastReconcileTime": last}}
    if handled is not None:
        status["reconcile"]["lastHandledReconcileRequest"] = handled
    return {"metadata": meta, "spec": spec or {"catalog": {"source": "/c"}}, "status": status}


def test_up_to_date_stack_is_left_alone():
    result = d.decide(stack(), NOW)
    assert result["needs_converge"] is False and result["reason"].startswith("up to date (generation 2 observed, next resync in 180s")


@pytest.mark.parametrize("obj, reason", [
    (stack(spec={"suspend": True}, generation=5, observed=1), "suspended (spec.suspend is true)"),
    ({"metadata": {"name": "s", "generation": 1}, "spec": {}}, "never reconciled (no status.observedGeneration)"),
    (stack(generation=3), "generation 3 != observedGeneration 2"),
    (stack(annotation="2026-11-29T11:59:00Z", handled="2026-11-28"), "reconcile requested (annotation runtime.aicr.io/reconcile-requested="
                                                                     "'2026-11-29T11:59:00Z', last handled '2026-11-28')"),
    (stack(annotation="now"), "reconcile requested (annotation runtime.aicr.io/reconcile-requested='now', last handled '')"),
    (stack(phase="Deploying"), "last run ended in phase Deploying"),
    (stack(phase="Failed"), "last run ended in phase Failed"),
    (stack(last="2026-11-29T11:55:00Z"), "resync interval 300s elapsed (last reconcile 300s ago)"),
    (stack(last=None), "no status.reconcile.lastReconcileTime"),
    (stack(spec={"resyncInterval": "1m"}), "resync interval 60s elapsed (last reconcile 120s ago)"),
])
def test_reasons(obj, reason):
    result = d.decide(obj, NOW)
    assert result["reason"] == reason
    assert result["needs_converge"] is (not reason.startswith("suspended"))
    assert result["suspended"] is reason.startswith("suspended")


def test_handled_annotation_and_operator_resync_default():
    assert d.decide(stack(annotation="x", handled="x"), NOW)["needs_converge"] is False
    assert d.decide(stack(), NOW, default_resync_seconds=60)["needs_converge"] is True
    assert d.decide(stack(spec={"resyncInterval": "1h"}), NOW, default_resync_seconds=60)["needs_converge"] is False


def test_catalog_upgrade_triggers_a_run():
    result = d.decide(stack(), NOW, catalog={"upgrade": True, "version": "1.1.0", "resolved_version": "1.0.0"})
    assert result["needs_converge"] and result["reason"] == "catalog 1.1.0 is newer than 1.0.0 and autoUpdate is on"


def test_durations_and_auto_update_source():
    assert [d.parse_duration(v) for v in (90, "90", "90s", "5m", "1h30m", "2h")] == [90, 90, 90, 300, 5400, 7200]
    for bad in ("5 minutes", "", "-3", -3, True, "m", float("nan"), float("inf")):  # NaN and infinity: refused, never a ValueError
        with pytest.raises(AicrError, match=r"spec.resyncInterval: .* is not allowed; allowed: "):
            d.parse_duration(bad)
    assert d.auto_update_of({}, True) == (True, "default")
    assert d.auto_update_of({"autoUpdate": False}, True) == (False, "spec")
