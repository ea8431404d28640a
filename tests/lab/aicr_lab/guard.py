"""Where the lab may not run: ``AICR_LAB_DISABLED`` names why (``tests/unit/conftest.py`` sets it for unit tests).

Every entry point that starts a server of the lab or runs a binary it installs or builds (the control plane, helm, the
OCI registry, ``aicr-lab build``) calls :func:`check` first, so a unit test that reaches for one fails at once, saying
what it tried and where such a test belongs, instead of working on a developer's machine and failing on a clean one.
"""

import os

ENV = "AICR_LAB_DISABLED"


class LabDisabled(RuntimeError):
    """The lab was asked for where it is disabled (``AICR_LAB_DISABLED`` is set)."""


def check(what):
    """Raise :class:`LabDisabled` if the lab is disabled here; ``what`` is what was asked for."""
    reason = os.environ.get(ENV)
    if reason:
        raise LabDisabled("%s: the lab is disabled here (%s=%s)" % (what, ENV, reason))
