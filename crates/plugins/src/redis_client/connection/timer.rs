//! The one timer of a connection's driver, for the deadlines of all its calls (see the parent module).
//!
//! Set for the earliest deadline of the calls waiting, it is reset only when that changes (about once per
//! timeout under steady traffic), and polled only when it rang or was just set: its waker notes the ring
//! before waking the driver, so the driver's other turns (every write and read) cost one atomic swap.

use super::Shared;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use tokio::time::{Instant, Sleep};

pub(super) struct Timer {
    /// Made when the first deadline comes.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The deadline it is set for (None: not set, not polled).
    armed: Option<Instant>,
    ring: Arc<Ring>,
    /// Set since its last poll: the next poll registers its waker.
    fresh: bool,
}

/// The timer's waker: notes that it rang and wakes the driver.
struct Ring {
    rung: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for Ring {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.rung.store(true, Ordering::Release);
        let driver = self.shared.lock().driver.clone();
        if let Some(driver) = driver {
            driver.wake();
        }
    }
}

impl Timer {
    /// A timer that wakes the driver of `shared`.
    pub(super) fn new(shared: Arc<Shared>) -> Timer {
        Timer {
            sleep: None,
            armed: None,
            ring: Arc::new(Ring {
                rung: AtomicBool::new(false),
                shared,
            }),
            fresh: false,
        }
    }

    /// Sets it for `at` unless it is set for that already (None: unset).
    pub(super) fn set(&mut self, at: Option<Instant>) {
        if at == self.armed {
            return;
        }
        self.armed = at;
        self.fresh = at.is_some();
        if let Some(at) = at {
            match &mut self.sleep {
                Some(sleep) => sleep.as_mut().reset(at),
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
            }
        }
    }

    /// The deadline it was set for, once that has passed; it is unset then.
    pub(super) fn rang(&mut self) -> Option<Instant> {
        let (Some(at), Some(sleep)) = (self.armed, &mut self.sleep) else {
            return None;
        };
        if !std::mem::take(&mut self.fresh) && !self.ring.rung.swap(false, Ordering::AcqRel) {
            return None;
        }
        let ring = Waker::from(self.ring.clone());
        if sleep
            .as_mut()
            .poll(&mut Context::from_waker(&ring))
            .is_pending()
        {
            return None;
        }
        self.armed = None;
        Some(at)
    }
}
