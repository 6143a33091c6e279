//! Against real Redis servers: the shared one on 127.0.0.1:6379 (database 7, keys of each test's own), and
//! private `redis-server`s with a password, a user, TLS, or to kill.

use super::*;
use std::future::Future;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::task::Poll;
use std::time::Duration;

fn local(database: i64) -> Endpoint {
    Endpoint {
        host: "127.0.0.1".into(),
        port: 6379,
        username: None,
        password: None,
        database,
        tls: None,
    }
}

fn incrby(key: String, by: u64) -> impl FnOnce(&mut Vec<u8>) {
    move |out| {
        resp::command(out, 3);
        resp::arg(out, b"INCRBY");
        resp::arg(out, key.as_bytes());
        resp::arg_number(out, by);
    }
}

/// A private redis-server with `args` on a port of its own, killed on drop.
struct Private(Child, u16);

impl Private {
    fn start(args: &[&str]) -> Private {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let port_text = port.to_string();
        let tls = args.contains(&"--tls-port");
        let mut all = vec!["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
        all.extend(["--port", if tls { "0" } else { &port_text }]);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("{port}", &port_text))
            .collect();
        let child = Command::new("redis-server")
            .args(all)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        for _ in 0..500 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Private(child, port)
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            port: self.1,
            ..local(0)
        }
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn pipelined_calls_get_their_own_replies_even_after_one_is_dropped() {
    let con = local(7).connect().await.unwrap();
    let tag = uuid::Uuid::new_v4();
    // A call dropped before its reply came: its reply is read and thrown away, not given to the next.
    let mut dropped = Box::pin(con.call(1, incrby(format!("{tag}:dropped"), 1000)));
    let first_poll = std::future::poll_fn(|cx| Poll::Ready(dropped.as_mut().poll(cx))).await;
    assert!(first_poll.is_pending());
    drop(dropped);
    let mut calls = tokio::task::JoinSet::new();
    for i in 1..=50 {
        let con = con.clone();
        calls.spawn(async move { (i, con.call(1, incrby(format!("{tag}:{i}"), i)).await) });
    }
    while let Some(done) = calls.join_next().await {
        let (i, reply) = done.unwrap();
        assert_eq!(reply, Ok(vec![Some(i as i64)]));
    }
    // Two commands, one call: both replies, in order; an error reply is the call's error.
    let two = con
        .call(2, |out| {
            incrby(format!("{tag}:1"), 1)(out);
            incrby(format!("{tag}:1"), 1)(out);
        })
        .await;
    assert_eq!(two, Ok(vec![Some(2), Some(3)]));
    let wrong = con.call(1, |out| {
        resp::command(out, 2);
        resp::arg(out, b"EVALSHA");
        resp::arg(out, b"0000000000000000000000000000000000000000");
    });
    assert!(matches!(wrong.await, Err(Error::Reply(e)) if e.starts_with("ERR")));
    con.call(1, |out| {
        resp::command(out, 2);
        resp::arg(out, b"DEL");
        resp::arg(out, format!("{tag}:dropped").as_bytes());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn logs_in_with_a_password_or_a_user_and_selects_the_database() {
    let redis = Private::start(&["--requirepass", "pw"]);
    let open = |username: Option<&str>, password: Option<&str>, database| {
        let endpoint = Endpoint {
            username: username.map(Into::into),
            password: password.map(Into::into),
            database,
            ..redis.endpoint()
        };
        async move { endpoint.connect().await }
    };
    let anonymous = open(None, None, 0).await.unwrap();
    let refused = anonymous.call(1, incrby("k".into(), 1)).await;
    assert!(matches!(refused, Err(Error::Reply(e)) if e.starts_with("NOAUTH")));
    let wrong = open(None, Some("nope"), 0).await;
    assert!(matches!(wrong, Err(Error::Reply(e)) if e.starts_with("WRONGPASS")));
    let default_user = open(None, Some("pw"), 0).await.unwrap();
    assert_eq!(
        default_user.call(1, incrby("k".into(), 1)).await,
        Ok(vec![Some(1)])
    );
    let acl = ["ACL", "SETUSER", "alice", "on", ">apw", "~*", "&*", "+@all"];
    let made = default_user.call(1, |out| {
        resp::command(out, acl.len());
        acl.iter().for_each(|a| resp::arg(out, a.as_bytes()));
    });
    assert_eq!(made.await, Ok(vec![]));
    let alice = open(Some("alice"), Some("apw"), 3).await.unwrap();
    assert_eq!(
        alice.call(1, incrby("k".into(), 5)).await,
        Ok(vec![Some(5)])
    );
    // Database 3 is not database 0.
    assert_eq!(
        default_user.call(1, incrby("k".into(), 1)).await,
        Ok(vec![Some(2)])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn speaks_tls_verifying_the_server_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
        ])
        .args(["/CN=localhost", "-keyout"])
        .args([&key, Path::new("-out"), &cert])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(made.success());
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let redis = Private::start(&[
        "--tls-port",
        "{port}",
        "--tls-cert-file",
        cert,
        "--tls-key-file",
        key,
        "--tls-auth-clients",
        "no",
    ]);
    let unverified = Endpoint {
        tls: Some(sluice_tls::client_config_without_alpn(false).unwrap()),
        ..redis.endpoint()
    };
    let con = unverified.connect().await.unwrap();
    assert_eq!(con.call(1, incrby("k".into(), 2)).await, Ok(vec![Some(2)]));
    let verified = Endpoint {
        tls: Some(sluice_tls::client_config_without_alpn(true).unwrap()),
        ..redis.endpoint()
    };
    assert!(matches!(verified.connect().await, Err(Error::Broken(_))));
}

#[tokio::test(flavor = "current_thread")]
async fn a_dead_server_fails_waiting_and_later_calls() {
    let redis = Private::start(&[]);
    let con = redis.endpoint().connect().await.unwrap();
    assert_eq!(con.call(1, incrby("k".into(), 1)).await, Ok(vec![Some(1)]));
    drop(redis);
    let first = con.call(1, incrby("k".into(), 1)).await;
    assert!(matches!(first, Err(Error::Broken(_))), "{first:?}");
    let later = con.call(1, incrby("k".into(), 1)).await;
    assert!(matches!(later, Err(Error::Broken(_))), "{later:?}");
}
