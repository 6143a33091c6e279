//! Concurrent checks of the same windows share one script call.
//!
//! Under load, many requests of one identifier are in flight at once. Sent one by one, each is a script
//! call Redis runs alone (a `GET` and an `INCR` per window, and the Lua call around them: most of Redis's
//! CPU per request), and a command, a reply and a wake-up here. Instead, while a call for a set of windows
//! is out, the requests that want the same windows queue. When it returns, the first of them leads the
//! next call for all that queued, asking for as many counts as there are requests. The script grants as
//! many as every window has room for, in one atomic step, so the requests let through still equal the
//! limit exactly: the first `granted` of a batch pass, in arrival order.
//!
//! A request with nothing to share with is sent at once: coalescing adds no wait when there is no queue.
//! A request that is dropped while it leads or waits (its client gone) passes the lead on, so a queue is
//! never left without a leader.
//!
//! Each worker keeps its own queues ([`QUEUES`]): requests never take a lock the workers share. That costs
//! no exactness: the script grants atomically in Redis, so calls from several workers (or several nodes)
//! for the same windows are as exact as one worker's. A worker's batch is only smaller than a node's would
//! be. A deferred future runs on the worker that made it (each worker is a `current_thread` runtime), so a
//! request leads, waits and hands over on the same worker's queues.

use super::super::window::PERIODS;
use crate::counters::Counted;
use crate::owner_id::OwnerId;
use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::collections::VecDeque;
use std::future::Future;
use std::hash::BuildHasher;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The calls in flight of one target (a [`super::Target`] and its clones): a name for its queues in each
/// worker's [`QUEUES`], which hold the calls out, by a hash of the windows they count (the script's
/// arguments, [`super::Keyed`]), each with the requests queued behind it. The windows hold identifiers a
/// client chooses: the hash is seeded at random once per process, and a hit is only shared when the
/// windows are equal too (a request whose hash another call's windows took goes alone).
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    /// Never reused: a new target (a reload) never shares a queue with an old one's requests.
    id: OwnerId,
}

/// A queue's place in a worker's map: its target's [`InFlight::id`] and the hash of its windows.
type Slot = (OwnerId, u64);

thread_local! {
    /// This worker's calls in flight, of every target.
    static QUEUES: RefCell<HashMap<Slot, Queue, rustc_hash::FxBuildHasher>> =
        const { RefCell::new(HashMap::with_hasher(rustc_hash::FxBuildHasher)) };
}

/// The call out for one set of windows and the requests waiting for the next.
struct Queue {
    windows: Arc<[u8]>,
    waiting: VecDeque<oneshot::Sender<Turn>>,
}

/// What a queued request is told.
enum Turn {
    /// Its batch's answer.
    Counted(Result<Counted, String>),
    /// The call before it returned: it sends the next one, for itself and whoever queued since.
    Lead,
}

/// A script call's reply: how many of the requests that asked were granted, and each window's count before
/// the call. Inline (a window per period at most): a call's answer allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    granted: u64,
    before: [u64; PERIODS.len()],
    windows: usize,
}

impl Tally {
    /// The reply `[granted, count before...]` (nil and negative as 0); None for no number or more windows
    /// than there are periods.
    pub fn of(reply: &[Option<i64>]) -> Option<Tally> {
        let (granted, counts) = reply.split_first()?;
        let mut before = [0; PERIODS.len()];
        for (b, n) in before.get_mut(..counts.len())?.iter_mut().zip(counts) {
            *b = super::count(n);
        }
        Some(Tally {
            granted: super::count(granted),
            before,
            windows: counts.len(),
        })
    }
}

/// Checks and counts one request in `windows` (the script's arguments): in a call of its own, or in a
/// batch with this worker's other requests for them. `call(asked)` makes the script call for `asked`
/// requests.
pub async fn check_and_count<F, Fut>(
    in_flight: &InFlight,
    windows: Arc<[u8]>,
    call: F,
) -> Result<Counted, String>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<Tally, String>>,
{
    let slot = (
        in_flight.id,
        super::super::counter_keys().hash_one(&*windows),
    );
    let mut lead = Leading {
        slot: Some(slot),
        riders: Vec::new(),
    };
    match join(slot, windows) {
        // Nobody can have queued behind a call that is not out yet.
        Joined::First => {}
        Joined::Alone => lead.slot = None,
        Joined::Queued(rx) => {
            // Not leading (yet): a drop now must not hand the lead on.
            lead.slot = None;
            let mut waiting = Waiting {
                slot,
                rx,
                answered: false,
            };
            let turn = (&mut waiting.rx).await;
            waiting.answered = true;
            match turn {
                Ok(Turn::Counted(counted)) => return counted,
                Ok(Turn::Lead) => {}
                Err(_) => return Err("the redis call this request waited on was abandoned".into()),
            }
            lead.slot = Some(slot);
            lead.riders = take_queue(slot);
        }
    }
    let reply = call(1 + lead.riders.len() as u64).await;
    lead.settle(reply)
}

/// `f` on this worker's queues; None once the thread is ending (its queues are gone, and so is every
/// request that was in them).
fn with_queues<T>(
    f: impl FnOnce(&mut HashMap<Slot, Queue, rustc_hash::FxBuildHasher>) -> T,
) -> Option<T> {
    QUEUES.try_with(|q| f(&mut q.borrow_mut())).ok()
}

/// Joins this worker's call out for `windows` (at `slot`), or starts one.
fn join(slot: Slot, windows: Arc<[u8]>) -> Joined {
    let joined = with_queues(|queues| match queues.entry(slot) {
        Entry::Occupied(mut e) if e.get().windows == windows => {
            let (tx, rx) = oneshot::channel();
            e.get_mut().waiting.push_back(tx);
            Joined::Queued(rx)
        }
        Entry::Occupied(_) => Joined::Alone,
        Entry::Vacant(e) => {
            e.insert(Queue {
                windows,
                waiting: VecDeque::new(),
            });
            Joined::First
        }
    });
    joined.unwrap_or(Joined::Alone)
}

/// Everyone queued at `slot` so far rides on the call its leader makes now; later arrivals wait for the
/// next one.
fn take_queue(slot: Slot) -> Vec<oneshot::Sender<Turn>> {
    with_queues(|queues| queues.get_mut(&slot).map(|q| q.waiting.drain(..).collect()))
        .flatten()
        .unwrap_or_default()
}

/// How a request joined the calls in flight.
enum Joined {
    /// No call for its windows was out: it leads one now.
    First,
    /// Another call's windows have the same hash: it makes its call alone, outside the map.
    Alone,
    /// It waits behind the call out for its windows.
    Queued(oneshot::Receiver<Turn>),
}

/// The leader of a call: the requests riding on it, and the hand-over when it is done or dropped.
struct Leading {
    /// The queue it leads; None for a call outside the map.
    slot: Option<Slot>,
    /// The requests whose counts this call asks for, after the leader's own.
    riders: Vec<oneshot::Sender<Turn>>,
}

impl Leading {
    /// Tells each rider its share of the reply and returns the leader's (the first).
    fn settle(mut self, reply: Result<Tally, String>) -> Result<Counted, String> {
        for (i, rider) in std::mem::take(&mut self.riders).into_iter().enumerate() {
            let _ = rider.send(Turn::Counted(share(&reply, i + 1)));
        }
        share(&reply, 0)
    }
}

impl Drop for Leading {
    /// Riders left here were not answered (the leader was dropped mid-call): they get an error, which
    /// `fault_tolerant` judges. Then the next queued request leads, or the entry goes.
    fn drop(&mut self) {
        for rider in self.riders.drain(..) {
            let abandoned = Err("the redis call was abandoned midway".to_string());
            let _ = rider.send(Turn::Counted(abandoned));
        }
        if let Some(slot) = self.slot {
            hand_over(slot);
        }
    }
}

/// A queued request. Dropped after the lead was handed to it but before it took it, it hands it on.
struct Waiting {
    slot: Slot,
    rx: oneshot::Receiver<Turn>,
    /// Its turn came and was taken.
    answered: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.answered {
            // Closed first, so that a lead sent from now on fails and goes to the next in the queue.
            self.rx.close();
            if let Ok(Turn::Lead) = self.rx.try_recv() {
                hand_over(self.slot);
            }
        }
    }
}

/// The call for the windows at `slot` is over: the first queued request that is still there leads the
/// next one, or, with none, the windows have no call in flight.
fn hand_over(slot: Slot) {
    with_queues(|queues| {
        let Some(queue) = queues.get_mut(&slot) else {
            return;
        };
        while let Some(next) = queue.waiting.pop_front() {
            if next.send(Turn::Lead).is_ok() {
                return;
            }
        }
        queues.remove(&slot);
    });
}

/// How many calls this worker has out for `in_flight`'s target.
#[cfg(test)]
fn calls(in_flight: &InFlight) -> usize {
    with_queues(|queues| queues.keys().filter(|(id, _)| *id == in_flight.id).count()).unwrap_or(0)
}

/// Request `i`'s share of a batch's reply: the first `granted` pass, each seeing the counts after its own
/// increment; the rest are refused with the counts every granted request left (the caller adds the
/// refused one itself, as for a lone refusal).
fn share(reply: &Result<Tally, String>, i: usize) -> Result<Counted, String> {
    let Tally {
        granted,
        before,
        windows,
    } = reply.as_ref().map_err(Clone::clone)?;
    let (granted, before) = (granted, &before[..*windows]);
    let i = i as u64;
    Ok(match i < *granted {
        true => Counted {
            allowed: true,
            counts: before.iter().map(|c| c + i + 1).collect(),
        },
        false => Counted {
            allowed: false,
            counts: before.iter().map(|c| c + granted).collect(),
        },
    })
}

#[cfg(test)]
mod tests;
