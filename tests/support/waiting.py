"""The one wait helper of the test suites: poll a condition, never sleep for a fixed time.

``wait_for(predicate, timeout, what)`` calls ``predicate()`` until it returns something truthy (returned) and fails
with an AssertionError naming ``what`` (and the last value) once ``timeout`` seconds have passed. ``interval`` is the
pause between polls only, never a wait for something to happen. ``wait_until`` is the same function under the name
``lab_support`` and the fidelity clients exported.
"""

import time

INTERVAL = 0.05


def wait_for(predicate, timeout, what, interval=INTERVAL):
    """``predicate()``'s first truthy value, polled every ``interval`` s; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, value))
        time.sleep(interval)


wait_until = wait_for
