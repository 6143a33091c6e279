"""N keep-alive GETs on one connection, for the instruction-count scripts.

    python3 scripts/keepalive_get.py N PORT PATH [HEADER] [HTTPS] [EXPECT]

HEADER is "name: value" or empty; HTTPS non-empty means TLS (certificate not verified); EXPECT is the exact status
every answer must have (default: anything below 500). CONNS=C in the environment spreads the N requests over C
connections at once (default 1), for paths whose cost depends on what is in flight together (e.g. Redis calls that
concurrent requests share).
"""
import http.client
import os
import ssl
import sys
import threading

n, port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
header = sys.argv[4] if len(sys.argv) > 4 else ""
https = sys.argv[5] if len(sys.argv) > 5 else ""
expect = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] else None
headers = dict([header.split(": ", 1)]) if header else {}


def run(count):
    if https:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context())
    else:
        c = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(count):
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        r.read()
        if (expect is not None and r.status != expect) or r.status >= 500:
            failed.append(r.status)
            return


failed = []
conns = int(os.environ.get("CONNS", "1"))
threads = [threading.Thread(target=run, args=(n // conns + (i < n % conns),)) for i in range(conns)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failed:
    sys.exit(f"status {failed[0]}")
