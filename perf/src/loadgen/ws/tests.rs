use super::*;

#[test]
fn reads_the_result_line() {
    let r = parse(&format!(
        "noise\n{MARKER}{{\"requests\":10,\"duration_s\":1.0,\"rps\":10.0,\"latency\":{{\"p50\":1.0,\"p95\":2.0,\"p99\":3.0,\"max\":4.0}},\"errors\":1,\"non_2xx\":0}}\n"
    ))
    .unwrap();
    assert_eq!((r.requests, r.errors, r.latency.p99), (10, 1, 3.0));
    assert!(parse("nothing\n").is_err());
}

#[test]
fn arguments_round_trip() {
    let args = WsLoadArgs {
        url: "http://127.0.0.1:1".into(),
        tunnels: 1000,
        routes: 3,
        duration: Duration::from_millis(2500),
        messages: None,
    };
    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Sub,
    }
    #[derive(clap::Subcommand)]
    enum Sub {
        WsLoad(WsLoadArgs),
    }
    let mut argv = vec!["sluice-perf".to_string()];
    argv.extend(args.to_args());
    let Sub::WsLoad(back) = <Cli as clap::Parser>::parse_from(argv).cmd;
    assert_eq!(
        (back.url, back.tunnels, back.routes, back.duration),
        (args.url, 1000, 3, args.duration)
    );
}

/// The driver against the built-in upstream's echo, no gateway between: every tunnel echoes.
#[tokio::test]
async fn drives_tunnels_against_the_echo() {
    let addr = crate::upstream::tests::started(2).await;
    let r = drive(&WsLoadArgs {
        url: format!("http://{addr}"),
        tunnels: 5,
        routes: 2,
        duration: Duration::from_millis(300),
        messages: None,
    })
    .await
    .unwrap();
    assert!(r.requests > 5, "{r:?}");
    assert_eq!(r.errors, 0, "{r:?}");
    assert!(
        r.latency.p50 > 0.0 && r.latency.p50 <= r.latency.max,
        "{r:?}"
    );
}

/// Counting mode: every tunnel sends exactly `--messages` messages, and all of them count.
#[tokio::test]
async fn counting_mode_sends_exactly_the_messages_asked() {
    let addr = crate::upstream::tests::started(1).await;
    let r = drive(&WsLoadArgs {
        url: format!("http://{addr}"),
        tunnels: 3,
        routes: 1,
        duration: Duration::from_millis(1),
        messages: Some(40),
    })
    .await
    .unwrap();
    assert_eq!((r.requests, r.errors), (120, 0), "{r:?}");
}
