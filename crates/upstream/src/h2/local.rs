//! An HTTP/2 connection's own executor: an upstream connection's here, and a client's h2 connection's in
//! the proxy's worker (its streams' futures, the same way). hyper's HTTP/2 client hands the futures it makes to the
//! executor it was built with: the connection's I/O once, and per call one future waiting for the
//! response and (for a call with a body) one piping the body into the stream. With tokio's executor each
//! is a task: a unary call cost two spawns, and its way through them (the dispatch, the I/O, the body's
//! pipe, the I/O again, the response) as many trips through the scheduler.
//!
//! [`Local`] hands them instead to the connection's one task ([`Running::poll`], from `drive`), which
//! polls them as a `FuturesUnordered`, the connection's dispatch (hyper's `Connection`, which takes the
//! calls from their senders) among them: a wake between its futures is a push on the set's queue, and a
//! future handed over while the set is being polled (the dispatch's next call) joins it in the same turn.
//! A turn polls at most [`TURN`] futures to completion, then yields to the worker's other tasks.
//!
//! A call that was just handed to the connection also drives it once, right away ([`Nudge`]), with the
//! connection task's own waker: otherwise the call's frames would wait until the worker got round to
//! that task, behind every other task woken before it. When a client sends ten calls together, that
//! wait made the ten leave in one write after the last was routed, and come back in one read: a
//! convoy that kept the upstream (and so the client) idle while the worker routed the batch, where
//! nginx writes each call on as it is routed.

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::task::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

/// Futures finished in one turn of the connection's task before it lets others run. Each runs outside
/// tokio's per-task budget (which would otherwise be shared by all of them, and cut a turn short after
/// ~128 socket or channel polls among hundreds of calls): this bound is the set's fairness.
const TURN: usize = 256;

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The executor given to hyper's connection builder (cheap to clone: the inbox is shared).
#[derive(Clone, Default)]
pub struct Local(Arc<Inbox>);

/// Futures handed over since the connection's task last looked, and that task's waker.
#[derive(Default)]
struct Inbox {
    jobs: Mutex<Vec<Job>>,
    /// `jobs` may hold some: the task looks after every future it polls, and mostly finds none.
    any: AtomicBool,
    task: AtomicWaker,
}

impl Inbox {
    fn take(&self) -> Vec<Job> {
        if !self.any.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.jobs.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<F: Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for Local {
    fn execute(&self, fut: F) {
        let job: Job = Box::pin(tokio::task::unconstrained(fut));
        self.0
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job);
        self.0.any.store(true, Ordering::Release);
        self.0.task.wake();
    }
}

impl Local {
    pub fn new() -> Local {
        Local::default()
    }

    /// Runs the futures handed to this executor in the calling task until the last one has ended
    /// (those handed over meanwhile included). For a server connection: its streams run in its task.
    pub async fn run(self) {
        let mut running = self.running();
        drop(self);
        std::future::poll_fn(|cx| running.poll(cx)).await;
    }

    /// The set the connection's task polls. Dropping it drops every future left, handed over or not
    /// (they would otherwise keep each other, and the inbox, alive).
    pub fn running(&self) -> Running {
        Running {
            inbox: self.0.clone(),
            set: FuturesUnordered::new(),
            driver: None,
        }
    }
}

/// The connection's task's side of a [`Local`].
pub struct Running {
    inbox: Arc<Inbox>,
    set: FuturesUnordered<Job>,
    /// The connection task's waker, as it last polled: a [`Nudge`] polls with it, so whatever the
    /// nudged futures wait on wakes that task, never the call's.
    driver: Option<Waker>,
}

/// A call's way to drive its connection once, right after handing it a request. Holds the set
/// weakly: the connection task owns it, and its end drops it.
#[derive(Clone)]
pub struct Nudge(pub(super) Weak<Mutex<Running>>);

impl Nudge {
    /// Polls the connection's futures once, as its task would, unless that task is polling them now
    /// or has ended (or has not polled yet: it is about to).
    pub fn now(&self) {
        let Some(running) = self.0.upgrade() else {
            return;
        };
        let Ok(mut running) = running.try_lock() else {
            return;
        };
        let Some(driver) = running.driver.take() else {
            return;
        };
        if running.poll(&mut Context::from_waker(&driver)).is_ready() {
            // Every future ended: the task is to see it and end too.
            driver.wake_by_ref();
        }
        running.driver = Some(driver);
    }
}

impl Running {
    /// Keeps the connection task's waker for the [`Nudge`]s (cloned only when it changed).
    pub fn note_driver(&mut self, waker: &Waker) {
        if !self.driver.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.driver = Some(waker.clone());
        }
    }

    /// Polls the futures that were woken or handed over, up to a turn's worth. Ready once none is left.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.inbox.task.register(cx.waker());
        for _ in 0..TURN {
            let polled = self.set.poll_next_unpin(cx);
            // Handed over meanwhile (by a future just polled): into the set, and polled in this turn.
            let new = self.inbox.take();
            if !new.is_empty() {
                self.set.extend(new);
                continue;
            }
            match polled {
                Poll::Ready(Some(())) => {}
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
        // A turn's worth: let the worker's other tasks run, and come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        drop(self.inbox.take());
    }
}

#[cfg(test)]
mod tests;
