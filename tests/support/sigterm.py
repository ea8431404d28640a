"""A real SIGTERM (AWX's cancel) to this test process, shared by the unit and integration halves of the cancel tests.

``fresh_cancel_state``: import it into a test module and it resets ``_common.cancel`` around each of its tests (autouse).
"""

import os
import signal
import time

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel


@pytest.fixture(autouse=True)
def fresh_cancel_state():
    cancel.reset()
    yield
    cancel.reset()


def sigterm_self():
    """SIGTERM to this process from a machine thread; returns once the main thread's handler has seen it (Python runs
    signal handlers in the main thread, a moment later: the thread sending it waits for that, as a real signal's
    arrival precedes whatever the threads do next)."""
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not cancel.requested():
        assert time.monotonic() < deadline, "the SIGTERM handler did not run"
        time.sleep(0.001)
