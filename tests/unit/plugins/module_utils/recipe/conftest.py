"""Fixtures for the recipe engine tests: the real AICR catalog from ../shared."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils.recipe import catalog as catalog_mod


@pytest.fixture(scope="session")
def aicr_catalog_dir(shared_dir):
    return shared_dir / "aicr" / "catalog"


@pytest.fixture(scope="session")
def aicr_conformance_dir(shared_dir):
    return shared_dir / "aicr" / "conformance"


@pytest.fixture(scope="session")
def aicr_catalog(aicr_catalog_dir):
    return catalog_mod.load_catalog(str(aicr_catalog_dir), persist=False)
