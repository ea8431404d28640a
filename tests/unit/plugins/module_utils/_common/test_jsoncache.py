"""The cache files: a miss for anything unreadable, atomic writes, failures ignored."""

import os
import stat

from ansible_collections.aicr.runtime.plugins.module_utils._common import jsoncache


def test_round_trip_and_misses(tmp_path):
    path = str(tmp_path / "a" / "b" / "doc.json")
    assert jsoncache.load(path) is None
    assert jsoncache.store(path, {"x": [1, 2]}) is True
    assert jsoncache.load(path) == {"x": [1, 2]}
    assert jsoncache.store(path, '{"already": "text"}') is True
    assert jsoncache.load(path) == {"already": "text"}
    assert [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".cache-")] == [], "no staging file is left behind"
    (tmp_path / "broken.json").write_text("{half")
    assert jsoncache.load(str(tmp_path / "broken.json")) is None


def test_a_failed_write_is_reported_not_raised(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert jsoncache.store(str(blocker / "under-a-file.json"), {"x": 1}) is False
    assert jsoncache.store(str(tmp_path / "set.json"), {"x": {1, 2}}) is False  # not JSON-serialisable


def test_private_dir_problem_is_the_one_rule(tmp_path):
    assert jsoncache.private_dir_problem(str(tmp_path / "fresh")) is None
    assert stat.S_IMODE(os.stat(str(tmp_path / "fresh")).st_mode) == 0o700
    os.chmod(str(tmp_path / "fresh"), 0o720)
    assert jsoncache.private_dir_problem(str(tmp_path / "fresh")) == "is writable by group or others (mode 0720)"
    assert jsoncache.private_dir(str(tmp_path / "fresh")) is False
