"""Child processes of the lab: started detached, logged to files, stopped for sure."""

import os
import signal
import socket
import subprocess
import time


class ProcessError(RuntimeError):
    """A process did not start, or did not become ready in time."""


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(name, argv, log_dir, env=None):
    """Start ``argv`` in its own session (it outlives this process), stdout+stderr to ``<log_dir>/<name>.log``."""
    log_path = os.path.join(str(log_dir), "%s.log" % name)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(  # pylint: disable=consider-using-with
            [str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env, close_fds=True)
    return process


def alive(pid):
    """Whether ``pid`` runs (a zombie child of ours is reaped and counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        reaped, _status = os.waitpid(pid, os.WNOHANG)
        return reaped == 0
    except ChildProcessError:
        try:
            with open("/proc/%d/stat" % pid, "r", encoding="utf-8") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False


def terminate(pids, timeout=15.0):
    """SIGTERM every pid, wait until each is gone, SIGKILL what is left; return the pids that needed SIGKILL."""
    pids = [pid for pid in pids if pid]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    killed = []
    for pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if alive(pid):
            killed.append(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
    for pid in killed:
        while alive(pid):
            time.sleep(0.02)
    return killed


def wait_for(predicate, timeout, what, process=None, log_path=None, interval=0.05):
    """Poll ``predicate`` until it is true; fail early if ``process`` exits, with the log's tail."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception as exc:  # pylint: disable=broad-except
            last_error = exc
        if process is not None and process.poll() is not None:
            raise ProcessError("%s exited with status %s before %s%s" % (
                os.path.basename(str(process.args[0])), process.returncode, what, _tail(log_path)))
        time.sleep(interval)
    raise ProcessError("timed out after %.0f s waiting for %s (last error: %s)%s" % (timeout, what, last_error, _tail(log_path)))


def _tail(log_path, lines=25):
    if not log_path or not os.path.isfile(log_path):
        return ""
    with open(log_path, "r", encoding="utf-8", errors="replace") as handle:
        text = handle.read().splitlines()[-lines:]
    return "\n--- %s (last %d lines) ---\n%s" % (log_path, lines, "\n".join(text))
