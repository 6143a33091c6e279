//! An HTTP/2 stream the client resets before its response (issue 17, defect 3): the request is no longer in
//! flight, so the connection's idle accounting (the keep-alive timeout, graceful drain) sees it idle again.

mod common;

use common::{one_service, Proxy};
use sluice_plugins::Registry;
use sluice_proxy::ProxySettings;
use sluice_testkit::EchoUpstream;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_stream_leaves_the_connection_idle() {
    let upstream = EchoUpstream::start();
    let settings = ProxySettings {
        client_header_timeout: Duration::from_millis(400),
        keepalive_timeout: Duration::from_millis(400),
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(
        &one_service(&upstream.url(), &["paths: [/]"]),
        settings,
        Registry::builtin(),
    );
    let tcp = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("h2c handshake");
    let connection = tokio::spawn(connection);
    let request = http::Request::get(format!("http://{}/slow", proxy.addr))
        .header("x-echo-delay-ms", "3000")
        .body(())
        .unwrap();
    let (response, _) = client.send_request(request, true).expect("send");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Dropping the response future resets the stream (RST_STREAM CANCEL) before the upstream answered.
    drop(response);
    // The connection is now idle: the keep-alive timeout closes it, as it would after a finished request.
    let closed = tokio::time::timeout(Duration::from_secs(2), connection).await;
    assert!(
        closed.is_ok(),
        "the connection stayed open: the reset request still counts as in flight"
    );
    drop(client);
}
