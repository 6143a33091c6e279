"""A second, independent WebSocket client for crates/sluice/tests/websocket.rs (Python's `websockets`).

    python3 ws_client.py URL [HEADER:VALUE]

Through the gateway to the testkit's WebSocket echo upstream: a text and a large binary message come back
as sent, then the upstream is asked to close (`close`) and its close frame (1000, "bye") must arrive. A
wss:// URL is connected without verifying the certificate. Prints `ok` and exits 0 when all of it held;
a refused handshake prints `status N` and exits 2.
"""

import os
import ssl
import sys

from websockets.exceptions import ConnectionClosedOK, InvalidStatus
from websockets.sync.client import connect


def main():
    url = sys.argv[1]
    headers = {}
    for arg in sys.argv[2:]:
        name, value = arg.split(":", 1)
        headers[name.strip()] = value.strip()
    context = None
    if url.startswith("wss://"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        ws = connect(url, additional_headers=headers, ssl=context, max_size=None, open_timeout=10)
    except InvalidStatus as e:
        print("status", e.response.status_code)
        return 2
    with ws:
        ws.send("héllo from python")
        assert ws.recv(timeout=10) == "héllo from python"
        blob = os.urandom(300_000)
        ws.send(blob)
        assert ws.recv(timeout=10) == blob
        ws.send("close")
        try:
            extra = ws.recv(timeout=10)
            raise AssertionError(f"expected the upstream's close, got {extra!r}")
        except ConnectionClosedOK as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1000, closed
            assert closed.rcvd.reason == "bye", closed
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
