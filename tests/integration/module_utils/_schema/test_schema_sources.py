"""Chart sources: directories with subcharts, packaged charts, helm pull from a local http repository."""

import functools
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import sources

REPO_ROOT = Path(__file__).resolve().parents[4]
HELM = REPO_ROOT / ".venv" / "bin" / "helm"
NVIDIA_REPO = "helm.ngc.nvidia.com_nvidia"


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


@pytest.mark.helm
@pytest.mark.parametrize("binary", ["helm", "helm4"])
def test_both_helm_majors_pull(local_repo, binary):
    helm = REPO_ROOT / ".venv" / "bin" / binary
    if not helm.exists():
        pytest.skip("%s not installed (make helm)" % binary)
    chart = sources.load_chart("gpu-operator", version="v26.3.3", repository=local_repo, helm_binary=str(helm))
    assert chart.version == "v26.3.3" and chart.values()["operator"]
