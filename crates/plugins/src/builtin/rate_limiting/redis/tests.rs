use super::*;

fn config(port: u16) -> RedisConfig {
    RedisConfig {
        host: Some("127.0.0.1".into()),
        port: Some(port),
        database: Some(7),
        timeout: Some(500),
        ..RedisConfig::default()
    }
}

#[test]
fn targets_as_urls() {
    let t = Target::new(&config(6379)).unwrap();
    assert_eq!(t.url, "redis://127.0.0.1:6379/7");
    let t = Target::new(&RedisConfig {
        username: Some("u".into()),
        password: Some("p@ss:w".into()),
        ssl: Some(true),
        ..config(6380)
    })
    .unwrap();
    assert_eq!(t.url, "rediss://u:p%40ss%3Aw@127.0.0.1:6380/7#insecure");
    assert!(Target::new(&RedisConfig::default()).is_err());
}

/// A window with its limit, as these tests write them.
struct Window {
    key: String,
    limit: u64,
    ttl_secs: u64,
}

/// The script's arguments for `windows`.
fn keyed(windows: &[Window]) -> Keyed {
    let windows: Vec<(&[u8], u64, u64)> = windows
        .iter()
        .map(|w| (w.key.as_bytes(), w.limit, w.ttl_secs))
        .collect();
    Keyed::new(&windows)
}

/// Against the real Redis on 127.0.0.1:6379 (database 7, keys of this test only).
#[tokio::test(flavor = "current_thread")]
async fn windows_are_counted_together_and_refusals_count_nothing() {
    let target = Target::new(&config(6379)).unwrap();
    let tag = uuid::Uuid::new_v4();
    let windows = [
        Window {
            key: format!("ratelimit:{tag}:a"),
            limit: 2,
            ttl_secs: 60,
        },
        Window {
            key: format!("ratelimit:{tag}:b"),
            limit: 3,
            ttl_secs: 3600,
        },
    ];
    let first = check_and_count(&target, &keyed(&windows)).await.unwrap();
    assert!(first.allowed);
    assert_eq!(first.counts, [1, 1]);
    let second = check_and_count(&target, &keyed(&windows)).await.unwrap();
    assert_eq!((second.allowed, second.counts), (true, vec![2, 2]));
    let third = check_and_count(&target, &keyed(&windows)).await.unwrap();
    assert_eq!(
        (third.allowed, third.counts),
        (false, vec![2, 2]),
        "refused, nothing counted"
    );
    let ttl = ttl_then_delete(&target, &windows, 1).await;
    assert!(ttl > 3500 && ttl <= 3600, "{ttl}");
}

/// A connection of the `redis` crate's (an independent client) to `target`'s database.
async fn connect(target: &Target) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    redis::Client::open(target.url.as_str())?
        .get_multiplexed_async_connection()
        .await
}

/// The time to live of `windows[i]`'s key, then every window's key deleted.
async fn ttl_then_delete(target: &Target, windows: &[Window], i: usize) -> i64 {
    let mut con = connect(target).await.unwrap();
    let ttl: i64 = redis::cmd("TTL")
        .arg(&windows[i].key)
        .query_async(&mut con)
        .await
        .unwrap();
    let keys: Vec<&str> = windows.iter().map(|w| w.key.as_str()).collect();
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut con)
        .await
        .unwrap();
    ttl
}

#[tokio::test(flavor = "current_thread")]
async fn an_unreachable_redis_is_an_error_not_a_hang() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = Target::new(&config(port)).unwrap();
    let windows = [Window {
        key: "k".into(),
        limit: 1,
        ttl_secs: 1,
    }];
    let started = std::time::Instant::now();
    assert!(check_and_count(&target, &keyed(&windows)).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// Against the real Redis: requests in flight together share calls, and the script's batch arithmetic
/// lets exactly the limit through, each passing request with a count of its own.
#[tokio::test(flavor = "current_thread")]
async fn concurrent_requests_let_exactly_the_limit_through() {
    let target = Target::new(&config(6379)).unwrap();
    let tag = uuid::Uuid::new_v4();
    let windows = std::sync::Arc::new([
        Window {
            key: format!("ratelimit:{tag}:minute"),
            limit: 25,
            ttl_secs: 60,
        },
        Window {
            key: format!("ratelimit:{tag}:hour"),
            limit: 1000,
            ttl_secs: 3600,
        },
    ]);
    let mut set = tokio::task::JoinSet::new();
    let both = keyed(&windows[..]);
    for _ in 0..60 {
        let (target, both) = (target.clone(), both.clone());
        set.spawn(async move { check_and_count(&target, &both).await });
    }
    let mut passed = Vec::new();
    while let Some(counted) = set.join_next().await {
        let counted = counted.unwrap().unwrap();
        match counted.allowed {
            true => passed.push(counted.counts),
            false => assert_eq!(counted.counts, [25, 25], "refused with the full window"),
        }
    }
    passed.sort();
    let expected: Vec<Vec<u64>> = (1..=25).map(|n| vec![n, n]).collect();
    assert_eq!(passed, expected);
    let mut con = connect(&target).await.unwrap();
    let counts: Vec<u64> = redis::cmd("MGET")
        .arg(&windows[0].key)
        .arg(&windows[1].key)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(counts, [25, 25]);
    let ttl = ttl_then_delete(&target, &windows[..], 0).await;
    assert!(ttl > 50 && ttl <= 60, "{ttl}");
}

/// A Redis (database 0: no `SELECT` when connecting) that answers the first command it reads with a one-window grant, then hangs (reads, never
/// answers).
async fn answers_once_then_hangs() -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0; 4096];
        let _ = socket.read(&mut buf).await.unwrap();
        socket.write_all(b"*2\r\n:1\r\n:0\r\n").await.unwrap();
        while socket.read(&mut buf).await.is_ok_and(|n| n > 0) {}
    });
    port
}

#[tokio::test(flavor = "current_thread")]
async fn a_hung_redis_is_an_error_once_the_timeout_has_passed() {
    let port = answers_once_then_hangs().await;
    let config = RedisConfig {
        database: Some(0),
        ..config(port)
    };
    let target = Target::new(&config).unwrap();
    let windows = keyed(&[Window {
        key: "k".into(),
        limit: 10,
        ttl_secs: 60,
    }]);
    let first = check_and_count(&target, &windows).await.unwrap();
    assert_eq!((first.allowed, first.counts), (true, vec![1]));
    // On the cached connection, now hung: the 500 ms timeout, not sooner, not much later.
    let started = std::time::Instant::now();
    let hung = check_and_count(&target, &windows).await;
    let waited = started.elapsed();
    assert_eq!(hung, Err("redis did not answer within 500 ms".into()));
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
}
