"""pytest helpers for chart serving.

Plain functions (usable from any fixture, molecule or a script)::

    repo = start_chart_repo(tmp_path)                      # the example charts at <url>/examples
    repo = start_chart_repo(tmp_path, charts=[shared_http_dir(shared_dir)], url_prefix="")
    registry = start_registry(tmp_path / "registry")       # oci://127.0.0.1:PORT
    refs = push_shared_oci(registry, shared_dir / "charts-repo" / "oci")
    ...
    repo.stop(); registry.stop()

and ready-made session fixtures, enabled in a conftest.py with
``pytest_plugins = ["aicr_lab.charts.pytest_fixture"]``:
``example_repo`` (URL ``<base>/examples``; also named ``example_chart_repo``), ``shared_chart_repo`` (one repository per
``charts-repo/http/<slug>`` at ``<base>/<slug>``) and ``oci_registry`` (empty registry).
"""

import os
import tempfile
from pathlib import Path

import pytest

from aicr_lab.charts.oci import push_chart, push_shared_oci, start_registry  # noqa: F401  (re-exported)
from aicr_lab.charts.repo import ChartRepoServer

REPO_ROOT = Path(__file__).resolve().parents[4]
EXAMPLES_URL_PREFIX = "/examples"

__all__ = ["EXAMPLES_URL_PREFIX", "example_charts_dir", "shared_http_dir", "start_chart_repo", "start_registry", "push_chart", "push_shared_oci"]


def example_charts_dir():
    """The repository's own example charts (examples/charts)."""
    return REPO_ROOT / "examples" / "charts"


def shared_http_dir(shared_dir=None):
    """``charts-repo/http`` of the upstream data ($AICR_SHARED or ../shared beside the clone)."""
    root = Path(shared_dir) if shared_dir else Path(os.environ.get("AICR_SHARED") or REPO_ROOT.parent / "shared")
    return root / "charts-repo" / "http"


def start_chart_repo(tmp_dir, charts=None, url_prefix=EXAMPLES_URL_PREFIX, port=0, helm=None):
    """Build and serve a chart repository under ``tmp_dir``; return the started ``ChartRepoServer``.

    ``charts`` defaults to the example charts; items are paths or ``"/PREFIX=DIR"`` strings.
    """
    sources = [str(c) for c in (charts if charts is not None else [example_charts_dir()])]
    workdir = Path(tempfile.mkdtemp(prefix="chart-repo-", dir=str(tmp_dir)))
    return ChartRepoServer(sources, workdir=workdir, url_prefix=url_prefix, port=port, helm=helm).start()


@pytest.fixture(scope="session")
def example_repo(tmp_path_factory):
    """The example charts served at ``<url>`` = ``http://127.0.0.1:PORT/examples``, one server per pytest session
    (read-only: every test and module of the session shares it; the suites' one example chart-repository fixture)."""
    server = start_chart_repo(tmp_path_factory.mktemp("example-chart-repo"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def example_chart_repo(example_repo):  # pylint: disable=redefined-outer-name
    """``example_repo`` under its earlier name."""
    return example_repo


@pytest.fixture(scope="session")
def shared_chart_repo(tmp_path_factory):
    """``charts-repo/http`` served as one repository per slug: ``server.repository('/<slug>').url``."""
    source = shared_http_dir()
    if not source.is_dir():
        pytest.fail("upstream charts not found at %s (set AICR_SHARED)" % source)
    server = start_chart_repo(tmp_path_factory.mktemp("shared-chart-repo"), charts=[source], url_prefix="")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory):
    """An empty local OCI registry (``registry.url`` = ``oci://127.0.0.1:PORT``)."""
    registry = start_registry(tmp_path_factory.mktemp("oci-registry"))
    yield registry
    registry.stop()
