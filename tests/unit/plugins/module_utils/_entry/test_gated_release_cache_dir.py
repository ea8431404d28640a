"""gated_release's render and helm-version cache follows the catalog's rule: only a directory this user alone can write."""

import os

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry import gated_release_inputs as inputs


def test_a_given_cache_dir_writable_by_others_is_refused_naming_it(tmp_path):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(AicrError) as failure:
        inputs._private_cache_dir({"cache_dir": str(shared)})  # pylint: disable=protected-access
    assert failure.value.msg.startswith("cache_dir: %s is writable by group or others (mode 0777); allowed:" % shared)
    assert failure.value.details["field"] == "cache_dir"


def test_a_given_symlinked_cache_dir_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(AicrError) as failure:
        inputs._private_cache_dir({"cache_dir": str(link)})  # pylint: disable=protected-access
    assert "is a symlink" in failure.value.msg


def test_a_missing_cache_dir_is_created_private(tmp_path):
    wanted = tmp_path / "new" / "cache"
    assert inputs._private_cache_dir({"cache_dir": str(wanted)}) == str(wanted)  # pylint: disable=protected-access
    assert oct(os.stat(str(wanted)).st_mode & 0o777) == oct(0o700)


def test_the_default_cache_dir_is_skipped_when_it_is_not_private(tmp_path, monkeypatch):
    default = tmp_path / "default-cache"
    default.mkdir()
    os.chmod(str(default), 0o777)
    monkeypatch.delenv("AICR_RUNTIME_CACHE_DIR", raising=False)
    # the built-in default (not given by the user) is not refused, just not used
    monkeypatch.setattr(inputs.jsoncache, "default_cache_dir", lambda: str(default))
    assert inputs._private_cache_dir({"cache_dir": None}) is None  # pylint: disable=protected-access


def test_a_cache_dir_given_by_the_environment_is_refused_too(tmp_path, monkeypatch):
    shared = tmp_path / "env-cache"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    monkeypatch.setenv("AICR_RUNTIME_CACHE_DIR", str(shared))
    with pytest.raises(AicrError):
        inputs._private_cache_dir({"cache_dir": None})  # pylint: disable=protected-access


def test_the_chart_cache_lives_in_the_private_cache_dir_unless_switched_off(tmp_path):
    base = tmp_path / "cache"
    assert inputs.chart_cache_dir({"cache_dir": str(base)}) == os.path.join(str(base), "charts", "sha256")
    assert inputs.chart_cache_dir({"cache_dir": str(base), "chart_cache": False}) is None


def test_the_chart_cache_checks_its_directory_even_without_the_render_cache(tmp_path):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    params = {"cache_dir": str(shared), "render_cache": False, "stack": "s"}
    with pytest.raises(AicrError, match="cache_dir: .* is writable by group or others"):
        inputs.options_from(params, {}, False, False)
    inputs.options_from(dict(params, chart_cache=False), {}, False, False)  # neither cache: the directory is not used


def test_a_bad_chart_cache_bound_is_refused_in_the_validation_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("AICR_RUNTIME_CHART_CACHE_MAX_MB", "-5")
    with pytest.raises(AicrError, match="AICR_RUNTIME_CHART_CACHE_MAX_MB: '-5' is not allowed"):
        inputs.options_from({"cache_dir": str(tmp_path / "c"), "stack": "s"}, {}, False, False)
