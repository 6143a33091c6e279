//! The proxy server: binds the listeners, starts the workers, exposes counters, and shuts down gracefully.

use crate::listen::{bind, Bind, ListenAddr};
use crate::realip::Trust;
use crate::settings::ProxySettings;
use crate::shared::Shared;
use crate::snapshot::SharedSnapshot;
use crate::stats::{Counters, ProxyStats};
use crate::tls;
use crate::worker::{self, Listener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// The running proxy: its worker threads and their listeners.
pub struct ProxyServer {
    addrs: Vec<ListenAddr>,
    stream_addrs: Vec<crate::StreamListen>,
    stop: watch::Sender<Option<Duration>>,
    workers: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl ProxyServer {
    /// Binds every listen address once per worker (`SO_REUSEPORT`, the kernel spreads the connections) and
    /// starts the workers. A port of 0 is resolved by the first bind and reused by the other workers, so
    /// tests can ask for an ephemeral port. `ssl` addresses need `settings.default_certificate`.
    /// `published`, when the config source has one, changes each time it makes a new snapshot live.
    pub fn start(
        settings: ProxySettings,
        snapshot: SharedSnapshot,
        published: Option<watch::Receiver<u64>>,
    ) -> std::io::Result<ProxyServer> {
        let mut addrs: Vec<ListenAddr> = settings.listen.clone();
        let mut acceptors = Vec::with_capacity(addrs.len());
        for listen in &addrs {
            acceptors.push(match (listen.ssl, &settings.default_certificate) {
                (false, _) => None,
                (true, Some(default)) => Some(tls::acceptor(&snapshot, default, listen.http2)?),
                (true, None) => {
                    return Err(std::io::Error::other(format!(
                        "{}: an ssl listener needs a default certificate",
                        listen.addr
                    )))
                }
            });
        }
        if settings.stream_listen.iter().any(|l| l.ssl) && settings.default_certificate.is_none() {
            return Err(std::io::Error::other(
                "an ssl stream listener needs a default certificate",
            ));
        }
        let mut stream_addrs = settings.stream_listen.clone();
        sluice_upstream::dns::configure(&settings.dns);
        let workers = settings.workers.max(1);
        let mut per_worker = Vec::with_capacity(workers);
        for w in 0..workers {
            let how = if w == 0 { Bind::Claim } else { Bind::Join };
            let mut listeners = Vec::new();
            for (listen, tls) in addrs.iter_mut().zip(&acceptors) {
                let l = bind(listen, how)?;
                let local = l.local_addr()?;
                if w == 0 {
                    listen.addr = local;
                }
                listeners.push(Listener {
                    socket: l,
                    port: local.port(),
                    tls: tls.clone(),
                });
            }
            let mut streams = Vec::new();
            for listen in stream_addrs.iter_mut() {
                let bound = crate::stream::bind(listen, how)?;
                if w == 0 {
                    listen.addr = bound.local_addr()?;
                }
                streams.push(bound);
            }
            per_worker.push((listeners, streams));
        }
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            snapshot,
            trust: Trust::new(&settings),
            settings: Arc::new(settings),
            counters: counters.clone(),
        });
        let (stop, _) = watch::channel(None);
        crate::checker::start(shared.snapshot.clone(), stop.subscribe(), published)?;
        let mut handles = Vec::new();
        for (i, (listeners, streams)) in per_worker.into_iter().enumerate() {
            let (shared, stop_rx) = (shared.clone(), stop.subscribe());
            let handle = std::thread::Builder::new()
                .name(format!("sluice-worker-{i}"))
                .spawn(move || worker::run(i, listeners, streams, shared, stop_rx))?;
            handles.push(handle);
        }
        Ok(ProxyServer {
            addrs,
            stream_addrs,
            stop,
            workers: handles,
            counters,
        })
    }

    /// The bound proxy listeners (with real ports when 0 was asked for).
    pub fn local_addrs(&self) -> Vec<ListenAddr> {
        self.addrs.clone()
    }

    /// The bound stream listeners (with real ports when 0 was asked for).
    pub fn stream_addrs(&self) -> Vec<crate::StreamListen> {
        self.stream_addrs.clone()
    }

    /// Connection and request counters, summed over the workers.
    pub fn stats(&self) -> ProxyStats {
        ProxyStats(self.counters.clone())
    }

    /// Stops accepting at once, lets in-flight requests finish for up to `grace` (idle keep-alive
    /// connections are closed), then stops the workers and returns when their threads have exited.
    pub fn shutdown(self, grace: Duration) {
        let _ = self.stop.send(Some(grace));
        for w in self.workers {
            let _ = w.join();
        }
    }
}
