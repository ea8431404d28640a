"""The gate: a post-renderer that hands helm's manifests back only on "go", and what a chart reads before it."""

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._release import gate as gates
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import manifest_docs

MANIFESTS = b"---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"


def post_render(server, gate):
    """The post-renderer as helm 3 runs it (stdin: the manifests; args: socket and token)."""
    return subprocess.Popen([server.script, server.path, gate.token], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def server(tmp_path):
    gate_server = gates.GateServer(str(tmp_path), 3)
    yield gate_server
    gate_server.close()


def test_go_hands_the_manifests_back_unchanged(server):
    gate = server.new_gate("c")
    proc = post_render(server, gate)
    proc.stdin.write(MANIFESTS)
    proc.stdin.close()
    server.open(gate)
    assert proc.wait(timeout=30) == 0
    assert proc.stdout.read() == MANIFESTS


def test_a_decision_made_before_the_post_renderer_connects_is_kept(server):
    gate = server.new_gate("c")
    server.open(gate)
    out, _err = post_render(server, gate).communicate(MANIFESTS, timeout=30)
    assert out == MANIFESTS


@pytest.mark.parametrize("how", ["stop", "close", "unknown-token"])
def test_a_gate_that_does_not_open_gives_helm_nothing_and_says_why(server, how):
    gate = server.new_gate("c")
    if how == "unknown-token":
        gate = gates.Gate("c")
    proc = post_render(server, gate)
    proc.stdin.write(MANIFESTS)
    proc.stdin.close()
    if how == "stop":
        server.stop(gate, "dependency of c failed")
    elif how == "close":
        server.close()
    assert proc.wait(timeout=30) == 3
    assert proc.stdout.read() == b""
    reason = proc.stderr.read().decode()
    assert reason.startswith("aicr.runtime gate closed: ")
    if how == "stop":
        assert "dependency of c failed" in reason


def test_private_files_and_a_short_socket_path_under_a_deep_directory(tmp_path):
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    server = gates.GateServer(str(deep), 4)
    try:
        assert len(server.path.encode()) < 100 and not server.path.startswith(str(deep))
        assert oct(os.stat(server.dir).st_mode & 0o777) == "0o700"
        assert oct(os.stat(server.script).st_mode & 0o777) == "0o700"
        assert oct(os.stat(server.path).st_mode & 0o777) == "0o600"
        plugin = Path(server.plugins_dir) / gates.PLUGIN_NAME / "plugin.yaml"
        assert "type: postrenderer/v1" in plugin.read_text()
        env = server.helm_env({"HELM_DATA_HOME": "/h"})
        assert env["HELM_PLUGINS"] == os.pathsep.join([server.plugins_dir, "/h/plugins"])
        assert server.helm_flags(server.new_gate("c"))[:2] == ["--post-renderer", gates.PLUGIN_NAME]
    finally:
        server.close()
    assert not os.path.exists(os.path.dirname(server.path))


def make_chart_dir(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def archive_of(files, name="c"):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, data in files.items():
            data = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo("%s/%s" % (name, rel))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


PLAIN = {"Chart.yaml": "name: c\n", "templates/d.yaml": "kind: Deployment\nname: {{ .Release.Name }}\n"}


@pytest.mark.parametrize("files, crds, lookup", [
    (PLAIN, False, False),
    (dict(PLAIN, **{"crds/w.yaml": "kind: CustomResourceDefinition\n"}), True, False),
    (dict(PLAIN, **{"templates/s.yaml": "{{- $s := (lookup \"v1\" \"Secret\" \"ns\" \"n\") }}\n"}), False, True),
    (dict(PLAIN, **{"templates/_h.tpl": "{{ lookup \"v1\" \"Namespace\" \"\" \"x\" }}"}), False, True),
    (dict(PLAIN, **{"charts/sub/crds/w.yaml": "x"}), True, False),
    (dict(PLAIN, **{"charts/sub/templates/s.yaml": "{{ lookup \"v1\" \"Secret\" \"a\" \"b\" }}"}), False, True),
    (dict(PLAIN, **{"values.yaml": "lookup: \"x\"\n", "templates/n.txt": "a lookups table\n"}), False, False),
], ids=["plain", "crds", "lookup", "lookup-in-helper", "subchart-crds", "subchart-lookup", "lookup-as-a-word"])
def test_chart_traits_of_directories_and_archives(tmp_path, files, crds, lookup):
    traits = gates.chart_traits(str(make_chart_dir(tmp_path / "c", files)))
    assert (traits.crds, traits.lookup) == (crds, lookup)
    archive = tmp_path / "c.tgz"
    archive.write_bytes(archive_of(files))
    traits = gates.chart_traits(str(archive))
    assert (traits.crds, traits.lookup) == (crds, lookup)


def test_chart_traits_of_a_subchart_archive_inside_an_archive(tmp_path):
    sub = archive_of({"Chart.yaml": "name: sub\n", "crds/w.yaml": "x"}, name="sub")
    archive = tmp_path / "c.tgz"
    archive.write_bytes(archive_of(dict(PLAIN, **{"charts/sub-1.0.0.tgz": sub})))
    assert gates.chart_traits(str(archive)).crds is True
    make_chart_dir(tmp_path / "d", PLAIN)
    (tmp_path / "d" / "charts").mkdir()
    (tmp_path / "d" / "charts" / "sub-1.0.0.tgz").write_bytes(sub)
    assert gates.chart_traits(str(tmp_path / "d")).crds is True


def test_an_unreadable_chart_has_no_traits_and_adds_api_types(tmp_path):
    broken = tmp_path / "broken.tgz"
    broken.write_bytes(b"not a tarball")
    assert gates.chart_traits(str(broken)) is None
    assert gates.chart_traits(str(tmp_path / "missing.tgz")) is None
    assert gates.provides_api([], None) is True


@pytest.mark.parametrize("manifest, expected", [
    ("---\nkind: Deployment\nmetadata: {name: d}\n", False),
    ("---\nkind: Deployment\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n", True),
    ("---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\n", True),
])
def test_provides_api_from_the_release_manifest(manifest, expected):
    assert gates.provides_api(manifest_docs(manifest), gates.ChartTraits()) is expected


def test_the_post_renderer_starts_without_the_socket_module(server):
    """One post-renderer starts per early helm: `socket` (its enum classes) would cost it 15 ms of CPU more than `_socket`."""
    gate = server.new_gate("c")
    server.open(gate)
    proc = subprocess.run([sys.executable, "-IS", "-X", "importtime", server.script, server.path, gate.token], input=MANIFESTS,
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == MANIFESTS
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "_socket" in imported
    assert not imported & {"socket", "enum", "selectors"}
