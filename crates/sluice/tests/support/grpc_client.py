"""A gRPC call through the gateway with Python's grpcio, an independent client: the unary method of
sluice.test.Echo with the message encoded by hand (field 1, the text), no stubs.

Usage: grpc_client.py HOST:PORT AUTHORITY TEXT [APIKEY]. Prints `ok <text>` and exits 0 on success,
or prints `status <CODE> <details>` and exits 2.
"""
import sys

import grpc


def encode(text):
    data = text.encode()
    assert len(data) < 128
    return b"\x0a" + bytes([len(data)]) + data


def decode(raw):
    # field 1 (text), length-delimited, short: tag, one-byte length, bytes.
    if not raw:
        return ""
    assert raw[0] == 0x0A, raw
    return raw[2 : 2 + raw[1]].decode()


def main():
    target, authority, text = sys.argv[1], sys.argv[2], sys.argv[3]
    metadata = [("apikey", sys.argv[4])] if len(sys.argv) > 4 else []
    options = [("grpc.default_authority", authority)]
    with grpc.insecure_channel(target, options=options) as channel:
        call = channel.unary_unary(
            "/sluice.test.Echo/Unary",
            request_serializer=encode,
            response_deserializer=decode,
        )
        try:
            reply = call(text, metadata=metadata, timeout=10)
        except grpc.RpcError as e:
            print("status", e.code().name, e.details())
            sys.exit(2)
        print("ok", reply)


main()
