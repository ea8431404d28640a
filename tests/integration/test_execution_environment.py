"""execution-environment.yml gives ansible-builder a complete build context.

Building the image needs a container engine, which this machine does not have; what
can be checked here is that `ansible-builder create` accepts the definition and writes
a context holding the collection artifact, the verified helm binary, the Python and
system requirements, and a Containerfile that installs them.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ansible_builder_create_writes_a_complete_context(installed_collection, tmp_path):
    tarballs = sorted((REPO / ".build" / "dist").glob("aicr-runtime-*.tar.gz"))
    assert tarballs, "the collection artifact is built by the installed_collection fixture"
    work = tmp_path / "ee"
    stage = work / ".build" / "ee-stage"
    stage.mkdir(parents=True)
    shutil.copy(str(tarballs[-1]), str(stage / "aicr-runtime.tar.gz"))
    shutil.copy(str(BIN / "helm"), str(stage / "helm"))
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(str(REPO / name), str(work / name))

    result = subprocess.run(
        [str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", "context", "--output-filename", "Containerfile"],
        cwd=str(work), capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

    context = work / "context"
    containerfile = (context / "Containerfile").read_text()
    assert (context / "_build" / "collections" / "aicr-runtime.tar.gz").is_file()
    assert (context / "_build" / "bin" / "helm").is_file()
    assert "kubernetes==" in (context / "_build" / "requirements.txt").read_text()
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy["collections"] == [{"name": "/build/collections/aicr-runtime.tar.gz", "type": "file"}]
    assert "ansible-galaxy collection install" in containerfile
    assert "COPY _build/bin/helm /usr/local/bin/helm" in containerfile
    assert "ansible-core==" in containerfile


def test_collection_declares_its_execution_environment_dependencies():
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    for name in meta["dependencies"].values():
        assert (REPO / name).is_file()
