"""Child processes of the lab: started detached, logged to files, stopped for sure."""

import os
import random
import signal
import socket
import subprocess
import time


class ProcessError(RuntimeError):
    """A process did not start, or did not become ready in time."""


# SystemRandom: a seeded `random` (pytest-randomly seeds it alike in every process) would have two labs try the same ports
_PORTS = random.SystemRandom()
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
LOWEST_PORT = 10000


def _ephemeral_low():
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        with open(EPHEMERAL_RANGE_FILE, "r", encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host="127.0.0.1"):
    """A TCP port on ``host`` nobody listens on now, below the kernel's ephemeral range.

    Not the kernel's pick (a bind to port 0): that comes from the ephemeral range, whose ports the kernel also gives to
    the local end of every outgoing connection, so any connection made before the lab's server binds it could take it
    (seen: kube-apiserver's "bind: address already in use" on such a port). Below that range only another server can
    take it, and the lab's starters pick again when one did (ControlPlane._start_on_free_ports)."""
    low = _ephemeral_low()
    if low - LOWEST_PORT >= 1000:
        for _attempt in range(100):
            port = _PORTS.randrange(LOWEST_PORT, low)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
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


def pause(pid):
    """SIGSTOP ``pid``: it stops answering yet keeps its sockets (the kernel still accepts connections and data), as a
    process that hangs - not one that exits - does."""
    os.kill(pid, signal.SIGSTOP)


def resume(pid):
    """SIGCONT a process :func:`pause` stopped."""
    os.kill(pid, signal.SIGCONT)


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
