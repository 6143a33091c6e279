//! gRPC calls to an upstream that never answers, through the real binary: the service's `write_timeout`
//! on an upstream that takes no request data, and a call the client gives up on, which the gateway gives
//! up on too (its upstream stream is reset, as nginx closes the upstream request of a client that went
//! away), rather than leaving it open upstream until `read_timeout`.

use sluice_testkit::Gateway;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

/// An h2c server that takes each call's head, then neither reads its body nor answers; it counts the
/// calls it got and those that ended (reset by the gateway).
struct Deaf {
    port: u16,
    calls: Arc<AtomicU64>,
    ended: Arc<AtomicU64>,
}

/// Counts a call as ended when hyper drops its handler (the stream was reset).
struct Ends(Arc<AtomicU64>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Deaf {
    fn start() -> Deaf {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let (calls, ended): (Arc<AtomicU64>, Arc<AtomicU64>) = Default::default();
        let counters = (Arc::clone(&calls), Arc::clone(&ended));
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    let (calls, ended) = counters.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(
                            move |req: http::Request<hyper::body::Incoming>| {
                                calls.fetch_add(1, Ordering::SeqCst);
                                let held = (req, Ends(Arc::clone(&ended)));
                                async move {
                                    let _held = held;
                                    std::future::pending::<
                                        Result<http::Response<String>, hyper::Error>,
                                    >()
                                    .await
                                }
                            },
                        );
                        let _ = hyper::server::conn::http2::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        )
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                    });
                }
            });
        });
        Deaf { port, calls, ended }
    }

    /// A gateway whose route `deaf.grpc.test` goes to this upstream, with these timeouts (ms).
    fn gateway(&self, write_timeout: u64, read_timeout: u64) -> Gateway {
        let yaml = format!(
            r#"_format_version: "3.0"
services:
- name: deaf
  url: grpc://127.0.0.1:{port}
  write_timeout: {write_timeout}
  read_timeout: {read_timeout}
  routes: [{{name: deaf, protocols: [grpc], hosts: [deaf.grpc.test]}}]
"#,
            port = self.port
        );
        Gateway::builder(BIN).config_yaml(&yaml).start()
    }
}

/// A gRPC call of `body` to the route, through `gw`, by an h2c client.
fn call(gw: &Gateway, body: Vec<u8>) -> reqwest::RequestBuilder {
    let addr = SocketAddr::from(([127, 0, 0, 1], gw.proxy_port()));
    let client = reqwest::Client::builder()
        .no_proxy()
        .resolve("deaf.grpc.test", addr)
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let url = format!("http://deaf.grpc.test:{}/x.Y/Z", gw.proxy_port());
    client
        .post(url)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_takes_no_data_gets_the_write_timeout() {
    let deaf = Deaf::start();
    let gw = deaf.gateway(300, 60_000);
    let started = Instant::now();
    // 16 MB: far more than the upstream's flow-control windows and the gateway's send buffer take.
    let resp = tokio::time::timeout(WAIT, call(&gw, vec![0u8; 16 << 20]).send())
        .await
        .expect("an answer before read_timeout");
    let resp = resp.unwrap();
    assert_eq!(resp.status(), 504, "{}", gw.log());
    assert_eq!(resp.headers()["grpc-status"], "4");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_gives_up_on_ends_upstream() {
    let deaf = Deaf::start();
    let gw = deaf.gateway(60_000, 60_000);
    // The client gives up after 500 ms (its stream is reset), long before the service's timeouts.
    let gave_up = tokio::time::timeout(Duration::from_millis(500), call(&gw, vec![0; 5]).send());
    assert!(gave_up.await.is_err(), "the deaf upstream answered");
    assert_eq!(deaf.calls.load(Ordering::SeqCst), 1, "{}", gw.log());
    let deadline = Instant::now() + WAIT;
    while deaf.ended.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the call is still open upstream");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
