"""N keep-alive GETs on one connection, for the instruction-count scripts.

    python3 scripts/keepalive_get.py N PORT PATH [HEADER] [HTTPS] [EXPECT]

HEADER is "name: value" or empty; HTTPS non-empty means TLS (certificate not verified); EXPECT is the exact status
every answer must have (default: anything below 500).
"""
import http.client
import ssl
import sys

n, port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
header = sys.argv[4] if len(sys.argv) > 4 else ""
https = sys.argv[5] if len(sys.argv) > 5 else ""
expect = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] else None
headers = dict([header.split(": ", 1)]) if header else {}
if https:
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context())
else:
    c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    r.read()
    if (expect is not None and r.status != expect) or r.status >= 500:
        sys.exit(f"status {r.status}")
