"""The rollout timeline: a Mermaid gantt of each component's phases with the measured critical path."""

import re

from ansible_collections.aicr.runtime.plugins.filter.timeline import timeline as timeline_filter
from ansible_collections.aicr.runtime.plugins.module_utils._common import timeline
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model

# a DAG with known durations:   crds(2) -> operator(5) -> agent(1)
#                                crds(2) -> config(1) -> jobs(10)       <- the longest path: crds, config, jobs = 13 s
#                                monitoring(4)                          (independent)
DAG = [("crds", 2.0, []), ("config", 1.0, ["crds"]), ("operator", 5.0, ["crds"]), ("agent", 1.0, ["operator"]),
       ("jobs", 10.0, ["config"]), ("monitoring", 4.0, [])]


def _bars(with_starts):
    bars = [{"name": name, "start": None, "seconds": seconds, "check": None, "after": after, "phase": "Ready", "blocked_by": []}
            for name, seconds, after in DAG]
    if with_starts:
        timed = dict((b["name"], b) for b in timeline.schedule(bars))
        for entry in bars:
            entry["start"] = 1796047200.0 + timed[entry["name"]]["start"]
    return bars


def _tasks(text):
    """{task id: (name, tags, start ms, end ms, section)}."""
    tasks, section = {}, None
    for line in text.splitlines():
        if line.strip().startswith("section "):
            section = line.strip()[len("section "):]
        m = re.match(r"^\s+(.+?) :(.*?)(c\d+_\w+|b\d+_\w+), (\d+), (\d+)$", line)
        if m:
            tasks[m.group(3)] = (m.group(1), [t.strip() for t in m.group(2).split(",") if t.strip()], int(m.group(4)), int(m.group(5)), section)
    return tasks


def test_the_critical_path_is_the_longest_chain_of_the_dag():
    for with_starts in (False, True):  # laid out from durations alone, or measured
        bars = _bars(with_starts)
        assert timeline.critical_path(timeline.schedule(bars)) == ["crds", "config", "jobs"]
        text = timeline.gantt(bars, title="demo")
        assert "%% critical path: crds -> config -> jobs (13.0s)" in text
        crit = set(t[4] for t in _tasks(text).values() if "crit" in t[1])
        assert crit == {"crds", "config", "jobs"}


def test_the_measured_path_follows_the_dependency_that_ended_last():
    # measured starts that differ from the durations' schedule (a concurrency limit held agent back until 20 s)
    bars = _bars(True)
    bars[3]["start"] += 12.0  # agent: 8 s -> 20 s, ends at 21 s, after jobs
    assert timeline.critical_path(timeline.schedule(bars)) == ["crds", "operator", "agent"]


def test_phases_wait_install_and_health_check_are_drawn_in_order():
    bars = _bars(False)
    bars[2]["check"] = 2.0  # operator: 3 s install, 2 s health check
    tasks = _tasks(timeline.gantt(bars))
    wait, run, check = tasks["c2_wait"], tasks["c2_run"], tasks["c2_check"]
    assert wait[0] == "wait for crds" and "done" in wait[1]
    assert (wait[2], wait[3]) == (0, 2000)
    assert (run[2], run[3]) == (2000, 5000) and run[0] == "install"
    assert (check[2], check[3]) == (5000, 7000) and "active" in check[1]
    assert "c0_wait" not in tasks  # crds started at once: no wait


def test_a_blocked_component_is_a_milestone_at_its_blockers_failure():
    bars = _bars(False)[:3]
    bars[1]["phase"] = "Failed"
    bars.append({"name": "jobs", "start": None, "seconds": None, "check": None, "after": ["config"], "phase": "Blocked", "blocked_by": ["config"]})
    tasks = _tasks(timeline.gantt(bars))
    assert tasks["c1_run"][0] == "install (failed)"
    assert tasks["b0_blocked"][0] == "blocked by config" and tasks["b0_blocked"][1] == ["milestone"]
    assert tasks["b0_blocked"][2] == 3000


def test_names_are_escaped_for_the_gantt_grammar():
    evil = "ev:il; #name %%\nsection x"
    bars = [{"name": evil, "start": None, "seconds": 1.0, "check": None, "after": [], "phase": "Ready", "blocked_by": []},
            {"name": "b", "start": None, "seconds": 1.0, "check": None, "after": [evil], "phase": "Ready", "blocked_by": []}]
    lines = timeline.gantt(bars, title="t: #1\nx").splitlines()
    assert "    title t 1 x" in lines
    assert "    section ev il name section x" in lines
    assert "    wait for ev il name section x :done, c1_wait, 0, 1000" in lines
    assert sum(1 for line in lines if line.strip().startswith("section ")) == 2  # the name's line break made no section
    for line in lines[1:]:
        body = line.strip()
        if body.startswith(("title ", "section ")):
            assert not re.search(r"[:;#%]", body.split(" ", 1)[1])
        elif " :" in body:
            assert not re.search(r"[:;#%]", body.split(" :", 1)[0])
    assert timeline.label("") == "?"


def test_nothing_ran_in_check_mode():
    pending = {"name": "a", "start": None, "seconds": None, "check": None, "after": [], "phase": "Pending", "blocked_by": []}
    assert "%% nothing ran" in timeline.gantt([pending])


def test_the_status_keeps_the_last_rollouts_timing_and_the_filter_draws_it():
    results = [{"name": "crds", "phase": "Ready", "started": "2026-12-05T12:00:00.000Z", "duration": 2.0, "dependencies": [], "changed": True},
               {"name": "operator", "phase": "Ready", "started": "2026-12-05T12:00:02.000Z", "duration": 5.0, "dependencies": ["crds"],
                "health": {"status": "Passed", "duration": 1.5}, "changed": True}]
    status_components, _events = model.merge_components([], results)
    assert status_components[1]["timing"] == {"start": "2026-12-05T12:00:02.000Z", "seconds": 5.0, "checkSeconds": 1.5, "after": ["crds"]}
    # a new rollout in flight (Deploying, no duration yet) keeps the last finished timing
    deploying = {"name": "operator", "phase": "Deploying", "started": "2026-12-05T13:00:00.000Z", "duration": None, "dependencies": ["crds"]}
    again, _events = model.merge_components(status_components, [deploying])
    assert again[1]["timing"]["start"] == "2026-12-05T12:00:02.000Z"
    from_status = timeline_filter({"name": "gpu", "status": {"components": status_components}})
    from_result = timeline.gantt(timeline.from_results(results), title="last rollout of gpu")
    assert from_status == from_result
    assert "%% critical path: crds -> operator (7.0s)" in from_status


def test_with_two_dependencies_the_path_goes_through_the_one_that_ended_last():
    bars = _bars(False) + [{"name": "final", "start": None, "seconds": 20.0, "check": None, "after": ["agent", "config"], "phase": "Ready",
                            "blocked_by": []}]
    # agent ends at 8 s, config at 3 s (both 1 s long): final starts at 8 s, after agent
    assert timeline.critical_path(timeline.schedule(bars)) == ["crds", "operator", "agent", "final"]


def test_a_run_that_changes_nothing_keeps_the_timing_so_the_status_is_the_same():
    first = [{"name": "crds", "phase": "Ready", "started": "2026-12-05T12:00:00.000Z", "duration": 2.0, "dependencies": [], "changed": True}]
    status, _events = model.merge_components([], first, now="2026-12-05T12:00:02Z")
    again = [{"name": "crds", "phase": "Unchanged", "started": "2026-12-05T13:00:00.000Z", "duration": 0.2, "dependencies": [], "changed": False}]
    after, _events = model.merge_components(status, again, now="2026-12-05T13:00:01Z")
    assert after == status, "a no-op converge must not rewrite the status (stack_status stays unchanged, idempotence holds)"
    failed = [dict(again[0], phase="Failed", started="2026-12-05T14:00:00.000Z", duration=3.0)]
    assert model.merge_components(status, failed)[0][0]["timing"]["start"] == "2026-12-05T14:00:00.000Z", "a failure is timed"
