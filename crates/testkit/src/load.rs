//! A bounded background load loop: N concurrent clients hammering one URL until stopped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a [`LoadLoop`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadStats {
    pub ok: u64,
    /// Transport errors (no HTTP response at all).
    pub failed: u64,
    pub statuses: BTreeMap<u16, u64>,
}

/// Concurrent GETs against a URL on a background thread; stops on [`LoadLoop::stop`] or after 120 s.
pub struct LoadLoop {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<LoadStats>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const MAX_DURATION: Duration = Duration::from_secs(120);

impl LoadLoop {
    pub fn start(url: &str, concurrency: usize) -> LoadLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(LoadStats::default()));
        let (url, stop2, stats2) = (url.to_string(), stop.clone(), stats.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let client = crate::client();
                let started = Instant::now();
                let mut tasks = Vec::new();
                for _ in 0..concurrency.max(1) {
                    let (client, url, stop, stats) =
                        (client.clone(), url.clone(), stop2.clone(), stats2.clone());
                    tasks.push(tokio::spawn(async move {
                        while !stop.load(Ordering::Relaxed) && started.elapsed() < MAX_DURATION {
                            let result = client.get(&url).send().await;
                            let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
                            match result {
                                Ok(resp) => {
                                    let status = resp.status().as_u16();
                                    drop(s);
                                    let body_ok = resp.bytes().await.is_ok();
                                    let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
                                    if body_ok {
                                        s.ok += 1;
                                        *s.statuses.entry(status).or_default() += 1;
                                    } else {
                                        s.failed += 1;
                                    }
                                }
                                Err(_) => s.failed += 1,
                            }
                        }
                    }));
                }
                for t in tasks {
                    let _ = t.await;
                }
            });
        });
        LoadLoop {
            stop,
            stats,
            thread: Some(thread),
        }
    }

    /// Stops the clients and returns what they saw.
    pub fn stop(mut self) -> LoadStats {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for LoadLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
