//! Parse time of a typical upstream response head (10 fields), and of a small chunked body.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion};
use sluice_h1::{parse_response, BodyDecoder, Decoded, Framing};
use std::hint::black_box;

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\n\
Content-Type: application/json; charset=utf-8\r\n\
Content-Length: 1234\r\n\
Date: Tue, 15 Nov 1994 08:12:31 GMT\r\n\
Server: nginx/1.25.3\r\n\
Connection: keep-alive\r\n\
Cache-Control: no-cache\r\n\
X-Request-Id: 3f2b8c1e-7a4d-4e2b-9c1f-6d5e4a3b2c1d\r\n\
X-Powered-By: Express\r\n\
X-RateLimit-Remaining: 99\r\n\
Vary: Accept-Encoding\r\n\
\r\n";

const CHUNKED: &[u8] =
    b"400\r\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n0\r\n\r\n";

fn bench(c: &mut Criterion) {
    // The read buffer is refilled by copying, as a socket read would; the copy is part of each iteration.
    let mut buf = BytesMut::with_capacity(4096);
    c.bench_function("parse_response/10 headers", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(HEAD);
            let head = parse_response(&mut buf, false).unwrap().unwrap();
            black_box(head)
        })
    });
    // Reference point: httparse alone (no header map, no copies), the floor of any httparse-based parser.
    c.bench_function("httparse only/10 headers", |b| {
        b.iter(|| {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut res = httparse::Response::new(&mut headers);
            black_box(res.parse(black_box(HEAD)).unwrap().unwrap())
        })
    });
    c.bench_function("body/chunked 64B", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(b"40");
            buf.extend_from_slice(&CHUNKED[3..]);
            let mut dec = BodyDecoder::new(Framing::Chunked);
            let mut n = 0;
            while let Decoded::Data(d) = dec.decode(&mut buf).unwrap() {
                n += d.len();
            }
            black_box(n)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
