"""Galaxy import checks on the built collection artifact.

1. The artifact itself: ``ansible-galaxy collection build`` of the repository (what ``make collection``
   runs), then MANIFEST.json / FILES.json integrity (every member listed with its sha256, nothing listed
   missing, the FILES.json checksum in MANIFEST.json), no build or test debris inside, and
   ``ansible-galaxy collection install`` + ``ansible-galaxy collection verify --offline`` of the tarball.
2. ``ansible-doc`` of every module, lookup, filter and role from the *installed artifact*.
3. The real ``galaxy-importer`` (the code Galaxy and Automation Hub run on upload), offline and without a
   container: ``run_ansible_test = False``, ansible-doc and ansible-lint on. It runs from its own virtualenv
   (``.build/venv-galaxy``: its pins differ from the dev ones); the test is skipped when that venv is missing
   unless ``AICR_REQUIRE_GALAXY_IMPORTER=1``.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY_VENV = Path(os.environ.get("AICR_GALAXY_VENV", str(REPO / ".build" / "venv-galaxy")))
VERSION = re.search(r"^version:\s*(\S+)", (REPO / "galaxy.yml").read_text(encoding="utf-8"), re.M).group(1)
FORBIDDEN = re.compile(r"(^|/)(\.git|\.build|\.venv[^/]*|__pycache__|\.pytest_cache|\.tox|[^/]*\.egg-info|\.molecule|\.cache)(/|$)|\.pyc$")


def run(argv, env=None, timeout=600):
    out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, timeout=timeout, env=env)
    assert out.returncode == 0, "%s failed (rc %d):\n%s\n%s" % (" ".join(str(a) for a in argv), out.returncode, out.stdout[-4000:], out.stderr[-4000:])
    return out.stdout


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    run([BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", dist, REPO])
    tarball = dist / ("aicr-runtime-%s.tar.gz" % VERSION)
    assert tarball.is_file(), sorted(os.listdir(str(dist)))
    return tarball


@pytest.fixture(scope="module")
def installed(artifact, tmp_path_factory):
    root = tmp_path_factory.mktemp("installed")
    run([BIN / "ansible-galaxy", "collection", "install", "--force", "-p", root, artifact])
    return root


def ansible_env(collections_root):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    return env


def test_manifest_and_files_json_match_the_tarball(artifact):
    with tarfile.open(str(artifact), "r:gz") as tar:
        members = dict((m.name, m) for m in tar.getmembers())
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        files_raw = tar.extractfile("FILES.json").read()
        files = json.loads(files_raw)
        info = manifest["collection_info"]
        assert (info["namespace"], info["name"], info["version"]) == ("aicr", "runtime", VERSION)
        assert info["license"] or info["license_file"]
        assert info["readme"] == "README.md" and "README.md" in members
        assert manifest["file_manifest_file"]["chksum_sha256"] == hashlib.sha256(files_raw).hexdigest()
        listed = {}
        for entry in files["files"]:
            if entry["name"] == ".":
                continue
            listed[entry["name"]] = entry
            assert entry["name"] in members, "FILES.json lists %s, the tarball does not have it" % entry["name"]
            member = members[entry["name"]]
            if entry["ftype"] == "file":
                assert member.isfile(), entry["name"]
                digest = hashlib.sha256(tar.extractfile(member).read()).hexdigest()
                assert digest == entry["chksum_sha256"], "checksum of %s differs from FILES.json" % entry["name"]
            else:
                assert member.isdir(), entry["name"]
        unlisted = sorted(set(members) - set(listed) - {"MANIFEST.json", "FILES.json"})
        assert not unlisted, "tarball members missing from FILES.json: %s" % unlisted
    for required in ("meta/runtime.yml", "plugins/modules/recipe_resolve.py", "roles/cluster_runtime/meta/argument_specs.yml",
                     "playbooks/site.yml", "docs/index.md", "changelogs/changelog.yaml"):
        assert required in members, required


def test_no_build_or_test_debris_in_the_artifact(artifact):
    """Virtualenvs, caches, egg-info, .git and .build never ship (galaxy.yml build_ignore, .gitignore)."""
    with tarfile.open(str(artifact), "r:gz") as tar:
        names = tar.getnames()
    debris = sorted(n for n in names if FORBIDDEN.search(n))
    assert not debris, "build/test debris in the artifact: %s" % debris[:20]


def test_installed_artifact_verifies_offline(installed):
    out = run([BIN / "ansible-galaxy", "collection", "verify", "--offline", "-p", installed, "aicr.runtime"], env=ansible_env(installed))
    assert "Successfully verified that checksums for 'aicr.runtime:%s' are internally consistent with its manifest." % VERSION in out, out


def _plugins(directory):
    return sorted(p.stem for p in (REPO / "plugins" / directory).glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("kind, directory", [("module", "modules"), ("lookup", "lookup"), ("filter", "filter"), ("role", None)])
def test_ansible_doc_of_every_plugin_from_the_artifact(installed, kind, directory):
    env = ansible_env(installed)
    listed = json.loads(run([BIN / "ansible-doc", "-t", kind, "-l", "aicr.runtime", "--json"], env=env))
    names = sorted(n.rsplit(".", 1)[1] for n in listed if n.startswith("aicr.runtime."))
    expected = _plugins(directory) if directory else sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta").is_dir())
    if kind == "filter":
        # one file may hold several filters; every file contributes at least its documented name
        assert set(names) >= set(expected), (names, expected)
    else:
        assert names == expected
    docs = json.loads(run([BIN / "ansible-doc", "-t", kind, "--json"] + ["aicr.runtime.%s" % n for n in names], env=env))
    for name in names:
        data = docs["aicr.runtime.%s" % name]
        if kind == "role":
            main = data["entry_points"]["main"]
            assert main.get("short_description") and main.get("options"), name
            continue
        doc = data["doc"]
        assert doc.get("short_description") and doc.get("description"), name
        assert str(installed) in doc["filename"], "%s documented from %s, not from the artifact" % (name, doc["filename"])
        if kind == "module":
            assert data.get("examples") and data.get("return"), "%s lacks EXAMPLES or RETURN" % name
            assert set(doc.get("attributes", {})) >= {"check_mode", "diff_mode", "idempotent"}, name


def _importer_python():
    python = GALAXY_VENV / "bin" / "python"
    if python.exists():
        return python
    if os.environ.get("AICR_REQUIRE_GALAXY_IMPORTER") == "1":
        pytest.fail("galaxy-importer venv %s is missing (make galaxy-import creates it)" % GALAXY_VENV)
    pytest.skip("galaxy-importer venv %s is missing (make galaxy-import creates it)" % GALAXY_VENV)
    return None


def test_galaxy_importer_accepts_the_artifact(artifact, tmp_path):
    python = _importer_python()
    config = tmp_path / "galaxy-importer.cfg"
    config.write_text("\n".join([
        "[galaxy-importer]",
        "LOG_LEVEL_MAIN = INFO",
        "RUN_ANSIBLE_TEST = False",
        "RUN_ANSIBLE_DOC = True",
        "RUN_ANSIBLE_LINT = True",
        "OFFLINE_ANSIBLE_LINT = True",
        "RUN_FLAKE8 = False",
        "CHECK_CHANGELOG = True",
        "ANSIBLE_LOCAL_TMP = %s" % (tmp_path / "ansible-tmp"),
        "TMP_ROOT_DIR = %s" % tmp_path,
        "",
    ]), encoding="utf-8")
    env = dict(os.environ, GALAXY_IMPORTER_CONFIG=str(config), PATH="%s:%s" % (python.parent, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1")
    for key in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_CONFIG", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(key, None)
    out = subprocess.run([str(python), "-m", "galaxy_importer.main", "--print-result", str(artifact)], capture_output=True, text=True,
                         check=False, timeout=900, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    log, _sep, body = out.stdout.partition("\n{")
    assert "Importer processing completed successfully" in log, log[-3000:]
    problems = [line for line in log.splitlines() if re.search(r"\b(WARNING|ERROR)\b", line)]
    assert not problems, "galaxy-importer reported: %s" % problems
    result = json.loads("{" + body)
    assert (result["metadata"]["namespace"], result["metadata"]["name"], result["metadata"]["version"]) == ("aicr", "runtime", VERSION)
    contents = set((c["content_type"], c["name"]) for c in result["contents"])
    expected = set(("module", n) for n in _plugins("modules")) | set(("lookup", n) for n in _plugins("lookup"))
    expected |= set(("role", p.name) for p in (REPO / "roles").iterdir() if (p / "meta").is_dir())
    expected |= set(("playbook", p.name) for p in (REPO / "playbooks").glob("*.yml"))
    assert expected <= contents, "missing from the import: %s" % sorted(expected - contents)
    documented = set((c["content_type"], c["content_name"]) for c in result["docs_blob"]["contents"] if c.get("doc_strings"))
    undocumented = sorted(n for kind, n in expected if kind in ("module", "lookup") and (kind, n) not in documented)
    assert not undocumented, "galaxy-importer found no doc strings for %s" % undocumented
