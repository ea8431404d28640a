"""Catalog versions of the example catalog for upgrade plans: a copy, then one upstream change.

Shared by the unit tests, the playbook test and the bench: ``v1`` is the example catalog as it is; each other version
changes one thing of it, the way a catalog release would.
"""

import shutil
from pathlib import Path

EXAMPLE_CATALOG = Path(__file__).resolve().parents[3] / "examples" / "catalog"

# version -> (file relative to the catalog, old text, new text)
CHANGES = {
    # a chart minor bump: example-crds 0.1.0 -> 0.2.0
    "minor": ("registry.yaml", 'defaultChart: examples/example-crds\n      defaultVersion: "0.1.0"',
              'defaultChart: examples/example-crds\n      defaultVersion: "0.2.0"'),
    # a values key removed upstream: example-operator widget.color
    "removed-key": ("components/example-operator/values.yaml", "  color: green\n", ""),
    # a changed health check: example-operator's assert timeout
    "health": ("checks/example-operator/health-check.yaml", "assert: 2m", "assert: 3m"),
}

# the cluster: the kind recipe, overriding example-operator widget.color (and example-config settings.logLevel, which no
# version changes)
CURRENT = {"name": "lab-1", "criteria": {"service": "kind"},
           "component_overrides": {"example-operator": {"values": {"widget": {"color": "blue"}}},
                                   "example-config": {"values": {"settings": {"logLevel": "debug"}}}}}


def catalog_version(directory, version, changes=None):
    """A copy of the example catalog in ``directory/<version>`` with the changes ``changes`` names (default: the one
    ``version`` names; ``v1``: none)."""
    target = Path(str(directory)) / version
    if target.exists():
        shutil.rmtree(str(target))
    shutil.copytree(str(EXAMPLE_CATALOG), str(target))
    for change in changes if changes is not None else ([] if version == "v1" else [version]):
        relpath, old, new = CHANGES[change]
        path = target / relpath
        text = path.read_text()
        assert old in text, "%s no longer holds %r: update upgrade_helpers.CHANGES" % (relpath, old)
        path.write_text(text.replace(old, new, 1))
    return str(target)


EXAMPLE_CHARTS = EXAMPLE_CATALOG.parent / "charts"
# the catalog's chart repository (registry.yaml), mirrored to a local directory by ``chart_versions``
EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
# CRD edits of examples/charts/example-crds: a field added (compatible), a field removed (breaking)
CRD_EDITS = {
    "add-field": ("                owner:\n",
                  "                label:\n                  description: A free label.\n                  type: string\n                owner:\n"),
    "remove-field": ("                owner:\n                  description: Who asked for the widget.\n"
                     "                  type: string\n                  nullable: true\n", ""),
}


def chart_versions(directory, versions):
    """Local versions of examples/charts/example-crds as the catalog's repository mirror sees them:
    ``directory/examples/example-crds-<version>/`` (the chart ``examples/example-crds`` of the repository
    ``.../examples``) for each ``{version: crd edit or None}``. Returns the mirror mapping."""
    base = Path(str(directory)) / "examples"
    for version, edit in versions.items():
        target = base / ("example-crds-%s" % version)
        if target.exists():
            shutil.rmtree(str(target))
        shutil.copytree(str(EXAMPLE_CHARTS / "example-crds"), str(target))
        chart = target / "Chart.yaml"
        chart.write_text(chart.read_text().replace("version: 0.1.0", "version: %s" % version, 1))
        if edit:
            crd = target / "crds" / "widgets.example.aicr.io.yaml"
            old, new = CRD_EDITS[edit]
            text = crd.read_text()
            assert old in text, "the example CRD no longer holds %r: update upgrade_helpers.CRD_EDITS" % old
            crd.write_text(text.replace(old, new, 1))
    return {EXAMPLE_REPOSITORY: str(base)}
