"""A hand-driven hybrid-mode peer for crates/sluice/tests/hybrid_deltas.rs (Python's `websockets`), written
from Kong's v1 protocol (docs/hybrid.md), not from Sluice's code.

    python3 peer.py dp HOST:PORT CERT KEY [deltas]   a data plane connecting to a control plane
    python3 peer.py cp CERT KEY                      a control plane serving one data plane

Both speak over mutual TLS with the shared cluster certificate. Every binary frame received is printed as
one JSON line: `{"bytes": N, "frame": {...}}` (gunzipped first when it is gzip). The `cp` mode first prints
`{"port": N}`. Lines read from stdin are sent:
- `send BASE64`: that binary frame, as given;
- `resync`: a `sluice_resync` request (dp mode).
`dp` sends `basic_info` first, offering Sluice's deltas only with `deltas` (without it, it is a Kong DP).
"""

import base64
import gzip
import json
import ssl
import sys
import threading
import time

from websockets.sync.client import connect
from websockets.sync.server import serve


def out(obj):
    print(json.dumps(obj), flush=True)


def receive(ws):
    """Prints each binary frame until the connection ends."""
    try:
        for message in ws:
            if isinstance(message, str):
                continue
            raw = len(message)
            if message[:2] == b"\x1f\x8b":
                message = gzip.decompress(message)
            frame = json.loads(message)
            if "config_table" in frame:
                # The whole config is large and the test reads only what it is: its size stands for it.
                frame["config_table"] = {"routes": len(frame["config_table"].get("routes", []))}
            out({"bytes": raw, "frame": frame})
    except Exception as e:  # the test ends the peer by closing its stdin or killing the node
        out({"closed": str(e)})


def commands(ws):
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word == "send":
            ws.send(base64.b64decode(arg))
        elif word == "resync":
            ws.send(json.dumps({"type": "sluice_resync", "reason": "asked by the test"}).encode())


def data_plane(address, cert, key, deltas):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert, key)
    url = f"wss://{address}/v1/outlet?node_id=7f2c1b1e-8a43-4a51-9a59-0c8d7f1e2a10&node_hostname=peer&node_version=3.9.1"
    # The CP's cluster listener starts beside its proxy: on a loaded machine it may not listen yet.
    deadline = time.monotonic() + 10
    while True:
        try:
            ws = connect(url, ssl=ctx, server_hostname="kong_clustering", max_size=None, open_timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    hello = {"type": "basic_info", "plugins": [], "filters": {}}
    if deltas:
        hello["sluice"] = {"capabilities": ["delta.v1"]}
    ws.send(json.dumps(hello).encode())
    threading.Thread(target=commands, args=(ws,), daemon=True).start()
    receive(ws)


def control_plane(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    def handler(ws):
        hello = json.loads(ws.recv(timeout=10))
        out({"hello": hello})
        threading.Thread(target=commands, args=(ws,), daemon=True).start()
        receive(ws)

    with serve(handler, "127.0.0.1", 0, ssl=ctx, max_size=None) as server:
        out({"port": server.socket.getsockname()[1]})
        server.serve_forever()


def main():
    mode = sys.argv[1]
    if mode == "dp":
        data_plane(sys.argv[2], sys.argv[3], sys.argv[4], "deltas" in sys.argv[5:])
    else:
        control_plane(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
