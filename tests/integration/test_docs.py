"""The docs build check: generated reference up to date, every relative link resolves, every plugin and role
has a page, the landing page reaches every page, troubleshooting covers every module.

The reference pages (docs/reference/) are rendered by scripts/gen-docs from the plugins' DOCUMENTATION /
EXAMPLES / RETURN and the roles' meta/argument_specs.yml through ansible-doc; a plugin change without
``scripts/gen-docs`` fails here.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
LINK = re.compile(r"(?<!\!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s]+)\)")
REFERENCE_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*(?P<target>\S+)", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def markdown_files():
    return sorted(DOCS.rglob("*.md")) + [REPO / "README.md"] + sorted((REPO / "roles").glob("*/README.md"))


def prose(path):
    """The text of a Markdown file without fenced code blocks and inline code (links there are examples)."""
    text = path.read_text(encoding="utf-8")
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, counts = set(), {}
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = counts.get(base, 0)
            counts[base] = count + 1
            found.add(base if count == 0 else "%s-%d" % (base, count))
    return found


def links(path):
    text = prose(path)
    targets = [m.group("target") for m in LINK.finditer(text)] + [m.group("target") for m in IMAGE.finditer(text)]
    targets += [m.group("target") for m in REFERENCE_DEF.finditer(text)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def test_generated_reference_is_up_to_date():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "gen-docs"), "--check"], capture_output=True, text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    broken = []
    for target in links(path):
        file_part, _sep, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append("%s (no such file)" % target)
            continue
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append("%s (no heading #%s in %s)" % (target, anchor, resolved.relative_to(REPO)))
        if resolved != path and REPO not in resolved.parents:
            broken.append("%s (outside the repository)" % target)
    assert not broken, "broken links in %s: %s" % (path.relative_to(REPO), broken)


def plugin_names(directory):
    return sorted(p.stem for p in (REPO / "plugins" / directory).glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("kind, names", [
    ("modules", plugin_names("modules")),
    ("lookups", plugin_names("lookup")),
    ("roles", sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())),
])
def test_every_module_lookup_and_role_has_a_page(kind, names):
    assert names
    index = (DOCS / "reference" / "index.md").read_text(encoding="utf-8")
    missing = [n for n in names if not (DOCS / "reference" / kind / ("%s.md" % n)).is_file()]
    unlisted = [n for n in names if "(%s/%s.md)" % (kind, n) not in index]
    assert not missing and not unlisted, "no reference page: %s; not in docs/reference/index.md: %s" % (missing, unlisted)


def test_filters_have_pages():
    index = (DOCS / "reference" / "index.md").read_text(encoding="utf-8")
    for path in (REPO / "plugins" / "filter").glob("*.py"):
        # a filter plugin file may define several filters; each documented one gets a page named after it
        documented = re.findall(r"^\s*name:\s*(\w+)\s*$", path.read_text(encoding="utf-8"), re.M)
        for name in documented or [path.stem]:
            assert (DOCS / "reference" / "filters" / ("%s.md" % name)).is_file(), name
            assert "(filters/%s.md)" % name in index


def _linked_pages(path):
    return set((path.parent / t.partition("#")[0]).resolve() for t in links(path) if t.partition("#")[0].endswith(".md"))


def test_every_page_is_reachable_from_the_landing_page():
    """docs/index.md links, directly or through pages it links, every page in docs/ (dev notes included)."""
    seen, todo = set(), [(DOCS / "index.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen or not page.is_file():
            continue
        seen.add(page)
        todo.extend(p for p in _linked_pages(page) if DOCS in p.parents)
    unreachable = sorted(str(p.relative_to(REPO)) for p in DOCS.rglob("*.md") if p.resolve() not in seen)
    assert not unreachable, "not reachable from docs/index.md: %s" % unreachable


def test_readme_points_to_the_docs_index():
    assert (DOCS / "index.md").resolve() in _linked_pages(REPO / "README.md"), "README.md does not link docs/index.md"


def test_troubleshooting_has_a_section_per_module():
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^##\s+`?([\w.]+)`?", text, re.M))
    missing = [m for m in plugin_names("modules") if m not in headings and "aicr.runtime.%s" % m not in headings]
    assert not missing, "docs/troubleshooting.md has no section for: %s" % missing


PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrfx]")


def _literal(node):
    """The format string of an error message built from literals with % and +; None when it is computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _literal(node.left)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None or right is None else left + right
    return None


def raised_messages():
    """(file:line, format string) of every ``AicrError(...)`` and ``fail_json(msg=...)`` under plugins/ with a literal message."""
    found = []
    for path in sorted((REPO / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in ("AicrError", "fail_json"):
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "msg"), None)
            text = _literal(arg) if arg is not None else None
            if text:
                found.append(("%s:%d" % (path.relative_to(REPO), node.lineno), text))
    return found


def test_troubleshooting_explains_every_error_message():
    """Each message's longest literal part (between its %-placeholders) appears in docs/troubleshooting.md."""
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    messages = raised_messages()
    assert len(messages) > 200
    missing = ["%s %r" % (where, fmt) for where, fmt in messages if max(PLACEHOLDER.split(fmt), key=len).strip() not in text]
    assert not missing, "error messages not explained in docs/troubleshooting.md:\n" + "\n".join(missing)


TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)


def tutorial_script(path):
    """The tutorial's ```bash blocks as one script, run from the repository root; `make ...` set-up lines are
    skipped (the suite already built the collection and installed helm)."""
    blocks = BASH_BLOCK.findall(path.read_text(encoding="utf-8"))
    body = "\n".join(blocks)
    body = re.sub(r"^make [^\n]*$", "true  # (make: done by the suite)", body, flags=re.M)
    return "set -euo pipefail\n" + body


@pytest.mark.helm
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_commands_work_against_the_lab(path):
    """Every command of every tutorial runs, in order, against a fresh lab, and succeeds."""
    if not (Path(sys.executable).parent / "helm").exists():
        pytest.skip("helm not installed (make helm)")
    script = tutorial_script(path)
    assert "aicr-lab up" in script or "ansible-runner" in script, "a tutorial starts the lab or runs a job"
    lab_dirs = re.findall(r'LAB="\$PWD/([^"]+)"', script)
    try:
        out = subprocess.run(["bash", "-c", script], cwd=str(REPO), capture_output=True, text=True, check=False, timeout=900)
        assert out.returncode == 0, "%s failed (rc %d):\n%s\n%s" % (path.name, out.returncode, out.stdout[-6000:], out.stderr[-4000:])
    finally:
        for lab in lab_dirs:
            subprocess.run([str(Path(sys.executable).parent / "aicr-lab"), "down", "--dir", str(REPO / lab)], capture_output=True, check=False)
