"""aicr_lab.charts.repo / cli: source classification, served repositories, real helm as the client."""

import shutil
from pathlib import Path

import pytest

from aicr_lab.charts.pytest_fixture import example_charts_dir
from aicr_lab.charts.repo import ChartRepoError, normalise_prefix, parse_source, plan_repositories

EXAMPLES = example_charts_dir()
EXAMPLE_NAMES = ["example-agent", "example-crds", "example-hooks", "example-monitoring", "example-operator"]


@pytest.mark.parametrize("given,expected", [("", ""), ("/", ""), ("examples", "/examples"), ("/examples/", "/examples"), ("//a//b/", "/a/b")])
def test_normalise_prefix(given, expected):
    assert normalise_prefix(given) == expected


def test_normalise_prefix_refuses_dot_segments():
    with pytest.raises(ChartRepoError, match="'..' are not allowed"):
        normalise_prefix("/a/../b")


def test_parse_source():
    assert parse_source("charts", "/examples") == ("/examples", Path("charts"))
    assert parse_source("/mirror=/data/http", "/examples") == ("/mirror", Path("/data/http"))
    assert parse_source("/=/data/http", "/examples") == ("", Path("/data/http"))
    assert parse_source("/plain/path", "") == ("", Path("/plain/path"))


def test_plan_classifies_charts_archives_repositories_and_trees(tmp_path):
    shutil.copytree(str(EXAMPLES / "example-agent"), str(tmp_path / "one-chart"))
    (tmp_path / "tgzs").mkdir()
    (tmp_path / "tgzs" / "x-1.0.0.tgz").write_bytes(b"x")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "index.yaml").write_text("apiVersion: v1\n")
    (tmp_path / "repo" / "y-1.0.0.tgz").write_bytes(b"y")
    (tmp_path / "tree" / "slug-a").mkdir(parents=True)
    (tmp_path / "tree" / "slug-a" / "index.yaml").write_text("apiVersion: v1\n")
    (tmp_path / "tree" / "slug-a" / "z-1.0.0.tgz").write_bytes(b"z")
    plan = plan_repositories([("", tmp_path / "one-chart"), ("", tmp_path / "tgzs"), ("/r", tmp_path / "repo"), ("/t", tmp_path / "tree"),
                              ("/e", EXAMPLES)])
    assert plan[""] == [("chart", tmp_path / "one-chart"), ("tgz", tmp_path / "tgzs" / "x-1.0.0.tgz")]
    assert plan["/r"] == [("tgz", tmp_path / "repo" / "y-1.0.0.tgz")]
    assert plan["/t/slug-a"] == [("tgz", tmp_path / "tree" / "slug-a" / "z-1.0.0.tgz")]
    assert [p.name for kind, p in plan["/e"] if kind == "chart"] == EXAMPLE_NAMES


def test_plan_refuses_missing_and_empty_sources(tmp_path):
    with pytest.raises(ChartRepoError, match="does not exist"):
        plan_repositories([("", tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ChartRepoError, match="holds no chart"):
        plan_repositories([("", tmp_path / "empty")])
