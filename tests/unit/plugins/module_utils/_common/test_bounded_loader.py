"""The one bounded loader (``_common.bounded`` through ``_common.deps``): bombs are refused in one line naming the input
and the limit. Refusal only - time and memory are measured by ``make bench`` (tests/bench/bench_bombs.py), never here."""

import base64
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import decode_release_secret
from ansible_collections.aicr.runtime.plugins.module_utils._schema import infer, sources

from recipe_helpers import make_catalog

MIB = 1024 * 1024


def alias_bomb(levels=9, width=9):
    """``levels`` anchors of ``width`` aliases each: a few hundred bytes, ``width ** levels`` nodes once expanded."""
    lines = ["a0: &a0 [%s]" % ", ".join(["lol"] * width)]
    for level in range(1, levels):
        lines.append("a%d: &a%d [%s]" % (level, level, ", ".join(["*a%d" % (level - 1)] * width)))
    return "\n".join(lines) + "\n"


def release_secret(payload, name="sh.helm.release.v1.web.v1", namespace="apps"):
    """A helm release Secret as the API returns it: data.release = base64(helm's base64(gzip(payload)))."""
    helm_encoded = base64.b64encode(gzip.compress(payload, 9))
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"owner": "helm", "name": "web", "version": "1"}},
            "data": {"release": base64.b64encode(helm_encoded).decode("ascii")}}


def chart_archive(path, members):
    """A chart .tgz holding ``{relative path: bytes}`` under ``demo/``."""
    with tarfile.open(str(path), "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo("demo/" + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return str(path)


def test_an_alias_bomb_is_refused_unexpanded_naming_the_input_and_the_limit():
    with pytest.raises(AicrError) as exc:
        deps.load(alias_bomb())
    msg = exc.value.msg
    assert "\n" not in msg and msg.startswith("a YAML document: refused, its aliases expand to ")
    assert "past the alias nodes limit of 100000 (raise it with the environment variable AICR_RUNTIME_MAX_ALIAS_NODES)" in msg


def test_every_yaml_entry_point_refuses_the_bomb():
    for read in (lambda text: list(deps.load_all(text)), deps.compose, lambda text: infer.load_values(text, "v.yaml")):
        with pytest.raises(AicrError) as exc:
            read(alias_bomb(6, 9))  # 531 441 nodes once expanded: the catalog value of issue 36
        assert "alias nodes limit" in exc.value.msg


def test_anchors_within_the_limits_still_load_and_recursion_is_left_to_the_readers():
    assert deps.load("a: &a {x: 1}\nb: [*a, *a]\n<<: *a\n") == {"a": {"x": 1}, "b": [{"x": 1}, {"x": 1}], "x": 1}
    loaded = deps.load("a: &a {self: [*a]}\n")  # values_schema turns this into a $ref; the loader does not refuse it
    assert loaded["a"]["self"][0] is loaded["a"]


def test_nesting_past_the_depth_limit_is_refused():
    with pytest.raises(AicrError) as exc:
        deps.load("[" * 300 + "]" * 300)
    assert exc.value.msg.startswith("a YAML document: refused, nesting deeper than 200 levels: past the depth limit of 200")
    with pytest.raises(AicrError):
        deps.load("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 260)) + " " * 260 + "c: 1\n")


def test_nesting_libyaml_cannot_compose_is_refused_before_it_overflows_the_c_stack(tmp_path):
    # 100 000 levels crash libyaml's composer (SIGSEGV, no message at all): run it in a child to see the one line
    script = ("from ansible_collections.aicr.runtime.plugins.module_utils._common import deps\n"
              "from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError\n"
              "try:\n    deps.load('[' * 100000 + ']' * 100000)\nexcept AicrError as exc:\n    print(exc.msg)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("a YAML document: refused, nesting deeper than 200 levels")


def test_limits_are_overridden_by_their_environment_variable_and_bad_values_refused(monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "10")
    with pytest.raises(AicrError) as exc:
        deps.load("[%s]" % ", ".join(["1"] * 20))
    assert "past the nodes limit of 10 (raise it with the environment variable AICR_RUNTIME_MAX_NODES)" in exc.value.msg
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "2000000")
    monkeypatch.setenv("AICR_RUNTIME_MAX_ALIAS_NODES", "1000000")
    assert len(deps.load(alias_bomb(6, 9))["a5"]) == 9
    monkeypatch.setenv("AICR_RUNTIME_MAX_DEPTH", "lots")
    with pytest.raises(AicrError) as exc:
        deps.load("a: 1")
    assert exc.value.msg == "environment variable AICR_RUNTIME_MAX_DEPTH: 'lots' is not allowed; use a positive integer (the depth limit)"


def test_input_bytes_are_refused_before_parsing(monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_INPUT_BYTES", str(MIB))
    with pytest.raises(AicrError) as exc:
        deps.load("a: '%s'\n" % ("x" * MIB))
    assert exc.value.msg.startswith("a YAML document: refused, %d bytes: past the input bytes limit of 1 MiB (raise it with" % (MIB + 6))


def test_a_gzip_bomb_release_secret_is_refused_naming_the_secret(monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_INPUT_BYTES", str(MIB))
    bomb = release_secret(b'{"manifest": "' + b"0" * (8 * MIB) + b'"}')
    with pytest.raises(AicrError) as exc:
        decode_release_secret(bomb)
    assert exc.value.msg.startswith("helm release Secret apps/sh.helm.release.v1.web.v1: refused, it decompresses to more than 1048576 bytes: "
                                    "past the input bytes limit of 1 MiB")
    # a release within the limit still decodes, and one that is not helm's format is still "no release"
    assert decode_release_secret(release_secret(json.dumps({"name": "web", "version": 1}).encode()))["version"] == 1
    assert decode_release_secret({"data": {"release": base64.b64encode(b"H4sInotgzip").decode()}}) is None


def test_a_huge_chart_member_is_refused_by_every_chart_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_INPUT_BYTES", str(MIB))
    archive = chart_archive(tmp_path / "demo-1.0.0.tgz", {"Chart.yaml": b"apiVersion: v2\nname: demo\nversion: 1.0.0\n",
                                                          "values.yaml": b"a: '" + b"0" * (2 * MIB) + b"'\n"})
    for read in (helm.chart_schema_and_defaults, sources.load_tgz):
        with pytest.raises(AicrError) as exc:
            read(archive)
        assert exc.value.msg.startswith("chart archive %s: refused, member demo/values.yaml has %d bytes: past the input bytes limit of 1 MiB"
                                        % (archive, 2 * MIB + 6))


def test_a_chart_archive_stream_past_its_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_MAX_ARCHIVE_BYTES", str(MIB))
    archive = chart_archive(tmp_path / "demo-1.0.0.tgz", {"Chart.yaml": b"apiVersion: v2\nname: demo\nversion: 1.0.0\n",
                                                          "templates/big.yaml": b"#" * (3 * MIB)})
    with pytest.raises(AicrError) as exc:
        helm.chart_schema_and_defaults(archive)
    assert "refused, its decompressed stream goes past 1048576 bytes: past the archive bytes limit of 1 MiB" in exc.value.msg
    small = chart_archive(tmp_path / "ok-1.0.0.tgz", {"Chart.yaml": b"apiVersion: v2\nname: demo\nversion: 1.0.0\n", "values.yaml": b"a: 1\n",
                                                      "values.schema.json": b'{"type": "object"}'})
    assert helm.chart_schema_and_defaults(small) == ({"type": "object"}, "a: 1\n")


def test_recipe_resolve_does_not_copy_past_the_node_limit(tmp_path, monkeypatch):
    big = dict(("key%d" % i, i) for i in range(150))  # about 300 nodes in each of two values files
    root = make_catalog(tmp_path / "catalog", files={"components/alpha/values.yaml": big, "components/beta/values.yaml": dict(big)})
    assert len(resolve_mod.resolve(root, {"nodes": 1}, cache_dir=str(tmp_path / "cache"), persist_cache=False)["components"]) == 2
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "500")  # each file passes, the result holding both does not
    with pytest.raises(AicrError) as exc:
        resolve_mod.resolve(root, {"nodes": 1}, cache_dir=str(tmp_path / "cache2"), persist_cache=False)
    assert exc.value.msg.startswith("recipe_resolve result: refused, more than 500 nodes: past the nodes limit of 500")


def test_json_readers_refuse_depth_and_nodes(monkeypatch):
    from ansible_collections.aicr.runtime.plugins.module_utils._stack.store import ConfigMapStore

    def stack_cm(spec):
        return {"metadata": {"name": "aicr-stack-gpu", "namespace": "aicr-system"}, "data": {"spec": spec}}

    with pytest.raises(AicrError) as exc:  # past Python's recursion limit: a RecursionError before
        ConfigMapStore.to_stack(stack_cm("[" * 5000 + "]" * 5000))
    assert exc.value.msg.startswith("stack ConfigMap aicr-system/aicr-stack-gpu spec: refused, nesting deeper than the JSON parser's recursion limit")
    with pytest.raises(AicrError) as exc:
        ConfigMapStore.to_stack(stack_cm('{"a": ' + "[" * 250 + "]" * 250 + "}"))
    assert "refused, nesting deeper than 200 levels: past the depth limit of 200" in exc.value.msg
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "100")
    with pytest.raises(AicrError) as exc:
        ConfigMapStore.to_stack(stack_cm(json.dumps({"values": list(range(200))})))
    assert "refused, more than 100 nodes: past the nodes limit of 100" in exc.value.msg


def test_early_start_s_chart_scan_is_bounded_too(tmp_path, monkeypatch):
    from ansible_collections.aicr.runtime.plugins.module_utils._release import gate
    members = {"Chart.yaml": b"apiVersion: v2\nname: demo\nversion: 1.0.0\n", "templates/cm.yaml": b"kind: ConfigMap\n"}
    small = chart_archive(tmp_path / "small-1.0.0.tgz", members)
    big = chart_archive(tmp_path / "big-1.0.0.tgz", dict(members, **{"files/blob.bin": b"\0" * (3 * MIB)}))
    monkeypatch.setenv("AICR_RUNTIME_MAX_ARCHIVE_BYTES", str(MIB))
    assert gate.chart_traits(small) is not None
    assert gate.chart_traits(big) is None  # past the archive limit: no early start (its helm starts at the gate)


def test_a_catalog_values_bomb_is_refused_naming_the_catalog_file(tmp_path):
    # issue 36: recipe_resolve copied a 531 441-node catalog value (six levels of nine aliases) into its result
    root = make_catalog(tmp_path / "catalog", files={"components/alpha/values.yaml": alias_bomb(6, 9)})
    with pytest.raises(AicrError) as exc:
        resolve_mod.resolve(root, {"nodes": 1}, cache_dir=str(tmp_path / "cache"), persist_cache=False)
    assert exc.value.msg.startswith("catalog file components/alpha/values.yaml: refused, its aliases expand to ")
