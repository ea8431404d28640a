"""gated_release's options are declared once (``_release.spec``, issue 37): the module's argument spec, its documentation,
the engine's defaults, the option_problems lookup's checks and the flags helm is given all come from that declaration."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.lookup import option_problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import options_from
from ansible_collections.aicr.runtime.plugins.module_utils._release import spec
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options
from ansible_collections.aicr.runtime.plugins.modules import gated_release

REPO = Path(__file__).resolve().parents[5]


@pytest.fixture(scope="module")
def documented():
    """gated_release's options as ansible-doc reads them (doc fragments merged)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "dev"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-t", "module", "--json", "aicr.runtime.gated_release"],
                         env=env, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(run.stdout)["aicr.runtime.gated_release"]["doc"]["options"]


def test_the_module_takes_the_declared_argument_spec():
    assert gated_release.argument_spec is spec.argument_spec
    built = spec.argument_spec()
    assert set(built) == set(spec.OPTIONS)
    assert not any(set(option) & spec.EXTENSIONS for option in built.values()), "the collection's own keys never reach AnsibleModule"
    built["skip_components"]["default"].append("x")
    assert spec.argument_spec()["skip_components"]["default"] == [], "each call gets its own defaults"


def test_the_documentation_says_what_the_declaration_does(documented):
    assert set(documented) == set(spec.OPTIONS)
    wrong = []
    for name, declared in spec.argument_spec().items():
        doc = documented[name]
        for key, fallback in (("type", "str"), ("default", None), ("choices", None), ("elements", None)):
            if doc.get(key, fallback) != declared.get(key, fallback):
                wrong.append("%s: %s documented %r, declared %r" % (name, key, doc.get(key, fallback), declared.get(key, fallback)))
    assert not wrong, "\n".join(wrong)


def test_the_engine_defaults_are_the_declared_ones():
    options = Options()
    for name in ("state", "concurrency", "timeout", "overall_timeout", "poll_interval", "lease_duration", "lease_namespace",
                 "early_start", "on_failure", "chart_crds", "drift") + spec.RANGED:
        assert getattr(options, name) == spec.default(name), name


def test_the_lookup_checks_the_options_declared_offline():
    assert option_problems.CHECKS["gated_release"][0] == spec.OFFLINE
    assert "concurrency" in spec.OFFLINE and "recipe" not in spec.OFFLINE


def test_ranged_options_are_checked_by_their_declaration(monkeypatch):
    monkeypatch.setitem(spec.OPTIONS, "example_count", dict(type="int", default=3, minimum=1, maximum=9))
    monkeypatch.setattr(spec, "RANGED", spec.RANGED + ("example_count",))
    assert Options().example_count == 3
    problems = Problems("gated_release")
    Options(problems=problems, example_count=0)
    assert [e["message"] for e in problems.errors] == ["example_count: 0 is not allowed; use 1 to 9"]


def test_history_max_is_given_to_helm():
    assert Options().helm_flags == ["--history-max", "10"], "helm's own default, said explicitly"
    assert Options(history_max=0).helm_flags == ["--history-max", "0"], "0: every revision kept"
    assert Options(history_max=3, on_failure="rollback").helm_flags == ["--history-max", "3"]
    assert options_from({"history_max": 25}, {}, False, False, local=False).helm_flags == ["--history-max", "25"]


@pytest.mark.parametrize("given, message", [
    ({"history_max": -1}, "history_max: -1 is not allowed; use 0 or more"),
    ({"history_max": "lots"}, "history_max: 'lots' is not allowed; use an integer (0 or more)"),
    ({"history_max": 1, "on_failure": "rollback"}, "history_max: 1 is not allowed with on_failure: rollback; use 0 (unlimited) or at least 2 "
                                                   "(the last known good revision must still exist to roll back to)"),
])
def test_history_max_refused_in_one_line_naming_it(given, message):
    problems = Problems("gated_release")
    Options(problems=problems, **given)
    assert [e["message"] for e in problems.errors] == [message]
    assert problems.errors[0]["field"] == "history_max"


def test_history_max_one_is_fine_without_rollback():
    assert Options(history_max=1).history_max == 1
    assert Options(history_max=0, on_failure="rollback").history_max == 0
    assert option_problems.problems_of("gated_release", {"history_max": 1, "on_failure": "rollback"})[0]["field"] == "history_max"
