"""The ClusterStack status lists, per component, the chart CRDs the stack applied (chartCrds, from gated_release's
components[].chart_crds), kept while an update does not say."""

from ansible_collections.aicr.runtime.plugins.module_utils._stack import model


def test_chart_crds_are_listed_and_kept_until_an_update_says_otherwise():
    status, _events = model.apply_update({}, {"components": [{"name": "x", "phase": "Ready", "chart_crds": ["b.example.io", "a.example.io"]}]})
    assert status["components"][0]["chartCrds"] == ["a.example.io", "b.example.io"]
    status, _events = model.apply_update(status, {"components": [{"name": "x", "phase": "Deploying"}]})
    assert status["components"][0]["chartCrds"] == ["a.example.io", "b.example.io"]
