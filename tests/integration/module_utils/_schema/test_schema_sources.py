"""Chart sources: directories with subcharts, packaged charts, helm pull from a local http repository."""

import functools
import http.server
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import sources

REPO_ROOT = Path(__file__).resolve().parents[4]
HELM = REPO_ROOT / ".venv" / "bin" / "helm"
NVIDIA_REPO = "helm.ngc.nvidia.com_nvidia"


def _write_chart(root, name, values, deps=None):
    root.mkdir(parents=True, exist_ok=True)
    chart_yaml = "apiVersion: v2\nname: %s\nversion: 1.2.3\n" % name
    if deps:
        chart_yaml += "dependencies:\n" + "".join("- name: %s\n  version: 0.1.0\n%s" % (d, "  alias: %s\n" % a if a else "") for d, a in deps)
    (root / "Chart.yaml").write_text(chart_yaml)
    (root / "values.yaml").write_text(values)
    return root


@pytest.fixture
def umbrella(tmp_path):
    top = _write_chart(tmp_path / "umbrella", "umbrella", "global:\n  registry: r\nreplicas: 1\nsub:\n  enabled: true\n",
                       deps=[("sub", None), ("packed", "pk")])
    _write_chart(top / "charts" / "sub", "sub", "global:\n  pullSecrets: []\nenabled: false\nport: 80\n")
    packed = _write_chart(tmp_path / "build" / "packed", "packed", "# Packed level.\nlevel: 3\n")
    with tarfile.open(str(top / "charts" / "packed-0.1.0.tgz"), "w:gz") as archive:
        archive.add(str(packed), arcname="packed")
    return top


@pytest.fixture
def local_repo(shared_dir, tmp_path):
    """A one-chart http repository served from tmp_path on a free 127.0.0.1 port."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(str(shared_dir / "charts-repo" / "http" / NVIDIA_REPO / "gpu-operator-v26.3.3.tgz"), str(repo))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = "http://127.0.0.1:%d" % server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    if HELM.exists():
        subprocess.run([str(HELM), "repo", "index", str(repo), "--url", url], check=True, capture_output=True)
    yield url
    server.shutdown()
    server.server_close()


@pytest.mark.helm
@pytest.mark.skipif(not HELM.exists(), reason="helm not installed (make helm)")
def test_helm_pull_from_http_repository(local_repo):
    chart = sources.load_chart("gpu-operator", version="v26.3.3", repository=local_repo, helm_binary=str(HELM))
    assert (chart.name, chart.version) == ("gpu-operator", "v26.3.3")
    assert [key for key, _sub in chart.subcharts] == ["node-feature-discovery"]
    assert sources.discover_versions(local_repo, "gpu-operator") == ["v26.3.3"]
    with pytest.raises(AicrError) as exc:
        sources.load_chart("gpu-operator", version="v0.0.1", repository=local_repo, helm_binary=str(HELM))
    assert exc.value.msg.startswith("chart: helm pull gpu-operator --version v0.0.1 failed: ")
    with pytest.raises(AicrError) as exc:
        sources.discover_versions(local_repo, "nothing")
    assert exc.value.msg == "repository: %s/index.yaml lists no chart named 'nothing'" % local_repo


FAKE_HELM = """#!/bin/sh
# records its argv, then writes the chart archive given in $FAKE_CHART to the --destination directory
printf '%s\\n' "$@" > "$FAKE_ARGV"
dest=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--destination" ]; then dest="$2"; fi
  shift
done
cp "$FAKE_CHART" "$dest/"
"""


@pytest.fixture
def fake_helm(tmp_path, umbrella, monkeypatch):
    archive = tmp_path / "umbrella-1.2.3.tgz"
    with tarfile.open(str(archive), "w:gz") as handle:
        handle.add(str(umbrella), arcname="umbrella")
    script = tmp_path / "fake-helm"
    script.write_text(FAKE_HELM)
    script.chmod(0o755)
    monkeypatch.setenv("FAKE_CHART", str(archive))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv"))
    return script


@pytest.mark.helm
@pytest.mark.parametrize("binary", ["helm", "helm4"])
def test_both_helm_majors_pull(local_repo, binary):
    helm = REPO_ROOT / ".venv" / "bin" / binary
    if not helm.exists():
        pytest.skip("%s not installed (make helm)" % binary)
    chart = sources.load_chart("gpu-operator", version="v26.3.3", repository=local_repo, helm_binary=str(helm))
    assert chart.version == "v26.3.3" and chart.values()["operator"]
