//! Unit tests of `queue`.
use super::*;
use crate::logging::runtime;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// A sink that records every batch it accepts and fails the first `fail_first` attempts (or all of them
/// while `down` is set).
#[derive(Clone, Default)]
struct Recorder {
    batches: Arc<Mutex<Vec<Vec<Bytes>>>>,
    attempts: Arc<AtomicUsize>,
    fail_first: usize,
    down: Arc<AtomicBool>,
    /// Its [`Sink::merges_up_to`] (0 as 1).
    merges: usize,
}

impl Sink for Recorder {
    fn merges_up_to(&self) -> usize {
        self.merges.max(1)
    }

    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst);
        if attempt < self.fail_first || self.down.load(Ordering::SeqCst) {
            return Err(format!("attempt {attempt} refused"));
        }
        self.batches.lock().unwrap().push(batch.to_vec());
        Ok(())
    }
}

impl Recorder {
    fn sizes(&self) -> Vec<usize> {
        self.batches.lock().unwrap().iter().map(Vec::len).collect()
    }
}

fn start(config: QueueConfig, sink: &Recorder) -> Queue {
    Queue::start(
        "test",
        "test".into(),
        config,
        sink.clone(),
        runtime::handle().unwrap(),
    )
}

/// Polls `cond` for up to 10 s.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn record(i: usize) -> Bytes {
    Bytes::from(format!("{{\"n\":{i}}}"))
}

#[test]
fn batch_size_one_delivers_each_record_alone_in_order() {
    let sink = Recorder::default();
    let q = start(QueueConfig::default(), &sink);
    for i in 0..5 {
        assert!(q.push(record(i)));
    }
    wait_for("5 records", || q.stats().sent == 5);
    assert_eq!(sink.sizes(), vec![1; 5]);
    let flat: Vec<Bytes> = sink.batches.lock().unwrap().concat();
    assert_eq!(flat, (0..5).map(record).collect::<Vec<_>>());
    assert_eq!(q.stats().pending, 0);
}

#[test]
fn a_merging_sink_takes_what_waits_in_one_delivery_and_waits_for_nothing() {
    for (merges, expected) in [(0, vec![1; 5]), (10, vec![1, 4])] {
        let sink = Recorder {
            merges,
            ..Recorder::default()
        };
        sink.down.store(true, Ordering::SeqCst);
        let q = start(QueueConfig::default(), &sink);
        assert!(q.push(record(0)));
        // The first record is taken alone and retried while the sink is down; the rest wait meanwhile.
        wait_for("a first attempt", || {
            sink.attempts.load(Ordering::SeqCst) > 0
        });
        for i in 1..5 {
            assert!(q.push(record(i)));
        }
        sink.down.store(false, Ordering::SeqCst);
        wait_for("5 records", || q.stats().sent == 5);
        assert_eq!(sink.sizes(), expected, "merges_up_to {merges}");
        let flat: Vec<Bytes> = sink.batches.lock().unwrap().concat();
        assert_eq!(flat, (0..5).map(record).collect::<Vec<_>>(), "in order");
    }
}

#[test]
fn batches_fill_up_to_max_batch_size_then_the_rest_after_the_coalescing_delay() {
    let sink = Recorder::default();
    let config = QueueConfig {
        max_batch_size: 3,
        max_coalescing_delay: 2.0,
        ..QueueConfig::default()
    };
    let q = start(config, &sink);
    for i in 0..7 {
        q.push(record(i));
    }
    wait_for("two full batches", || sink.sizes().len() >= 2);
    assert_eq!(sink.sizes(), vec![3, 3], "the 7th waits for the delay");
    wait_for("the last partial batch", || q.stats().sent == 7);
    assert_eq!(sink.sizes(), vec![3, 3, 1]);
}

#[test]
fn a_full_queue_drops_new_records_and_counts_them() {
    let sink = Recorder::default();
    sink.down.store(true, Ordering::SeqCst);
    let config = QueueConfig {
        max_entries: 3,
        ..QueueConfig::default()
    };
    let q = start(config, &sink);
    let before = crate::logging::dropped_records("test");
    assert!(!q.is_full());
    let accepted: Vec<bool> = (0..5).map(|i| q.push(record(i))).collect();
    assert_eq!(accepted, [true, true, true, false, false]);
    assert!(q.is_full());
    let stats = q.stats();
    assert_eq!((stats.pending, stats.dropped), (3, 2));
    assert!(crate::logging::dropped_records("test") >= before + 2);

    // Once the sink is back, the held records go out and the queue takes new ones again.
    sink.down.store(false, Ordering::SeqCst);
    wait_for("the held records", || q.stats().sent == 3);
    assert!(q.push(record(9)));
    wait_for("the new record", || q.stats().sent == 4);
    let flat: Vec<Bytes> = sink.batches.lock().unwrap().concat();
    assert_eq!(flat, vec![record(0), record(1), record(2), record(9)]);
}

#[test]
fn max_bytes_bounds_the_queued_bytes() {
    let sink = Recorder::default();
    sink.down.store(true, Ordering::SeqCst);
    let config = QueueConfig {
        max_bytes: Some(20),
        ..QueueConfig::default()
    };
    let q = start(config, &sink);
    assert!(q.push(Bytes::from_static(&[b'a'; 12])));
    assert!(!q.push(Bytes::from_static(&[b'b'; 12])), "12 + 12 > 20");
    assert!(q.push(Bytes::from_static(&[b'c'; 8])), "12 + 8 fits");
    assert_eq!(q.stats().dropped, 1);
}

#[test]
fn a_failing_batch_is_retried_until_it_goes_through() {
    let sink = Recorder {
        fail_first: 3,
        ..Recorder::default()
    };
    let q = start(QueueConfig::default(), &sink);
    q.push(record(1));
    wait_for("delivery", || q.stats().sent == 1);
    assert_eq!(sink.attempts.load(Ordering::SeqCst), 4);
    assert_eq!(sink.sizes(), vec![1]);
    assert_eq!(q.stats().failed, 0);
}

#[test]
fn a_batch_is_given_up_after_max_retry_time() {
    let sink = Recorder::default();
    sink.down.store(true, Ordering::SeqCst);
    let config = QueueConfig {
        max_retry_time: 0.2,
        initial_retry_delay: 0.01,
        max_retry_delay: 0.05,
        ..QueueConfig::default()
    };
    let q = start(config, &sink);
    q.push(record(1));
    wait_for("giving up", || q.stats().failed == 1);
    assert_eq!(q.stats().pending, 0);
    let attempts = sink.attempts.load(Ordering::SeqCst);
    assert!(attempts >= 4, "retried several times, got {attempts}");

    let no_retry = Recorder::default();
    no_retry.down.store(true, Ordering::SeqCst);
    let q = start(
        QueueConfig {
            max_retry_time: -1.0,
            ..QueueConfig::default()
        },
        &no_retry,
    );
    q.push(record(1));
    wait_for("giving up at once", || q.stats().failed == 1);
    assert_eq!(no_retry.attempts.load(Ordering::SeqCst), 1);
}

#[test]
fn retry_delay_doubles_from_the_initial_delay_up_to_the_cap() {
    let config = QueueConfig {
        initial_retry_delay: 0.01,
        max_retry_delay: 0.1,
        ..QueueConfig::default()
    };
    let delays: Vec<u128> = (0..6)
        .map(|a| retry_delay(&config, a).as_millis())
        .collect();
    assert_eq!(delays, [10, 20, 40, 80, 100, 100]);
    assert_eq!(retry_delay(&config, u32::MAX), Duration::from_millis(100));
}

#[test]
fn dropping_the_last_handle_still_delivers_what_was_queued() {
    let sink = Recorder::default();
    let q = start(
        QueueConfig {
            max_batch_size: 10,
            max_coalescing_delay: 0.05,
            ..QueueConfig::default()
        },
        &sink,
    );
    for i in 0..4 {
        q.push(record(i));
    }
    drop(q);
    wait_for("the queued records", || {
        sink.sizes().iter().sum::<usize>() == 4
    });
}

#[test]
fn a_closed_queue_gives_up_on_a_dead_sink_instead_of_retrying() {
    let sink = Recorder::default();
    sink.down.store(true, Ordering::SeqCst);
    let q = start(QueueConfig::default(), &sink);
    for i in 0..5 {
        q.push(record(i));
    }
    let shared = q.shared();
    wait_for("a first failed attempt", || {
        sink.attempts.load(Ordering::SeqCst) > 0
    });
    drop(q);
    wait_for("the records counted as lost", || {
        shared.failed.load(Ordering::SeqCst) == 5
    });
    assert_eq!(shared.pending.load(Ordering::SeqCst), 0);
    assert!(Arc::strong_count(&shared) <= 2, "the drain task ended");
}

#[test]
fn unlimited_concurrency_delivers_records_one_by_one() {
    let sink = Recorder::default();
    let q = start(
        QueueConfig {
            max_batch_size: 5,
            max_coalescing_delay: 0.05,
            concurrency_limit: -1,
            ..QueueConfig::default()
        },
        &sink,
    );
    for i in 0..6 {
        q.push(record(i));
    }
    wait_for("6 records", || q.stats().sent == 6);
    assert_eq!(sink.sizes(), vec![1; 6]);
}

#[test]
fn a_filling_batch_waits_as_long_as_the_arrival_rate_says_within_bounds() {
    let ms = Duration::from_millis;
    // Nothing yet: one tick.
    assert_eq!(fill_time(ms(3), 0, 100), TICK);
    // 10 records in 10 ms, 20 missing: 20 ms.
    assert_eq!(fill_time(ms(10), 10, 20), ms(20));
    // Fast arrivals never wait less than a tick, slow ones never longer than the cap.
    assert_eq!(fill_time(ms(1), 100, 1), TICK);
    assert_eq!(fill_time(ms(100), 1, 99), MAX_FILL_WAIT);
}
