//! Worker threads, listeners, connections, graceful shutdown, and connection/request counters.

use crate::handler::{self, ConnInfo};
use crate::listen::{bind, ListenAddr};
use crate::pool;
use crate::settings::ProxySettings;
use crate::snapshot::SharedSnapshot;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// What every request of a worker reads.
pub struct Shared {
    pub snapshot: SharedSnapshot,
    pub settings: Arc<ProxySettings>,
    pub counters: Arc<Counters>,
}

/// Connection and request counters (Kong's `GET /status` `server` block), summed over workers.
#[derive(Default)]
pub struct Counters {
    accepted: AtomicU64,
    handled: AtomicU64,
    active: AtomicU64,
    requests: AtomicU64,
}

/// A read handle on the proxy's counters.
#[derive(Clone, Default)]
pub struct ProxyStats(Arc<Counters>);

impl ProxyStats {
    /// Kong's `server` object: `connections_accepted`, `connections_active`, `connections_handled`,
    /// `connections_reading`, `connections_writing`, `connections_waiting`, `total_requests`.
    pub fn to_kong_json(&self) -> serde_json::Value {
        let c = &self.0;
        let active = c.active.load(Ordering::Relaxed);
        serde_json::json!({
            "connections_accepted": c.accepted.load(Ordering::Relaxed),
            "connections_handled": c.handled.load(Ordering::Relaxed),
            "connections_active": active,
            "connections_reading": 0,
            "connections_writing": active,
            "connections_waiting": 0,
            "total_requests": c.requests.load(Ordering::Relaxed),
        })
    }

    pub fn total_requests(&self) -> u64 {
        self.0.requests.load(Ordering::Relaxed)
    }
}

/// The running proxy: its worker threads and their listeners.
pub struct ProxyServer {
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<Option<Duration>>,
    workers: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl ProxyServer {
    /// Binds every listen address once per worker (`SO_REUSEPORT`) and starts the workers. A port of 0 is
    /// resolved by the first worker and reused by the others, so tests can ask for an ephemeral port.
    pub fn start(
        settings: ProxySettings,
        snapshot: SharedSnapshot,
    ) -> std::io::Result<ProxyServer> {
        let mut plain: Vec<ListenAddr> = Vec::new();
        for listen in &settings.listen {
            if listen.ssl {
                tracing::warn!(addr = %listen.addr, "TLS proxy listeners are not supported yet; skipped");
            } else {
                plain.push(listen.clone());
            }
        }
        let workers = settings.workers.max(1);
        let mut per_worker: Vec<Vec<(std::net::TcpListener, u16)>> = Vec::new();
        for w in 0..workers {
            let mut listeners = Vec::new();
            for listen in plain.iter_mut() {
                let l = bind(listen)?;
                let local = l.local_addr()?;
                if w == 0 {
                    listen.addr = local;
                }
                listeners.push((l, local.port()));
            }
            per_worker.push(listeners);
        }
        let addrs = plain.iter().map(|l| l.addr).collect();
        let counters = Arc::new(Counters::default());
        let (stop, _) = watch::channel(None);
        let settings = Arc::new(settings);
        let mut handles = Vec::new();
        for (i, listeners) in per_worker.into_iter().enumerate() {
            let shared = Shared {
                snapshot: snapshot.clone(),
                settings: settings.clone(),
                counters: counters.clone(),
            };
            let stop_rx = stop.subscribe();
            let handle = std::thread::Builder::new()
                .name(format!("sluice-worker-{i}"))
                .spawn(move || run_worker(listeners, shared, stop_rx))?;
            handles.push(handle);
        }
        Ok(ProxyServer {
            addrs,
            stop,
            workers: handles,
            counters,
        })
    }

    /// The bound proxy addresses (with real ports when 0 was asked for).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.addrs.clone()
    }

    pub fn stats(&self) -> ProxyStats {
        ProxyStats(self.counters.clone())
    }

    /// Stops accepting, lets in-flight requests finish for up to `grace`, then stops the workers.
    pub fn shutdown(self, grace: Duration) {
        let _ = self.stop.send(Some(grace));
        for w in self.workers {
            let _ = w.join();
        }
    }
}

fn run_worker(
    listeners: Vec<(std::net::TcpListener, u16)>,
    shared: Shared,
    mut stop: watch::Receiver<Option<Duration>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start a worker runtime");
            return;
        }
    };
    pool::configure(
        shared.settings.upstream_keepalive,
        shared.settings.upstream_idle_timeout,
    );
    let shared = Arc::new(shared);
    runtime.block_on(async move {
        let graceful = Arc::new(GracefulShutdown::new());
        let mut accept_tasks = Vec::new();
        for (listener, port) in listeners {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, "cannot register a listener");
                    continue;
                }
            };
            accept_tasks.push(tokio::spawn(accept_loop(
                listener,
                port,
                shared.clone(),
                graceful.clone(),
            )));
        }
        let grace = loop {
            if let Some(grace) = *stop.borrow_and_update() {
                break grace;
            }
            if stop.changed().await.is_err() {
                break Duration::ZERO;
            }
        };
        for t in &accept_tasks {
            t.abort();
        }
        for t in accept_tasks {
            let _ = t.await;
        }
        if let Ok(graceful) = Arc::try_unwrap(graceful) {
            let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
        }
    });
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    local_port: u16,
    shared: Arc<Shared>,
    graceful: Arc<GracefulShutdown>,
) {
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        shared.counters.accepted.fetch_add(1, Ordering::Relaxed);
        shared.counters.handled.fetch_add(1, Ordering::Relaxed);
        let info = ConnInfo {
            peer,
            local_port,
            scheme: "http",
        };
        let conn_shared = shared.clone();
        let service = service_fn(move |req| {
            let shared = conn_shared.clone();
            shared.counters.requests.fetch_add(1, Ordering::Relaxed);
            async move { Ok::<_, std::convert::Infallible>(handler::handle(req, info, &shared).await) }
        });
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        let counters = shared.counters.clone();
        counters.active.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "downstream connection ended with an error");
            }
            counters.active.fetch_sub(1, Ordering::Relaxed);
        });
    }
}
