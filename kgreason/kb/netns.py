"""Run a server with no network but its own loopback, reachable through relayed ports.

A SPARQL engine can make requests of its own: Virtuoso's ``bif:http_get`` fetches any URL
from a plain SELECT, and Virtuoso 7 has no ini switch that turns outbound HTTP off. The
read-only guard refuses such calls on every client path (an allow-list of built-ins), but
a server started for tests or benchmarks should not depend on one client: run inside a
new network namespace, the engine sees only a loopback of its own, so a request to any
host — the machine's loopback included — fails inside the engine.

The listening sockets are opened on the host's loopback *before* the namespace is entered
and handed to a small supervisor (``python -m kgreason.kb.netns``) that runs in the
namespace: a socket keeps the namespace it was created in, so the supervisor accepts
clients on the host side and connects each to the server's port on the namespace's
loopback. Needs Linux ``unshare`` (util-linux) and either root or unprivileged user
namespaces.

Example::

    cmd, fds, socks = sandboxed({8890: free_port()}, ["virtuoso-t", "+foreground", ...])
    proc = subprocess.Popen(cmd, pass_fds=fds)   # port free_port() on 127.0.0.1 reaches it
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from kgreason.errors import KBUnavailable

_UNSHARE = ["--user", "--map-root-user", "--net"]


@functools.cache
def available() -> bool:
    """Whether this host can start a process in a new network namespace."""
    exe = shutil.which("unshare")
    if exe is None or not sys.platform.startswith("linux"):
        return False
    try:
        return subprocess.run([exe, *_UNSHARE, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def isolated(cmd: list[str]) -> list[str]:
    """The command line that runs ``cmd`` with no network at all (not even a loopback):
    for a process that talks to its parent through pipes only, such as the embedded
    store's query worker (:mod:`kgreason.kb.query_process`).

    Raises:
        KBUnavailable: the host cannot create network namespaces.
    """
    if not available():
        raise KBUnavailable("no network namespace on this host (needs Linux `unshare` and root or unprivileged "
                            "user namespaces)")
    return [shutil.which("unshare") or "unshare", *_UNSHARE, *cmd]


def wanted(sandbox: bool | None) -> bool:
    """Whether to isolate a process: ``True`` requires it (``KBUnavailable`` where the host
    cannot), ``None`` isolates where the host can, ``False`` never does."""
    if sandbox is None:
        return available()
    if sandbox and not available():
        raise KBUnavailable("sandbox=True, but this host has no network namespaces (needs Linux `unshare` and "
                            "root or unprivileged user namespaces); pass sandbox=None or False")
    return bool(sandbox)


def sandboxed(ports: dict[int, int], cmd: list[str]) -> tuple[list[str], tuple[int, ...], list[socket.socket]]:
    """The command line that runs ``cmd`` in a new network namespace.

    Args:
        ports: server port inside the namespace -> port to listen on at 127.0.0.1 outside.
        cmd: the server's command line (it binds 127.0.0.1 on the inner ports).

    Returns:
        ``(argv, pass_fds, sockets)``: start ``argv`` with ``pass_fds``; close ``sockets``
        in the caller once the process has started (the child holds its own copies).

    Raises:
        KBUnavailable: the host cannot create network namespaces.
    """
    if not available():
        raise KBUnavailable("no network namespace on this host (needs Linux `unshare` and root or unprivileged "
                            "user namespaces); start the server with sandbox=False to run it unisolated")
    socks, relays = [], []
    for inner, outer in ports.items():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", outer))
        s.listen(64)
        s.set_inheritable(True)
        socks.append(s)
        relays += ["--relay", f"{s.fileno()}:{inner}"]
    argv = [shutil.which("unshare") or "unshare", *_UNSHARE, sys.executable, "-m", "kgreason.kb.netns",
            *relays, "--", *cmd]
    return argv, tuple(s.fileno() for s in socks), socks


def _loopback_up() -> None:
    # what `ip link set lo up` does, without needing iproute2 in the image
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags, req))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def _die_with_parent() -> None:
    # a SIGKILLed supervisor cannot stop its server: the kernel does (PR_SET_PDEATHSIG)
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _serve(listener: socket.socket, port: int) -> None:
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection(("127.0.0.1", port), timeout=5)
            server.settimeout(None)
        except OSError:
            client.close()  # not listening yet: the caller's readiness poll retries
            continue
        for sock in (client, server):  # relay each write at once (Nagle would hold small replies)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """The supervisor inside the namespace: relay the ports, run the server, end with it."""
    ap = argparse.ArgumentParser(prog="python -m kgreason.kb.netns")
    ap.add_argument("--relay", action="append", default=[], metavar="FD:PORT")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    _loopback_up()
    child = subprocess.Popen(cmd, preexec_fn=_die_with_parent)  # before any thread starts
    for spec in args.relay:
        fd, port = (int(x) for x in spec.split(":"))
        threading.Thread(target=_serve, args=(socket.socket(fileno=fd), port), daemon=True).start()
    parent = os.getppid()

    def stop(*_: object) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while child.poll() is None:
        if os.getppid() != parent:  # the owner was killed: nobody else will stop the server
            stop()
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
        time.sleep(0.2)
    if child.returncode < 0:  # end the way the server ended, so the owner sees its signal
        signal.signal(-child.returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -child.returncode)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
