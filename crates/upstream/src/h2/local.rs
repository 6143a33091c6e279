//! An upstream connection's own executor. hyper's HTTP/2 client hands the futures it makes to the
//! executor it was built with: the connection's I/O once, and per call one future waiting for the
//! response and (for a call with a body) one piping the body into the stream. With tokio's executor each
//! is a task: a unary call cost two spawns, and its way through them (the dispatch, the I/O, the body's
//! pipe, the I/O again, the response) as many trips through the scheduler.
//!
//! [`Local`] keeps them in a set that the connection's task polls itself ([`Local::poll`], from
//! `drive`), with the connection's dispatch (hyper's `Connection`, which takes the calls from their
//! senders) among them: one tokio task per upstream connection, and a wake between its futures is a
//! push on the set's queue. That matters most between the dispatch and the I/O: the dispatch takes the
//! next call only once the I/O has opened the last one's stream. A turn polls at most [`TURN`] futures,
//! then yields to the worker's other tasks.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Wake, Waker};

/// Futures polled in one turn of the connection's task before it lets others run. Each runs outside
/// tokio's per-task budget (which would otherwise be shared by all of them, and cut a turn short
/// after ~128 socket or channel polls among hundreds of calls): this bound is the set's fairness.
const TURN: usize = 256;

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The executor given to hyper's connection builder (cheap to clone: the set is shared).
#[derive(Clone)]
pub struct Local(Arc<Set>);

struct Set(Mutex<State>);

#[derive(Default)]
struct State {
    /// Futures woken (or new), in the order they are to be polled.
    ready: VecDeque<Arc<Node>>,
    /// Every future not yet finished, by its slot, so that they can be dropped with the set
    /// ([`Local::clear`]); `free` lists the empty slots.
    live: Vec<Option<Arc<Node>>>,
    free: Vec<usize>,
    /// How many slots of `live` are taken.
    count: usize,
    /// The connection's task is polling the set: a wake needs no wake of that task.
    running: bool,
    /// The connection's task, to be woken when a future is.
    parent: Option<Waker>,
}

/// One future of the set, and its waker.
struct Node {
    job: Mutex<Option<Job>>,
    /// In `ready` (a second wake adds nothing).
    queued: AtomicBool,
    set: Weak<Set>,
    /// Its place in the set's `live`.
    slot: usize,
}

impl Wake for Node {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(set) = self.set.upgrade() {
            set.enqueue(self.clone());
        }
    }
}

impl Set {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(&self, node: Arc<Node>) {
        let parent = {
            let mut s = self.state();
            s.ready.push_back(node);
            match s.running {
                true => None,
                false => s.parent.take(),
            }
        };
        if let Some(parent) = parent {
            parent.wake();
        }
    }
}

impl<F: Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for Local {
    fn execute(&self, fut: F) {
        let job: Job = Box::pin(tokio::task::unconstrained(fut));
        let mut s = self.0.state();
        let slot = s.free.pop().unwrap_or(s.live.len());
        let node = Arc::new(Node {
            job: Mutex::new(Some(job)),
            queued: AtomicBool::new(true),
            set: Arc::downgrade(&self.0),
            slot,
        });
        match s.live.get_mut(slot) {
            Some(free) => *free = Some(node.clone()),
            None => s.live.push(Some(node.clone())),
        }
        s.count += 1;
        drop(s);
        self.0.enqueue(node);
    }
}

impl Local {
    pub fn new() -> Local {
        Local(Arc::new(Set(Mutex::new(State::default()))))
    }

    /// Polls the futures that were woken, up to a turn's worth. Ready once no future is left.
    pub fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.0.state().running = true;
        for _ in 0..TURN {
            let node = {
                let mut s = self.0.state();
                match s.ready.pop_front() {
                    Some(node) => node,
                    None => {
                        s.running = false;
                        if s.count == 0 {
                            return Poll::Ready(());
                        }
                        if !s.parent.as_ref().is_some_and(|p| p.will_wake(cx.waker())) {
                            s.parent = Some(cx.waker().clone());
                        }
                        return Poll::Pending;
                    }
                }
            };
            node.queued.store(false, Ordering::Release);
            let waker = Waker::from(node.clone());
            let mut job = node.job.lock().unwrap_or_else(|e| e.into_inner());
            let done = job
                .as_mut()
                .is_some_and(|f| f.as_mut().poll(&mut Context::from_waker(&waker)).is_ready());
            if done {
                let finished = job.take();
                drop(job);
                // Dropped outside the set's lock: a future's drop may wake others.
                drop(finished);
                let mut s = self.0.state();
                if let Some(slot @ Some(_)) = s.live.get_mut(node.slot) {
                    *slot = None;
                    s.free.push(node.slot);
                    s.count -= 1;
                }
            }
        }
        // A turn's worth: let the worker's other tasks run, and come back.
        self.0.state().running = false;
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Drops every future left (the connection's task ended before they did), which would otherwise
    /// keep each other, and the set, alive through their wakers.
    pub fn clear(&self) {
        let live = {
            let mut s = self.0.state();
            s.free.clear();
            s.count = 0;
            std::mem::take(&mut s.live)
        };
        for node in live.into_iter().flatten() {
            let job = node.job.lock().unwrap_or_else(|e| e.into_inner()).take();
            drop(job);
        }
        self.0.state().ready.clear();
    }
}

#[cfg(test)]
mod tests;
