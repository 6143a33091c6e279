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

/// A call without a deadline, answered with its numbers.
async fn call(
    con: &Connection,
    replies: usize,
    encode: impl FnOnce(&mut Vec<u8>),
) -> Result<Vec<Option<i64>>, Error> {
    con.call(replies, None, encode, <[_]>::to_vec).await
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
    let mut dropped = Box::pin(call(&con, 1, incrby(format!("{tag}:dropped"), 1000)));
    let first_poll = std::future::poll_fn(|cx| Poll::Ready(dropped.as_mut().poll(cx))).await;
    assert!(first_poll.is_pending());
    drop(dropped);
    let mut calls = tokio::task::JoinSet::new();
    for i in 1..=50 {
        let con = con.clone();
        calls.spawn(async move { (i, call(&con, 1, incrby(format!("{tag}:{i}"), i)).await) });
    }
    while let Some(done) = calls.join_next().await {
        let (i, reply) = done.unwrap();
        assert_eq!(reply, Ok(vec![Some(i as i64)]));
    }
    // Two commands, one call: both replies, in order; an error reply is the call's error.
    let two = call(&con, 2, |out| {
        incrby(format!("{tag}:1"), 1)(out);
        incrby(format!("{tag}:1"), 1)(out);
    })
    .await;
    assert_eq!(two, Ok(vec![Some(2), Some(3)]));
    let wrong = call(&con, 1, |out| {
        resp::command(out, 2);
        resp::arg(out, b"EVALSHA");
        resp::arg(out, b"0000000000000000000000000000000000000000");
    });
    assert!(matches!(wrong.await, Err(Error::Reply(e)) if e.starts_with("ERR")));
    call(&con, 1, |out| {
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
    let refused = call(&anonymous, 1, incrby("k".into(), 1)).await;
    assert!(matches!(refused, Err(Error::Reply(e)) if e.starts_with("NOAUTH")));
    let wrong = open(None, Some("nope"), 0).await;
    assert!(matches!(wrong, Err(Error::Reply(e)) if e.starts_with("WRONGPASS")));
    let default_user = open(None, Some("pw"), 0).await.unwrap();
    assert_eq!(
        call(&default_user, 1, incrby("k".into(), 1)).await,
        Ok(vec![Some(1)])
    );
    let acl = ["ACL", "SETUSER", "alice", "on", ">apw", "~*", "&*", "+@all"];
    let made = call(&default_user, 1, |out| {
        resp::command(out, acl.len());
        acl.iter().for_each(|a| resp::arg(out, a.as_bytes()));
    });
    assert_eq!(made.await, Ok(vec![]));
    let alice = open(Some("alice"), Some("apw"), 3).await.unwrap();
    assert_eq!(
        call(&alice, 1, incrby("k".into(), 5)).await,
        Ok(vec![Some(5)])
    );
    // Database 3 is not database 0.
    assert_eq!(
        call(&default_user, 1, incrby("k".into(), 1)).await,
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
    assert_eq!(
        call(&con, 1, incrby("k".into(), 2)).await,
        Ok(vec![Some(2)])
    );
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
    assert_eq!(
        call(&con, 1, incrby("k".into(), 1)).await,
        Ok(vec![Some(1)])
    );
    drop(redis);
    let first = call(&con, 1, incrby("k".into(), 1)).await;
    assert!(matches!(first, Err(Error::Broken(_))), "{first:?}");
    let later = call(&con, 1, incrby("k".into(), 1)).await;
    assert!(matches!(later, Err(Error::Broken(_))), "{later:?}");
}

/// `*1\r\n$4\r\nPING\r\n`: a command of 14 bytes.
fn ping(out: &mut Vec<u8>) {
    resp::command(out, 1);
    resp::arg(out, b"PING");
}

/// A server on a port of its own that reads `PING`s and answers the `i`th (from 1) with `:i` after
/// `delays[i - 1]`, then with nothing (a hung Redis).
async fn slow_server(delays: Vec<Duration>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut command = [0; 14];
        for (i, delay) in delays.into_iter().enumerate() {
            socket.read_exact(&mut command).await.unwrap();
            tokio::time::sleep(delay).await;
            let reply = format!(":{}\r\n", i + 1);
            socket.write_all(reply.as_bytes()).await.unwrap();
        }
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    });
    port
}

#[tokio::test(flavor = "current_thread")]
async fn each_call_times_out_at_its_own_deadline() {
    let port = slow_server(Vec::new()).await;
    let con = Endpoint { port, ..local(0) }.connect().await.unwrap();
    let start = tokio::time::Instant::now();
    let at = |ms| Some(start + Duration::from_millis(ms));
    let later = con.call(1, at(400), ping, <[_]>::to_vec);
    let sooner = con.call(1, at(150), ping, <[_]>::to_vec);
    let never = con.call(1, None, ping, <[_]>::to_vec);
    let (mut later, mut sooner, mut never) = (Box::pin(later), Box::pin(sooner), Box::pin(never));
    // The later deadline was set first: the sooner one still comes first.
    assert_eq!(sooner.as_mut().await, Err(Error::TimedOut));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_millis(400), "{waited:?}");
    assert_eq!(later.as_mut().await, Err(Error::TimedOut));
    assert!(start.elapsed() >= Duration::from_millis(400));
    // Without a deadline a call waits (its caller bounds it).
    let short = tokio::time::timeout(Duration::from_millis(200), never.as_mut()).await;
    assert!(short.is_err(), "{short:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_reply_that_comes_after_its_deadline_is_not_given_to_the_next_call() {
    let port = slow_server(vec![Duration::from_millis(300), Duration::ZERO]).await;
    let con = Endpoint { port, ..local(0) }.connect().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
    let late = con.call(1, Some(deadline), ping, <[_]>::to_vec).await;
    assert_eq!(late, Err(Error::TimedOut));
    assert_eq!(call(&con, 1, ping).await, Ok(vec![Some(2)]));
}
