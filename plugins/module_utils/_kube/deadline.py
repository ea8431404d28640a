# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The deadlines cluster requests meet (``_kube.client``): every request is given at most what is left of the one that
governs it, its connection included.

- :class:`Deadline`: a moment and the option that sets it (``overall_timeout (30s)``), named in the message of a request
  it cut short;
- :func:`retry_window`: this thread's deadline for the work in hand (a component's ``timeout``, a readiness wait), a
  stack per thread, the innermost counting; ``detached`` for work that has its own deadline even after the run's (a Lease
  renewal; :func:`bookkeeping`: recording what the run did, releasing its Lease, removing what it created for itself);
- :func:`governing`: what a request meets - the innermost window and the client's own deadline (a whole run's),
  whichever comes first; a detached window alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import threading
import time


class Deadline(object):
    """A moment (``time.monotonic``) a piece of work must be done by, and what sets it (``overall_timeout (30s)``), for
    the message of a request that could not be answered in time."""

    def __init__(self, seconds, name):
        self.name = name
        self.at = time.monotonic() + max(0.0, float(seconds))

    def left(self):
        return self.at - time.monotonic()

    def __str__(self):
        return self.name


def labelled(option, seconds):
    """``overall_timeout (30s)``: a deadline's name, the option that sets it and its value."""
    return "%s (%ss)" % (option, ("%.1f" % float(seconds)).rstrip("0").rstrip("."))


_window = threading.local()


@contextlib.contextmanager
def retry_window(seconds, name=None, detached=False):
    """Within it, this thread's requests (any client) are bounded by, and those that may be retried are retried until,
    ``seconds`` from now: the deadline of the work they are part of bounds the retries, not a count. The innermost window
    counts, together with the client's own deadline (whichever comes first) unless ``detached`` (work that must be done
    even after that deadline: it has its own; a window inside it is detached too). ``name`` (the option that sets it:
    ``timeout (600s)``) defaults to the enclosing window's."""
    stack = getattr(_window, "stack", None)
    if stack is None:
        stack = _window.stack = []
    name = name or (str(stack[-1][0]) if stack else labelled("the wait", seconds))
    stack.append((Deadline(seconds, name), detached or bool(stack and stack[-1][1])))
    try:
        yield
    finally:
        stack.pop()


BOOKKEEPING_SECONDS = 15.0  # what a run's bookkeeping after its deadline is given, each step: its record, its Lease's release


def bookkeeping(what):
    """A :func:`retry_window` for the bookkeeping a run does even after its deadline has passed (``what``: recording what it
    did, releasing its Lease, removing what it created only for itself): :data:`BOOKKEEPING_SECONDS`, detached."""
    return retry_window(BOOKKEEPING_SECONDS, labelled(what, BOOKKEEPING_SECONDS), detached=True)


def governing(own):
    """The deadline a request of this thread must meet: its innermost window and the client's ``own`` (whichever comes
    first; a detached window alone), or None."""
    stack = getattr(_window, "stack", None)
    window, detached = stack[-1] if stack else (None, False)
    if detached or own is None:
        return window
    if window is None:
        return own
    return window if window.at <= own.at else own
