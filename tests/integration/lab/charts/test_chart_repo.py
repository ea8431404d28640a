"""aicr_lab.charts.repo / cli: source classification, served repositories, real helm as the client."""

import hashlib
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from aicr_lab.charts.helm import isolated_env, run_helm
from aicr_lab.charts.pytest_fixture import example_charts_dir, shared_http_dir, start_chart_repo
from aicr_lab.charts.repo import ChartRepoError, ChartRepoServer

EXAMPLES = example_charts_dir()
EXAMPLE_NAMES = ["example-agent", "example-crds", "example-hooks", "example-monitoring", "example-operator"]


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get("Content-Type"), response.read()


def tree_digest(root):
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
            digest.update(str(path.stat().st_mtime_ns).encode())
    return digest.hexdigest()


@pytest.mark.helm
def test_example_repository_serves_index_and_archives_matching_their_digests(tmp_path):
    server = start_chart_repo(tmp_path)
    try:
        assert server.url == "http://127.0.0.1:%d/examples" % server.port and server.port > 0
        status, ctype, body = fetch(server.url + "/index.yaml")
        assert status == 200 and ctype == "application/x-yaml"
        index = yaml.safe_load(body)
        assert sorted(index["entries"]) == EXAMPLE_NAMES
        for name, (entry,) in index["entries"].items():
            assert entry["version"] == "0.1.0"
            assert entry["urls"] == ["%s/%s-0.1.0.tgz" % (server.url, name)]
            status, ctype, archive = fetch(entry["urls"][0])
            assert ctype == "application/gzip"
            assert hashlib.sha256(archive).hexdigest() == entry["digest"]
        assert server.repository("/examples").charts == {n: ["0.1.0"] for n in EXAMPLE_NAMES}
        with pytest.raises(urllib.error.HTTPError) as missing:
            fetch(server.url + "/example-agent-9.9.9.tgz")
        assert missing.value.code == 404
        assert ("GET", "/examples/index.yaml", 200) in server.requests
        assert ("GET", "/examples/example-agent-9.9.9.tgz", 404) in server.requests
    finally:
        server.stop()
    with pytest.raises(urllib.error.URLError):
        fetch(server.url + "/index.yaml")


@pytest.mark.helm
@pytest.mark.parametrize("binary", ["helm3", "helm4"])
def test_real_helm_adds_searches_and_pulls_from_the_repository(tmp_path, binary):
    helm = str(Path(sys.executable).parent / binary)
    env = isolated_env(tmp_path / "home")
    with ChartRepoServer([str(EXAMPLES)], workdir=tmp_path / "site", url_prefix="/examples") as server:
        run_helm(["repo", "add", "aicr-examples", server.url], helm=helm, env=env)
        found = yaml.safe_load(run_helm(["search", "repo", "aicr-examples/", "-o", "yaml"], helm=helm, env=env))
        assert sorted(item["name"] for item in found) == ["aicr-examples/" + n for n in EXAMPLE_NAMES]
        run_helm(["pull", "example-monitoring", "--repo", server.url, "--version", "0.1.0", "--untar", "--untardir", tmp_path / "pulled"], helm=helm, env=env)
        assert (tmp_path / "pulled" / "example-monitoring" / "charts" / "example-exporter" / "Chart.yaml").is_file()
        shown = yaml.safe_load(run_helm(["show", "chart", "aicr-examples/example-operator"], helm=helm, env=env))
        assert shown["name"] == "example-operator"


@pytest.mark.helm
def test_shared_http_repositories_are_reindexed_for_the_chosen_port_without_touching_shared(tmp_path, shared_dir):
    source = shared_http_dir(shared_dir)
    before = tree_digest(source)
    originals = {p.parent.name: yaml.safe_load(p.read_text()) for p in source.glob("*/index.yaml")}
    with ChartRepoServer(["/=%s" % source], workdir=tmp_path / "site", url_prefix="/ignored") as server:
        assert sorted(r.prefix for r in server.repositories) == sorted("/" + slug for slug in originals)
        for slug, original in originals.items():
            repo = server.repository("/" + slug)
            served = yaml.safe_load(fetch(repo.url + "/index.yaml")[2])
            assert sorted(served["entries"]) == sorted(original["entries"])
            for name, entries in served["entries"].items():
                old = {e["version"]: e for e in original["entries"][name]}
                for entry in entries:
                    assert entry["digest"] == old[entry["version"]]["digest"], "same archives, same digests"
                    assert entry["urls"] == [old[entry["version"]]["urls"][0].replace("http://127.0.0.1:8879", server.base_url)]
        gpu = server.repository("/helm.ngc.nvidia.com_nvidia")
        assert "v26.3.3" in gpu.charts["gpu-operator"]
        helm = str(Path(sys.executable).parent / "helm")
        out = run_helm(["show", "chart", "gpu-operator", "--repo", gpu.url, "--version", "v26.3.3"], helm=helm, env=isolated_env(tmp_path / "home"))
        assert yaml.safe_load(out)["name"] == "gpu-operator"
    assert tree_digest(source) == before


@pytest.mark.helm
def test_two_different_archives_with_one_name_are_refused(tmp_path):
    for sub, data in (("a", b"one"), ("b", b"two")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "same-1.0.0.tgz").write_bytes(data)
    server = ChartRepoServer([str(tmp_path / "a"), str(tmp_path / "b")], workdir=tmp_path / "site")
    with pytest.raises(ChartRepoError, match="two different charts named same-1.0.0.tgz"):
        server.start()
    server.stop()


@pytest.mark.helm
def test_an_unpackageable_chart_is_reported(tmp_path):
    chart = tmp_path / "broken"
    shutil.copytree(str(EXAMPLES / "example-agent"), str(chart))
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: not-semver\n")
    with pytest.raises(ChartRepoError, match="helm package .*broken failed"):
        ChartRepoServer([str(chart)], workdir=tmp_path / "site").start()


@pytest.mark.helm
def test_cli_prints_ready_serves_and_stops_on_sigterm(tmp_path):
    cli = str(Path(sys.executable).parent / "aicr-chart-repo")
    proc = subprocess.Popen([cli, "--port", "0", "--charts", str(EXAMPLES), "--url-prefix", "/examples", "--workdir", str(tmp_path / "w")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("ready http://127.0.0.1:") and line.endswith("/examples"), line + proc.stderr.read()
        url = line.split()[1]
        assert sorted(yaml.safe_load(fetch(url + "/index.yaml")[2])["entries"]) == EXAMPLE_NAMES
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        assert "repo %s example-agent=0.1.0" % url in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_reports_a_bad_source_with_exit_2(tmp_path):
    cli = str(Path(sys.executable).parent / "aicr-chart-repo")
    result = subprocess.run([cli, "--port", "0", "--charts", str(tmp_path / "missing")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=30, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "aicr-chart-repo: error: chart source %s does not exist" % (tmp_path / "missing") in result.stderr
