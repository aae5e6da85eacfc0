"""Run an embedded Oxigraph store's timed queries in a child process that can be killed.

pyoxigraph (0.5) takes no timeout or cancellation token, and a blocking operator (an
aggregate, ORDER BY, a join that a filter empties) computes inside one call: a query run on
a thread keeps a core busy after its :class:`~kgreason.errors.KBTimeout` until it ends —
hours for a cartesian COUNT a policy can write in one line (docs/reliability.md). A process
can be killed. :class:`QueryProcess` keeps one worker that holds its own copy of the store
(an N-Quads dump for an in-memory store, a read-only opening for one on disk), answers
queries one at a time, and is killed at a timeout; a fresh one starts loading at once, for
the next query. An engine crash on a query (a segfault) costs that query, not the training
process.

Run as a module, this file is the worker: ``python -m kgreason.kb.query_process`` reads
framed pickles on stdin and writes framed pickles on stdout.
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any, Literal

import pyoxigraph as ox

from kgreason import errors
from kgreason.errors import KBError, KBQueryError, KBTimeout, KBUnavailable
from kgreason.kb import limits, netns
from kgreason.kb.schema import KBSchema

_HEADER = struct.Struct("!Q")
#: time a worker gets to load its store before the KB counts as unavailable
START_TIMEOUT_S = 600.0


def _send(stream: IO[bytes], message: Any) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (n,) = _HEADER.unpack(head)
    body = stream.read(n)
    if len(body) < n:
        raise EOFError
    return pickle.loads(body)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


class QueryProcess:
    """One killable worker process answering an Oxigraph store's SELECT/ASK queries.

    Queries are answered one at a time (a lock serialises callers); a query's time budget
    counts from its request, not from the wait for the lock. POSIX only (the wait for an
    answer selects on a pipe).

    Args:
        store: the store to copy. ``path`` set: the worker opens that directory read-only
            (the store is flushed first, and must not be written while the worker lives);
            otherwise the store is dumped as N-Quads to an unlinked temporary file whose
            descriptor each worker inherits, so a killed run leaves no copy behind.
        schema: passed to the worker's ``OxigraphKB`` to turn IRIs into ids.
        path: the on-disk store's directory, or ``None`` for an in-memory store.
        sandbox: run the worker with no network (``None``: where the host can).
        memory_limit_mb: the worker's data limit (:mod:`kgreason.kb.limits`), so a query
            that builds gigabytes ends the worker, not the host's memory; ``"auto"`` scales
            it with an in-memory store's size, ``None`` sets none.
    """

    def __init__(self, store: ox.Store, schema: KBSchema, path: str | Path | None = None,
                 sandbox: bool | None = None, memory_limit_mb: int | Literal["auto"] | None = "auto"):
        if os.name != "posix":
            raise KBUnavailable("killable queries need a POSIX system; pass timeout_s=None to the OxigraphKB")
        self._dump: IO[bytes] | None = None
        if path is None:
            # unlinked at creation: nothing is left in the temporary directory when the
            # run is killed before its finalizers run
            self._dump = tempfile.TemporaryFile(prefix="kgreason-store-")  # noqa: SIM115 - lives with the object, closed by close()
            store.dump(output=self._dump, format=ox.RdfFormat.N_QUADS)
            self._dump.flush()
            source = ("dump", self._dump.fileno())
            if memory_limit_mb == "auto":
                memory_limit_mb = limits.worker_limit_mb(os.fstat(self._dump.fileno()).st_size)
        else:
            store.flush()
            source = ("disk", str(path))
        if memory_limit_mb == "auto":
            memory_limit_mb = limits.SERVER_MB
        self._source, self._schema, self.memory_limit_mb = source, schema, memory_limit_mb
        #: the worker runs with no network (:func:`kgreason.kb.netns.isolated`): a federated
        #: query that got past the guard cannot open a connection
        self.isolated = netns.wanted(sandbox)
        self._proc: subprocess.Popen | None = None
        self._ready = False
        self._lock = threading.Lock()
        self.restarts = -1  # workers started after the first
        self._cleanup = weakref.finalize(self, _close_dump, self._dump)

    # ------------------------------------------------------------------ process
    def _spawn(self) -> None:
        """Start a worker and hand it the store; it loads while the caller goes on."""
        cmd = [sys.executable, "-m", "kgreason.kb.query_process"]
        fds = (self._source[1],) if self._source[0] == "dump" else ()
        proc = subprocess.Popen(netns.isolated(cmd) if self.isolated else cmd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=fds)
        self._proc, self._ready = proc, False
        self.restarts += 1
        self._finalizer = weakref.finalize(self, _kill, proc)
        try:
            _send(proc.stdin, (*self._source, self._schema, self.memory_limit_mb))
        except OSError as e:
            self.stop()
            raise KBUnavailable(f"the query process did not start: {e}") from None

    def _worker(self) -> subprocess.Popen:
        """The live worker, loaded; started (and waited for) when there is none."""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            self._spawn()
        proc = self._proc
        if not self._ready:
            try:
                reply = self._await(proc, START_TIMEOUT_S)
            except (OSError, EOFError):
                self.stop()
                raise KBUnavailable("the query process exited while loading the store") from None
            if reply is None:
                self.stop()
                raise KBUnavailable(f"the query process did not load the store within {START_TIMEOUT_S:.0f}s")
            if reply[0] == "error":
                self.stop()
                raise KBUnavailable(f"the query process could not open the store: {reply[2]}")
            self._ready = True
        return proc

    @staticmethod
    def _await(proc: subprocess.Popen, timeout_s: float) -> Any:
        """The next message, or ``None`` when none begins within ``timeout_s``."""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                return None
        return _receive(proc.stdout)

    def stop(self) -> None:
        """Kill the worker (the next query starts a new one)."""
        if self._proc is not None:
            self._finalizer()
            self._proc = None

    def close(self) -> None:
        """Kill the worker and close (so delete) the store's dump."""
        self.stop()
        self._cleanup()

    @property
    def pid(self) -> int | None:
        """The live worker's process id (``None`` before the first query or after a kill)."""
        return None if self._proc is None else self._proc.pid

    # ------------------------------------------------------------------ query
    def run(self, sparql: str, limit: int, timeout_s: float) -> list[dict]:
        """Rows of a checked SELECT/ASK query, at most ``limit`` of them.

        Raises:
            KBTimeout: no answer within ``timeout_s``; the worker is killed.
            KBQueryError: the engine refused the query, or the worker died running it.
            KBUnavailable: the store cannot be read, or the worker cannot start.
        """
        with self._lock:
            proc = self._worker()
            try:
                _send(proc.stdin, (sparql, limit))
                reply = self._await(proc, timeout_s)
            except (OSError, EOFError):
                code = proc.wait()
                self.stop()
                raise KBQueryError(f"the query engine crashed on this query (worker exit {code})") from None
            if reply is None:
                self.stop()  # kill, not cancel: the engine takes no cancellation
                self._spawn()  # the next query finds its replacement loaded, or loading
                raise KBTimeout(f"query exceeded {timeout_s:.3g}s")
        if reply[0] == "rows":
            return reply[1]
        kind = getattr(errors, reply[1], None)
        if not (isinstance(kind, type) and issubclass(kind, KBError)):
            kind = KBQueryError
        raise kind(reply[2])


def _close_dump(dump: IO[bytes] | None) -> None:
    if dump is not None:
        dump.close()


def _orphan_watch(parent: int) -> None:
    # a killed parent leaves no one to kill this worker: end with it
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main() -> None:
    """The worker: load the store, then answer ``(sparql, limit)`` requests until stdin ends."""
    from kgreason.kb.oxigraph import OxigraphKB

    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # nothing but replies may reach the pipe
    threading.Thread(target=_orphan_watch, args=(os.getppid(),), daemon=True).start()
    try:
        kind, where, schema, memory_limit_mb = _receive(inp)
        limits.set_data_limit(memory_limit_mb)
        store = ox.Store.read_only(where) if kind == "disk" else ox.Store()
        if kind == "dump":  # an inherited descriptor; its offset may be shared with the parent's
            os.lseek(where, 0, os.SEEK_SET)
            store.bulk_load(path=f"/dev/fd/{where}", format=ox.RdfFormat.N_QUADS)
    except (OSError, SyntaxError, ValueError) as e:
        _send(out, ("error", "KBUnavailable", str(e)))
        return
    kb = OxigraphKB(store=store, schema=schema, timeout_s=None)
    _send(out, ("ready",))
    while True:
        try:
            sparql, limit = _receive(inp)
        except EOFError:
            return
        try:
            reply = ("rows", kb._run(sparql, limit))
        except KBError as e:
            reply = ("error", type(e).__name__, str(e))
        _send(out, reply)


if __name__ == "__main__":
    main()
