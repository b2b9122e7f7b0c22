"""A WSGI app served over HTTP/1.1 with keep-alive, in a thread, as AWS's endpoints serve.

werkzeug's development server closes the connection after every response, so every call to the
emulator paid a new TCP connection, and the emulator a new thread: measured here, one message
produced through an agent took 14 ms at the median, 10 ms once connections were kept
(docs/local-stack.md). waitress keeps them, reads each request whole before the app sees it, and
runs apps on a pool of threads.

One waitress behaviour is corrected: a request with ``Expect: 100-continue`` and an empty body
(botocore sends every S3 PUT so, even of no bytes) was answered "100 Continue" and then waited
for a body that never comes; it is whole already, and answered at once.

The pool is large: a Lambda invocation runs in its request's thread and calls back into the
emulator, so each invocation in flight holds a thread while its calls need others.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from typing import Any, cast

from waitress.channel import HTTPChannel
from waitress.server import create_server

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

THREADS = 64
# S3's largest single PUT, and far more connections than a test session's clients keep open.
MAX_BODY_BYTES = 5 * 1024**3
CONNECTION_LIMIT = 4096
IDLE_CONNECTION_S = 300
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, for no time


class _Channel(HTTPChannel):
    def send_continue(self) -> None:
        request = self.request
        if request is not None and request.content_length == 0 and not request.chunked:
            request.expect_continue = False  # nothing to wait for: it is complete
            return
        super().send_continue()


class Server:
    """``app`` on ``host:port`` (0: any free port) until :meth:`stop`."""

    def __init__(self, app: WSGIApp, host: str, port: int, *, name: str) -> None:
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" notes
        # waitress's stubs name neither the bound port nor the loop's map: typed as Any.
        self._server = cast(
            Any,
            create_server(
                app,
                host=host,
                port=port,
                threads=THREADS,
                connection_limit=CONNECTION_LIMIT,
                channel_timeout=IDLE_CONNECTION_S,
                max_request_body_size=MAX_BODY_BYTES,
                clear_untrusted_proxy_headers=False,
                ident="",
            ),
        )
        self._server.channel_class = _Channel  # before the loop accepts any connection
        self.port = int(self._server.effective_port)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """The app's threads first (each task they finish wakes the loop through its trigger,
        which must still be open), then the listener and every connection, in the loop."""
        self._server.task_dispatcher.shutdown(timeout=5)

        def close_all() -> None:
            for dispatcher in list(self._server._map.values()):  # waitress keeps its loop there
                if isinstance(dispatcher, HTTPChannel) and dispatcher.socket is not None:
                    # Reset rather than close: a port whose last connections we closed would
                    # sit in TIME_WAIT for a minute, refused to anyone binding it without
                    # SO_REUSEADDR (LocalStack, or this stack started again by another tool).
                    dispatcher.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                dispatcher.close()

        # The loop may already be awake (a finished task's pull): were the thunk queued before
        # the write, it could run close_all, closing the trigger, before the write, which then
        # fails (or lands in a file descriptor reused since). The loop takes the trigger's
        # lock to run its thunks, so queueing and writing under it keeps them in order.
        trigger = self._server.trigger
        with trigger.lock:
            trigger.thunks.append(close_all)
            trigger._physical_pull()
        self._thread.join(timeout=10)
