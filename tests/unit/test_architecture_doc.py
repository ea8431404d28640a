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
