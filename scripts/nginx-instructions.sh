#!/usr/bin/env bash
# nginx's user-space instructions per proxied request, counted the way scripts/instructions.sh counts sluice's:
# the same upstream (sluice-perf's), the same client (one keep-alive connection), the same 2500 − 500 request
# difference, so the two figures compare directly. nginx runs as sluice-perf's nginx peer does (`proxy_pass`
# with a keep-alive upstream pool), as one process (`master_process off`) under callgrind.
#
#   scripts/nginx-instructions.sh        HTTPS=1 for TLS (a throw-away self-signed ECDSA certificate)
#
# Needs nginx, valgrind, openssl and a release build of sluice-perf.
set -euo pipefail
PERF=${PERF:-target/release/sluice-perf}
source "$(dirname "$0")/callgrind-lib.sh"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/key.pem" \
  -out "$WORK/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
count() {
  local n=$1 p
  p=$(port)
  local listen="127.0.0.1:$p" tls=""
  if [ -n "${HTTPS:-}" ]; then
    listen="$listen ssl"
    tls="ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
  fi
  mkdir -p "$WORK/tmp"
  cat >"$WORK/nginx.conf" <<CONF
master_process off; daemon off; worker_processes 1;
pid $WORK/nginx.pid; error_log $WORK/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; client_body_temp_path $WORK/tmp; proxy_temp_path $WORK/tmp;
  upstream u { server $UPSTREAM; keepalive 256; keepalive_requests 10000000; }
  server {
    listen $listen; $tls keepalive_requests 10000000;
    location / { proxy_pass http://u; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" nginx -c "$WORK/nginx.conf" -p "$WORK" \
    >"$WORK/log" 2>&1 &
  local vg=$!
  for _ in $(seq 1 50); do
    curl -sk -o /dev/null "http${HTTPS:+s}://127.0.0.1:$p/" && break
    sleep 0.2
  done
  send "$n" "$p" /r0 "" 200
  kill -QUIT $vg
  wait $vg || true
  total
}
per_request "nginx proxy_pass${HTTPS:+, HTTPS}"
