# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""SIGTERM (AWX's cancel, ``ansible-playbook`` stopped) runs the same cleanup as an error.

:func:`sigterm_cancels` (used by ``_entry.module.call_engine`` around every engine call) turns SIGTERM into
:class:`Cancelled` raised in the main thread, after it has

- marked the process cancelled (:func:`requested`; :func:`check` raises in any thread: the Lease-guarded cluster
  client and helm runner call it, so worker threads stop at their next cluster call),
- run the registered hooks (:func:`on_cancel`: e.g. helm children terminated),
  among them the blocking reads in progress (:func:`interruptible`: a readiness watch, its worker wakes at once),
- ended the pauses between a wait's polls (:func:`pause`).

The exception then unwinds the engine like any error: ``finally`` blocks remove temp files and helm homes and
release the Lease (only this run's own). What was done before is recorded with :func:`note`, the cleanup with
:func:`cleaned`, and both are said in the message. A second SIGTERM while cleaning up is ignored (the hooks run again, nothing is raised).

A note is a change (a release installed, a device attached, a request sent whose outcome is open): the cancelled task
says ``changed`` when anything was noted. An engine whose result lists its changes (fabric_device's ``attached``,
``actions``, ``pending``; gated_release's ``actions``) registers with :func:`report` how to read them so far: the
cancelled task's result carries them too (:func:`partial_result`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import signal
import threading

_event = threading.Event()
# re-entrant: the signal handler runs in the main thread, which may hold it (note(), on_cancel()) at that moment
_lock = threading.RLock()
_hooks = []
_notes = []
_cleanup = []
_raised = []
_reports = []


class Cancelled(BaseException):
    """The run was cancelled (SIGTERM); raised in the main thread, and by :func:`check` in workers.

    A ``BaseException``, as ``KeyboardInterrupt`` is: no ``except Exception`` (nor ``except AicrError``) of an engine
    swallows it on its way to ``call_engine``; ``finally`` blocks run as usual.
    """

    def __init__(self, msg, **details):
        super(Cancelled, self).__init__(msg)
        self.msg = msg
        self.details = details


def requested():
    """True once SIGTERM arrived."""
    return _event.is_set()


def check(what=None):
    """Raise :class:`Cancelled` once SIGTERM arrived (``what``: what is not started)."""
    if _event.is_set():
        raise Cancelled("cancelled (SIGTERM)%s" % ((": " + what + " not started") if what else ""), cancelled=True)


def pause(seconds):
    """Sleep ``seconds`` - a wait's poll interval - or less: SIGTERM ends it at once (the caller's next :func:`check`
    then stops it). The default ``sleep`` of the engines' waits."""
    _event.wait(max(0.0, seconds))


def on_cancel(hook):
    """Run ``hook()`` when SIGTERM arrives (from the signal handler, in the main thread); once per hook."""
    with _lock:
        if hook not in _hooks:
            _hooks.append(hook)


@contextlib.contextmanager
def interruptible(interrupt):
    """While inside, SIGTERM calls ``interrupt()`` (from the signal handler): a thread blocked in a long read - a watch -
    wakes at once and stops at its next :func:`check`, rather than when the read would have ended. Raises
    :class:`Cancelled` on entry when SIGTERM already arrived."""
    def hook():  # a hook of its own (not ``interrupt`` itself): two reads never share one
        interrupt()
        return []

    on_cancel(hook)
    try:
        check()
        yield
    finally:
        with _lock:
            if hook in _hooks:
                _hooks.remove(hook)


def note(text):
    """Record something done (a release installed...), for the cancellation message."""
    with _lock:
        if len(_notes) < 50:
            _notes.append(text)


def notes():
    with _lock:
        return list(_notes)


def report(provider):
    """Register ``provider()``: what the engine call did so far, in the shape of its result (``changed``, ``actions``,
    ``pending``...), for the result of a cancelled task (:func:`partial_result`)."""
    with _lock:
        if provider not in _reports:
            _reports.append(provider)


def partial_result():
    """What the registered providers say was done so far, merged in registration order ({} when none registered; a
    provider that fails is left out - the notes still say what was done)."""
    with _lock:
        providers = list(_reports)
    merged = {}
    for provider in providers:
        try:
            merged.update(provider() or {})
        except Exception:  # pylint: disable=broad-except  # the cancelled result is reported whatever one provider does
            pass
    return merged


def run_hooks():
    with _lock:
        hooks = list(_hooks)
    stopped = []
    for hook in hooks:
        try:
            stopped.extend(hook() or [])
        except Exception:  # pylint: disable=broad-except  # cleanup goes on whatever one hook does
            pass
    return stopped


def reset():
    """Forget everything (tests; a module process runs one engine call)."""
    _event.clear()
    with _lock:
        del _hooks[:]
        del _notes[:]
        del _cleanup[:]
        del _raised[:]
        del _reports[:]


def cleaned(text):
    """Record a cleanup step done after SIGTERM (the Lease released...), for the cancellation message."""
    with _lock:
        if text not in _cleanup:
            _cleanup.append(text)


def message(name, stopped=(), temporary=True):
    """``<name>: cancelled (SIGTERM); done before: ...; stopped: ...; cleaned up: ...; not done: ...`` in one line
    (``temporary``: the engine had temporary files, removed on the way out)."""
    with _lock:
        done, cleanup = list(_notes), list(_cleanup)
    parts = ["%s: cancelled (SIGTERM)" % name, "done before: %s" % ("; ".join(done) if done else "no change")]
    if stopped:
        parts.append("stopped: %s" % "; ".join(stopped))
    cleanup += ["temporary files removed"] if temporary else []
    if cleanup:
        parts.append("cleaned up: %s" % "; ".join(cleanup))
    parts.append("not done: everything not listed as done (nothing else was started)")
    return " - ".join(parts)


def _handler(signum, frame):  # pylint: disable=unused-argument
    _event.set()
    stopped = run_hooks()
    with _lock:
        if _raised:
            return  # cleaning up already: never interrupt the cleanup itself
        _raised.append(stopped)
    raise Cancelled("cancelled (SIGTERM)", cancelled=True, stopped=stopped)


def stopped():
    """What the handler stopped (helm children...)."""
    with _lock:
        return list(_raised[0]) if _raised else []


@contextlib.contextmanager
def sigterm_cancels():
    """While inside, SIGTERM raises :class:`Cancelled` in the main thread (elsewhere: nothing is installed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
