"""A command in a pod's container over the exec API (a WebSocket, as `kubectl exec` speaks it): run to
its end with its output returned (the providers, the ops tool's readings), or streamed as it comes with
the caller's standard input sent to it (`minicluster exec`).

The channels are read as bytes and decoded once, at the end: the client decodes each frame on its own,
which breaks a character whose bytes span two frames, and a streamed command's output is passed on as
it is. Nothing is kept once passed on, so a long command's output does not pile up in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from flux_minicluster.cluster.api_calls import pods

STDOUT, STDERR = 1, 2
"""The exec protocol's channels for the command's output (0 is its input, 3 its exit status)."""
CLOSES_INPUT = "v5.channel.k8s.io"
"""The protocol version that can tell the command its input has ended (Kubernetes 1.30 and later)."""
CHUNK = 64 * 1024


def run_in_pod(
    api_client: Any, namespace: str, pod: str, container: str, command: list[str], timeout: float | None = None
) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit status) of a command run in a pod's container; the status is None if the
    connection ended (or `timeout` seconds passed) before it came."""
    session = _open(api_client, namespace, pod, container, command, stdin=False)
    session.run_forever(timeout=timeout)
    stdout, stderr = (session.read_channel(channel).decode("utf-8", "replace") for channel in (STDOUT, STDERR))
    if session.is_open():  # timed out: the command may still run
        session.close()
        return stdout, stderr, None
    return stdout, stderr, _exit_status(session)


def stream_in_pod(
    api_client: Any, namespace: str, pod: str, container: str, command: list[str],
    stdout: BinaryIO, stderr: BinaryIO, stdin: BinaryIO | None = None, say: Callable[[str], None] = print,
) -> int | None:  # fmt: skip
    """Runs a command in a pod's container, its output written to `stdout` and `stderr` as it comes, and
    `stdin`, if given, sent as its input until its end; returns its exit status, None if the connection
    ended before it came. `say` tells what the user should know of the connection itself."""
    from websocket import WebSocketException

    session = _open(api_client, namespace, pod, container, command, stdin=stdin is not None)
    try:
        if stdin is not None:
            if session.subprotocol != CLOSES_INPUT:
                say(
                    f"this API server speaks {session.subprotocol or 'an older exec protocol'}, which cannot tell "
                    f"the command that its input has ended ({CLOSES_INPUT}, Kubernetes 1.30 and later, can): a "
                    "command that reads to the end of its input waits for more; Ctrl-C ends this one"
                )
            threading.Thread(target=_send_input, args=(session, stdin), daemon=True).start()
        while session.is_open():
            session.update(timeout=None)
            _pass_on(session, stdout, stderr)
        _pass_on(session, stdout, stderr)
    except (WebSocketException, OSError):  # the connection broke: no status came
        return None
    finally:
        session.close()
    return _exit_status(session)


def _open(api_client: Any, namespace: str, pod: str, container: str, command: list[str], stdin: bool) -> Any:
    from kubernetes.stream import ws_client

    streams = [("stdin", str(stdin).lower()), ("stdout", "true"), ("stderr", "true"), ("tty", "false")]
    method, url, headers, _, _ = api_client.param_serialize(
        "GET", f"{pods(namespace, pod)}/exec",
        query_params=[("container", container), *streams, *(("command", word) for word in command)],
        header_params={"Accept": "*/*"}, auth_settings=["BearerToken"],
    )  # fmt: skip
    return ws_client.websocket_call(  # type: ignore[no-untyped-call]
        api_client.configuration, method, url, headers=headers, _preload_content=False, binary=True, capture_all=False
    )


def _pass_on(session: Any, stdout: BinaryIO, stderr: BinaryIO) -> None:
    for channel, sink in ((STDOUT, stdout), (STDERR, stderr)):
        data = session.read_channel(channel)
        if data:
            sink.write(data)
            sink.flush()


def _send_input(session: Any, stdin: BinaryIO) -> None:
    """The caller's input, as it comes, then its end (where the protocol can say it)."""
    from websocket import WebSocketException

    try:
        while chunk := stdin.read1(CHUNK) if hasattr(stdin, "read1") else stdin.read(CHUNK):
            session.write_stdin(chunk)
        session.close_channel(0)  # a no-op before v5
    except (WebSocketException, OSError, ValueError):  # the command ended, and the connection with it
        return


def _exit_status(session: Any) -> int | None:
    try:
        return int(session.returncode)
    except (TypeError, KeyError, ValueError, IndexError, AttributeError):  # the connection ended first
        return None
