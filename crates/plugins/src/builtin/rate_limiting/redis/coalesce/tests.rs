//! Coalescing on its own, with a counter in memory standing in for the script (the real script is
//! tested against Redis in `redis/tests.rs`): batches form while a call is out, stay exact, and a
//! request dropped while it leads or waits never strands the ones behind it.

use super::*;
use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The script's arithmetic over one window of `limit`: grants what fits and counts it.
#[derive(Default)]
struct Store {
    count: Cell<u64>,
    calls: Cell<u64>,
    asked: RefCell<Vec<u64>>,
}

impl Store {
    fn grant(&self, asked: u64, limit: u64) -> Tally {
        let before = self.count.get();
        let granted = asked.min(limit.saturating_sub(before));
        self.count.set(before + granted);
        self.calls.set(self.calls.get() + 1);
        self.asked.borrow_mut().push(asked);
        Tally::of(&[Some(granted as i64), Some(before as i64)]).unwrap()
    }
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<Counted, String>> + 'a>>;

/// A request whose call waits for `gate` (so that others queue behind it) before the store answers.
fn request<'a>(
    in_flight: &'a InFlight,
    store: Rc<Store>,
    gate: Rc<tokio::sync::Notify>,
    limit: u64,
) -> Boxed<'a> {
    Box::pin(check_and_count(
        in_flight,
        std::sync::Arc::from(&b"w"[..]),
        move |asked| async move {
            gate.notified().await;
            Ok(store.grant(asked, limit))
        },
    ))
}

fn poll(f: &mut Boxed<'_>) -> Poll<Result<Counted, String>> {
    f.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn requests_queued_behind_a_call_share_the_next_and_stay_exact() {
    let (in_flight, store) = (InFlight::default(), Rc::new(Store::default()));
    let gate = Rc::new(tokio::sync::Notify::new());
    let mut requests: Vec<_> = (0..50)
        .map(|_| request(&in_flight, store.clone(), gate.clone(), 20))
        .collect();
    let mut results: Vec<Option<Result<Counted, String>>> = (0..50).map(|_| None).collect();
    // Poll every request, then let the calls made so far return; again until all are answered.
    for _ in 0..10 {
        for (result, f) in results.iter_mut().zip(&mut requests) {
            if result.is_none() {
                if let Poll::Ready(r) = poll(f) {
                    *result = Some(r);
                }
            }
        }
        gate.notify_waiters();
    }
    let results: Vec<_> = results.into_iter().map(|r| r.expect("answered")).collect();
    let allowed: Vec<_> = results
        .iter()
        .filter(|r| r.as_ref().unwrap().allowed)
        .collect();
    assert_eq!(allowed.len(), 20, "exactly the limit passes");
    let mut seen: Vec<u64> = allowed
        .iter()
        .map(|r| r.as_ref().unwrap().counts[0])
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1..=20).collect::<Vec<_>>(),
        "each passing request has its own count"
    );
    for refused in results.iter().filter(|r| !r.as_ref().unwrap().allowed) {
        assert_eq!(refused.as_ref().unwrap().counts, [20]);
    }
    assert_eq!(store.calls.get(), 2, "{:?}", store.asked.borrow());
    assert_eq!(
        *store.asked.borrow(),
        [1, 49],
        "the first alone, then the queue at once"
    );
    assert_eq!(calls(&in_flight), 0);
}

#[test]
fn a_leader_dropped_midcall_fails_its_riders_and_hands_on_the_lead() {
    let (in_flight, store) = (InFlight::default(), Rc::new(Store::default()));
    let gate = Rc::new(tokio::sync::Notify::new());
    let mut a = request(&in_flight, store.clone(), gate.clone(), 10);
    assert!(poll(&mut a).is_pending(), "a's call is out");
    let mut b = request(&in_flight, store.clone(), gate.clone(), 10);
    let mut c = request(&in_flight, store.clone(), gate.clone(), 10);
    assert!(
        poll(&mut b).is_pending() && poll(&mut c).is_pending(),
        "queued"
    );
    drop(a);
    // b leads now, c rides on b's call.
    assert!(poll(&mut b).is_pending());
    gate.notify_waiters();
    let b = poll(&mut b);
    assert!(
        matches!(&b, Poll::Ready(Ok(c)) if c.allowed && c.counts == [1]),
        "{b:?}"
    );
    let c = poll(&mut c);
    assert!(
        matches!(&c, Poll::Ready(Ok(c)) if c.allowed && c.counts == [2]),
        "{c:?}"
    );
    assert_eq!(*store.asked.borrow(), [2]);
    assert_eq!(calls(&in_flight), 0);
}

#[test]
fn a_request_dropped_after_being_handed_the_lead_hands_it_on() {
    let (in_flight, store) = (InFlight::default(), Rc::new(Store::default()));
    let gate = Rc::new(tokio::sync::Notify::new());
    let mut a = request(&in_flight, store.clone(), gate.clone(), 10);
    assert!(poll(&mut a).is_pending());
    let mut b = request(&in_flight, store.clone(), gate.clone(), 10);
    let mut c = request(&in_flight, store.clone(), gate.clone(), 10);
    assert!(poll(&mut b).is_pending() && poll(&mut c).is_pending());
    gate.notify_waiters();
    assert!(
        matches!(poll(&mut a), Poll::Ready(Ok(_))),
        "a is answered and hands the lead to b"
    );
    drop(b);
    assert!(poll(&mut c).is_pending(), "c leads now");
    gate.notify_waiters();
    let c = poll(&mut c);
    assert!(
        matches!(&c, Poll::Ready(Ok(c)) if c.allowed && c.counts == [2]),
        "{c:?}"
    );
    assert_eq!(*store.asked.borrow(), [1, 1]);
    assert_eq!(calls(&in_flight), 0);
}

#[test]
fn a_batch_past_the_limit_refuses_its_tail_with_the_full_counts() {
    let reply = Ok(Tally::of(&[Some(2), Some(8), Some(3)]).unwrap());
    let counted: Vec<_> = (0..4).map(|i| share(&reply, i).unwrap()).collect();
    assert!(counted[0].allowed && counted[0].counts == [9, 4]);
    assert!(counted[1].allowed && counted[1].counts == [10, 5]);
    assert!(!counted[2].allowed && counted[2].counts == [10, 5]);
    assert!(!counted[3].allowed && counted[3].counts == [10, 5]);
    assert!(share(&Err("down".into()), 0).is_err());
    assert_eq!(Tally::of(&[]), None, "an empty reply");
    assert_eq!(Tally::of(&[Some(1); 8]), None, "more windows than periods");
    let nil_and_negative = Tally::of(&[Some(1), None, Some(-4)]).unwrap();
    assert_eq!(share(&Ok(nil_and_negative), 0).unwrap().counts, [1, 1]);
}

#[test]
fn windows_that_share_only_a_hash_do_not_share_a_call() {
    let in_flight = InFlight::default();
    let (a, b) = (
        std::sync::Arc::<[u8]>::from(&b"a"[..]),
        std::sync::Arc::<[u8]>::from(&b"b"[..]),
    );
    let slot = (in_flight.id, 7);
    assert!(matches!(join(slot, a.clone()), Joined::First));
    assert!(
        matches!(join(slot, b), Joined::Alone),
        "another call's hash, other windows: a call of its own"
    );
    assert!(
        matches!(join(slot, a), Joined::Queued(_)),
        "the same windows: queued behind the call"
    );
    let queued = with_queues(|queues| queues[&slot].waiting.len());
    assert_eq!(queued, Some(1));
}

/// One window of `limit` that every worker counts in, granting as the script does (atomically), and each
/// call's worker and size.
struct SharedStore {
    limit: u64,
    state: std::sync::Mutex<(u64, Vec<(std::thread::ThreadId, u64)>)>,
}

impl SharedStore {
    fn grant(&self, asked: u64) -> Tally {
        let mut state = self.state.lock().unwrap();
        let before = state.0;
        let granted = asked.min(self.limit.saturating_sub(before));
        state.0 += granted;
        state.1.push((std::thread::current().id(), asked));
        Tally::of(&[Some(granted as i64), Some(before as i64)]).unwrap()
    }
}

/// Polls each of `futures` in turn until all are done; `polled` is called once every one was polled once.
async fn join_all<T>(
    mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>,
    polled: impl FnOnce(),
) -> Vec<T> {
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut polled = Some(polled);
    std::future::poll_fn(|cx| {
        for (f, d) in futures.iter_mut().zip(&mut done) {
            if d.is_none() {
                if let Poll::Ready(t) = f.as_mut().poll(cx) {
                    *d = Some(t);
                }
            }
        }
        if let Some(polled) = polled.take() {
            polled();
        }
        match done.iter().all(Option::is_some) {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// Two workers (threads, each with its runtime) send requests for the same windows of one target at once:
/// each batches its own queue (its first request alone, then the rest in one call), none waits on the
/// other's call, and what the store granted them together is the limit, each with a count of its own.
#[test]
fn each_worker_coalesces_its_own_queue_and_together_they_stay_exact() {
    const PER_WORKER: usize = 40;
    let store = Arc::new(SharedStore {
        limit: 50,
        state: Default::default(),
    });
    let in_flight = Arc::new(InFlight::default());
    // The calls wait for this until both workers have polled every request once.
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (polled_tx, polled_rx) = std::sync::mpsc::channel();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (store, in_flight) = (store.clone(), in_flight.clone());
            let (release, polled) = (release.clone(), polled_tx.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let requests = (0..PER_WORKER)
                    .map(|_| {
                        let (store, release) = (store.clone(), release.clone());
                        let windows = Arc::from(&b"w"[..]);
                        Box::pin(check_and_count(
                            &in_flight,
                            windows,
                            move |asked| async move {
                                release.acquire().await.unwrap().forget();
                                Ok(store.grant(asked))
                            },
                        ))
                            as Pin<Box<dyn Future<Output = Result<Counted, String>>>>
                    })
                    .collect();
                let counted = runtime.block_on(join_all(requests, || polled.send(()).unwrap()));
                (std::thread::current().id(), counted)
            })
        })
        .collect();
    polled_rx.recv().unwrap();
    polled_rx.recv().unwrap();
    release.add_permits(100);
    let mut passed = Vec::new();
    for worker in workers {
        let (id, counted) = worker.join().unwrap();
        let asked: Vec<u64> = (store.state.lock().unwrap().1.iter())
            .filter(|(thread, _)| *thread == id)
            .map(|(_, asked)| *asked)
            .collect();
        assert_eq!(asked, [1, PER_WORKER as u64 - 1], "its own batches");
        for counted in counted {
            let counted = counted.unwrap();
            if counted.allowed {
                passed.push(counted.counts[0]);
            }
        }
    }
    passed.sort_unstable();
    assert_eq!(passed, (1..=50).collect::<Vec<_>>(), "exactly the limit");
    assert_eq!(store.state.lock().unwrap().0, 50);
}
