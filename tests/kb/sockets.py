"""A loopback TCP server for fault tests: each connection handled on a thread of its own."""

from __future__ import annotations

import socket
import threading


class AcceptLoop:
    """Listens on 127.0.0.1 (``port``) and calls :meth:`handle` with each connection.

    Subclasses set their own attributes before calling ``super().__init__()``: the loop
    starts at once.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
