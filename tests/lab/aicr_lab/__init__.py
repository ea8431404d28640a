"""Local test doubles for aicr.runtime (tests only; never shipped in the collection)."""
