"""The collection's unit tests: fixtures from ``tests/support/plugin_fixtures.py`` (shared with the integration tests);
the helper modules next to this file (``recipe_helpers``, ``schema_helpers``, ``release_helpers``, ``upgrade_helpers``)
importable from every unit test directory."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from plugin_fixtures import *  # noqa: E402,F401,F403  pylint: disable=wrong-import-position,import-error,wildcard-import,unused-wildcard-import
