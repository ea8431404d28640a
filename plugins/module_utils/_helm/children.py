# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The helm child processes of this process: each registered while it runs, from every thread, so SIGTERM
(``_common.cancel``) stops them all (:func:`stop_children`), also those started from the scheduler's worker threads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel


_children = {}  # live helm processes (Popen -> what it does), from every thread
# Held from before a child is forked until it is registered, so SIGTERM's stop_children (which takes it) never misses a
# child that already runs; reentrant, as the handler runs in the main thread, which may hold it while starting helm itself.
_children_lock = threading.RLock()
STOP_GRACE = 5.0  # seconds a helm child has to exit after SIGTERM before it is killed


def alive(proc):
    """Whether ``proc`` still runs (a zombie nobody reaped yet does not: another thread may be waiting on it)."""
    if proc.returncode is not None:
        return False
    try:
        with open("/proc/%d/stat" % proc.pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except IndexError:
        return False
    except OSError:  # gone, or no /proc (not Linux): ask the process object
        return os.path.exists("/proc/self") is False and proc.poll() is None


def stop_children(grace=STOP_GRACE):
    """SIGTERM every live helm child, SIGKILL those still running after ``grace``; returns what each was doing.

    A child that already exited but whose worker has not collected it yet is not listed: it was not stopped (its worker
    reports it done, or failed, as it ends).
    """
    with _children_lock:
        live = [(proc, what) for proc, what in _children.items() if alive(proc)]
    for proc, _what in live:
        try:
            proc.terminate()
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while any(alive(proc) for proc, _what in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    for proc, _what in live:
        if alive(proc):
            try:
                proc.kill()
            except OSError:
                pass
    return [what for _proc, what in live]


def start_child(full, env, what):
    """Start one helm child, registered while it lives (so SIGTERM of this process stops it)."""
    cancel.on_cancel(stop_children)
    with _children_lock:  # checked, started and registered in one step: the SIGTERM handler's stop_children waits for it
        cancel.check(what)
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
        _children[proc] = what
    if cancel.requested():  # SIGTERM came meanwhile: stopped whether or not the handler's stop_children saw it
        stop_children()
    return proc


def collect_child(proc, timeout):
    """Wait for a child of :func:`start_child`; (returncode, stdout, stderr)."""
    try:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        return proc.returncode, stdout, stderr
    finally:
        with _children_lock:
            _children.pop(proc, None)


def run_child(full, env, timeout, what):
    """Run one helm child to its end; (returncode, stdout, stderr)."""
    return collect_child(start_child(full, env, what), timeout)
