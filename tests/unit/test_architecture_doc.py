"""docs/architecture.md names every engine package and every file in it (issue 37: its table had left out 11 files).

Each package of ``plugins/module_utils`` has a row of the package table (``| `_<package>/` | ... |``) and each of its
Python files is named in that row as `` `<file>` `` (generated files by their pattern: ``k8sdefs_<minor>``)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULE_UTILS = REPO / "plugins" / "module_utils"
ROW = re.compile(r"^\| `(_[a-z]+)/` \| (.*) \|$", re.M)
GENERATED = {re.compile(r"^k8sdefs_\d+_\d+$"): "k8sdefs_<minor>"}


def rows():
    """{package: the names its row of the table puts in backquotes}."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return dict((package, set(re.findall(r"`([^`]+)`", body))) for package, body in ROW.findall(text))


def named_as(stem):
    for pattern, name in GENERATED.items():
        if pattern.match(stem):
            return name
    return stem


def test_every_package_and_file_is_in_the_architecture_table():
    table = rows()
    missing = []
    for package in sorted(p for p in MODULE_UTILS.iterdir() if p.is_dir() and p.name.startswith("_")):
        if package.name not in table:
            missing.append("%s/ has no row" % package.name)
            continue
        for path in sorted(package.glob("*.py")):
            if path.stem != "__init__" and named_as(path.stem) not in table[package.name]:
                missing.append("%s/%s is not named in its row" % (package.name, path.name))
    assert not missing, "docs/architecture.md, the package table:\n" + "\n".join(missing)


PACKAGE_PATH = re.compile(r"`((?:plugins/module_utils/)?_?(?:common|kube|helm|recipe|schema|stack|release|fabric|entry)/[A-Za-z0-9_]+\.py)")


def test_every_engine_file_a_doc_names_exists():
    """Docs name engine files by their package path (``_stack/crd.py``); a moved or renamed file, or a path without the
    package's ``_`` (docs/clusterstack.md had six), fails here rather than misleading a reader."""
    stale = []
    for doc in sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for path in PACKAGE_PATH.findall(line):
                relative = path[len("plugins/module_utils/"):] if path.startswith("plugins/") else path
                if not (MODULE_UTILS / relative).is_file():
                    stale.append("%s:%d: %s" % (doc.relative_to(REPO), number, path))
    assert not stale, "docs name engine files that do not exist:\n" + "\n".join(stale)
