"""Charts of HTTP repositories without helm: one index per repository per run, the archive checked against the index's
digest, the persistent digest-checked cache (hits, corrupt entries, concurrent writers, its bound), the credentials as
helm sends them, and ``helm pull`` for what this path does not serve. Served by a repository on 127.0.0.1."""

import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import chartfetch, helm
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos


def chart_archive(name, version):
    """A real (tiny) chart archive."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for member, text in (("Chart.yaml", "apiVersion: v2\nname: %s\nversion: %s\n" % (name, version)), ("values.yaml", "a: 1\n")):
            data = text.encode()
            info = tarfile.TarInfo("%s/%s" % (name, member))
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


class Repo:
    """An HTTP chart repository on 127.0.0.1: index.yaml (JSON, which is YAML) and archives, each request counted;
    ``auth``: the basic credentials it requires; ``tampered``: archives served other than the index says;
    ``chart_base``: where the index points the archives (default: relative URLs)."""

    def __init__(self, charts, auth=None):
        self.archives = dict(("%s-%s.tgz" % (name, version), chart_archive(name, version)) for name, version in charts)
        self.charts = charts
        self.auth = auth
        self.tampered = set()
        self.chart_base = ""
        self.requests = []
        self.headers = []
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):  # noqa: N802  (http.server's name)
                repo.requests.append(self.path)
                repo.headers.append((self.path, self.headers.get("Authorization")))
                if repo.auth and self.headers.get("Authorization") != "Basic " + base64.b64encode(("%s:%s" % repo.auth).encode()).decode():
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                    self.end_headers()
                    return
                name = self.path.rsplit("/", 1)[-1]
                if name == "index.yaml":
                    body = json.dumps(repo.index()).encode()
                elif name in repo.archives:
                    body = repo.archives[name] + (b"tampered" if name in repo.tampered else b"")
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/charts" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def index(self):
        entries = {}
        for name, version in self.charts:
            file_name = "%s-%s.tgz" % (name, version)
            entries.setdefault(name, []).append({"name": name, "version": version, "digest": hashlib.sha256(self.archives[file_name]).hexdigest(),
                                                 "urls": [self.chart_base + file_name]})
        return {"apiVersion": "v1", "entries": entries}

    def count(self, suffix):
        return sum(1 for path in self.requests if path.endswith(suffix))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


CHARTS = [("alpha", "1.0.0"), ("beta", "2.1.0"), ("gamma", "0.3.0"), ("alpha", "1.1.0")]


@pytest.fixture
def repo():
    served = Repo(CHARTS)
    yield served
    served.stop()


def fetcher(credentials=None, cache_dir=None, max_bytes=None):
    cache = chartfetch.ChartCache(str(cache_dir), max_bytes=max_bytes) if cache_dir else None
    return chartfetch.ChartFetcher(repos.Repositories(repos.normalize_credentials(credentials), "/nonexistent"), cache=cache)


def test_one_index_download_per_repository_shared_by_every_chart(repo, tmp_path):
    run = fetcher()
    with ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda c: run.fetch(c[0], repo.url, c[1], [], str(tmp_path / ("%s-%s" % c))), CHARTS))
    assert repo.count("/index.yaml") == 1 and run.downloads == {"index": 1, "archive": 4, "cached": 0}
    for (name, version), path in zip(CHARTS, paths):
        assert os.path.basename(path) == "%s-%s.tgz" % (name, version)
        with open(path, "rb") as handle:
            assert handle.read() == repo.archives["%s-%s.tgz" % (name, version)]


def test_a_tampered_archive_is_refused_naming_the_chart_and_both_digests(repo, tmp_path):
    repo.tampered.add("beta-2.1.0.tgz")
    run = fetcher(cache_dir=tmp_path / "cache")
    with pytest.raises(AicrError) as caught:
        run.fetch("beta", repo.url, "2.1.0", [], str(tmp_path / "beta"))
    want = hashlib.sha256(repo.archives["beta-2.1.0.tgz"]).hexdigest()
    got = hashlib.sha256(repo.archives["beta-2.1.0.tgz"] + b"tampered").hexdigest()
    msg = caught.value.msg
    assert "\n" not in msg and msg.startswith("chart beta 2.1.0 from %s: " % repo.url) and want in msg and got in msg, msg
    assert caught.value.details["field"] == "chart"
    assert not os.path.exists(str(tmp_path / "beta")) and not os.path.exists(str(tmp_path / "cache" / (want + ".tgz")))
    assert not os.path.exists(str(tmp_path / "cache" / (got + ".tgz")))


def test_a_second_run_downloads_only_the_index_and_a_corrupt_entry_is_fetched_again(repo, tmp_path):
    first = fetcher(cache_dir=tmp_path / "cache")
    first.fetch("alpha", repo.url, "1.0.0", [], str(tmp_path / "one"))
    assert first.downloads == {"index": 1, "archive": 1, "cached": 0}
    second = fetcher(cache_dir=tmp_path / "cache")
    path = second.fetch("alpha", repo.url, "1.0.0", [], str(tmp_path / "two"))
    assert second.downloads == {"index": 1, "archive": 0, "cached": 1} and repo.count("alpha-1.0.0.tgz") == 1
    with open(path, "rb") as handle:
        assert handle.read() == repo.archives["alpha-1.0.0.tgz"]
    digest = hashlib.sha256(repo.archives["alpha-1.0.0.tgz"]).hexdigest()
    with open(str(tmp_path / "cache" / (digest + ".tgz")), "wb") as handle:
        handle.write(b"corrupt")  # a disk error, or someone else's bytes: never used
    third = fetcher(cache_dir=tmp_path / "cache")
    path = third.fetch("alpha", repo.url, "1.0.0", [], str(tmp_path / "three"))
    assert third.downloads == {"index": 1, "archive": 1, "cached": 0} and repo.count("alpha-1.0.0.tgz") == 2
    with open(path, "rb") as handle:
        assert handle.read() == repo.archives["alpha-1.0.0.tgz"]
    with open(str(tmp_path / "cache" / (digest + ".tgz")), "rb") as handle:
        assert handle.read() == repo.archives["alpha-1.0.0.tgz"]


def test_concurrent_writers_never_show_a_reader_half_an_entry(tmp_path):
    blobs = [os.urandom(200000 + i) for i in range(6)]
    digests = [hashlib.sha256(b).hexdigest() for b in blobs]
    written = [threading.Event() for _blob in blobs]
    caches = [chartfetch.ChartCache(str(tmp_path / "cache"), max_bytes=10 ** 8) for _run in range(4)]  # four runs, one directory
    misses = []

    def work(index):
        cache = caches[index % 4]
        which = index % len(blobs)
        cache.put(digests[which], blobs[which])  # the same entries written again and again, by every run
        written[which].set()
        for other in range(len(blobs)):
            if written[other].is_set():
                data = cache.get(digests[other], 10 ** 7)
                if data != blobs[other]:
                    misses.append(other)  # a whole entry was there: a reader must get it

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(120)))
    assert misses == []
    names = os.listdir(str(tmp_path / "cache"))
    assert sorted(names) == sorted(d + ".tgz" for d in digests), names  # no temporary file left


def test_concurrent_runs_keep_the_cache_within_its_bound(tmp_path):
    blobs = [os.urandom(40000 + i) for i in range(12)]
    digests = [hashlib.sha256(b).hexdigest() for b in blobs]
    caches = [chartfetch.ChartCache(str(tmp_path / "cache"), max_bytes=300000) for _run in range(4)]
    seen = []

    def work(index):
        cache = caches[index % 4]
        cache.put(digests[index % len(blobs)], blobs[index % len(blobs)])
        seen.extend(cache.get(d, 10 ** 6) in (None, b) for d, b in zip(digests, blobs))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(96)))
    assert seen and all(seen)
    names = os.listdir(str(tmp_path / "cache"))
    assert sum(os.path.getsize(str(tmp_path / "cache" / n)) for n in names) <= 300000
    for name in names:
        with open(str(tmp_path / "cache" / name), "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() + ".tgz" == name


def test_the_least_recently_used_entries_go_first(tmp_path):
    cache = chartfetch.ChartCache(str(tmp_path), max_bytes=1000)
    blobs = dict((hashlib.sha256(b).hexdigest(), b) for b in (b"a" * 100, b"b" * 100, b"c" * 100))
    order = list(blobs)
    for age, digest in enumerate(order):
        cache.put(digest, blobs[digest])
        os.utime(cache.path(digest), (1000 + age, 1000 + age))
    cache.get(order[0], 1000)  # used: newest now
    cache.max_bytes = 250
    cache.prune()
    assert sorted(os.listdir(str(tmp_path))) == sorted([order[0] + ".tgz", order[2] + ".tgz"])


def test_the_cache_bound_is_an_environment_variable_refused_when_not_positive():
    assert chartfetch.cache_max_bytes({}) == 512 * 1024 * 1024
    assert chartfetch.cache_max_bytes({"AICR_RUNTIME_CHART_CACHE_MAX_MB": "3"}) == 3 * 1024 * 1024
    with pytest.raises(AicrError, match="AICR_RUNTIME_CHART_CACHE_MAX_MB: '0' is not allowed; use a positive integer"):
        chartfetch.cache_max_bytes({"AICR_RUNTIME_CHART_CACHE_MAX_MB": "0"})


def test_credentials_go_to_the_index_and_the_same_origin_archive_only(tmp_path):
    private = Repo(CHARTS, auth=("reader", "s3cret-pass"))
    other = Repo(CHARTS)
    try:
        credentials = [{"url": private.url, "username": "reader", "password": "s3cret-pass", "plain_http": True}]
        run = fetcher(credentials)
        assert run.fetch("alpha", private.url, "1.0.0", [], str(tmp_path / "a"))
        assert all(header for _path, header in private.headers)  # the index and the archive: both authenticated
        private.chart_base = other.url + "/"  # the index points the archives at another host
        run = fetcher(credentials)
        assert run.fetch("beta", private.url, "2.1.0", [], str(tmp_path / "b"))
        assert other.headers == [("/charts/beta-2.1.0.tgz", None)]  # never the credentials (helm's pass_credentials_all: false)
        assert fetcher().fetch("gamma", private.url, "0.3.0", [], str(tmp_path / "c")) is None  # a 401: left to helm, which says why
    finally:
        private.stop()
        other.stop()


def test_what_helm_decides_is_left_to_helm(repo, tmp_path):
    run = fetcher()
    for chart, version in (("alpha", ""), ("alpha", "^1.0"), ("alpha", "v1.0.0"), ("missing", "1.0.0"), ("sub/alpha", "1.0.0")):
        assert run.fetch(chart, repo.url, version, [], str(tmp_path / "x")) is None, (chart, version)
    assert run.fetch("alpha", repo.url, "1.0.0", ["--some-flag"], str(tmp_path / "x")) is None
    assert run.fetch("alpha", "oci://127.0.0.1:1/charts", "1.0.0", [], str(tmp_path / "x")) is None
    assert repo.count("/index.yaml") == 1 and repo.count(".tgz") == 0
    down = fetcher()
    assert down.fetch("alpha", "http://127.0.0.1:1/charts", "1.0.0", [], str(tmp_path / "y")) is None  # nothing answers: helm says so


def test_helm_pull_is_used_only_when_the_direct_path_cannot_serve(repo, tmp_path):
    calls = []

    def run(argv, **_kwargs):
        calls.append(argv[1:])
        if argv[1] == "pull":
            with open(os.path.join(argv[argv.index("--destination") + 1], "x-1.tgz"), "wb") as handle:
                handle.write(b"x")
        return subprocess.CompletedProcess(argv, 0, b"v3.17.0", b"")

    runner = helm.HelmRunner("helm", runner=run, home=str(tmp_path / "home"), fetch_charts=True, chart_cache_dir=str(tmp_path / "cache"))
    path = runner.pull("beta", repo.url, "2.1.0", str(tmp_path / "beta"))
    assert calls == [] and path.endswith("beta-2.1.0.tgz")
    runner.pull("beta", repo.url, "^2", str(tmp_path / "range"))
    assert [c[:2] for c in calls] == [["pull", "beta"]] and "--repo" in calls[0]
    assert helm.HelmRunner("helm", runner=run).fetcher is None  # off unless asked for


def test_sigterm_stops_a_download(repo, tmp_path):
    cancel._event.set()  # pylint: disable=protected-access  # what the SIGTERM handler does
    try:
        with pytest.raises(cancel.Cancelled):
            fetcher().fetch("alpha", repo.url, "1.0.0", [], str(tmp_path / "a"))
    finally:
        cancel.reset()
    assert repo.requests == []
