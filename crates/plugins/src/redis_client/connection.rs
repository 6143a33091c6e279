//! One pipelined connection: callers write their commands into a shared output buffer and wait for their
//! replies; a driver task (spawned on the runtime that opened the connection) writes the buffer out, reads
//! the replies and hands each to its caller, in order.
//!
//! Per call that is one lock to encode and queue, one wake-up of the driver, and one wake-up back, with
//! the reply parsed straight into the connection's number buffers and read there by the caller: no command
//! object, channel or value tree, and no allocation once the buffers exist.
//!
//! A call's deadline needs no timer of its own: the driver keeps one, set for the earliest deadline of the
//! calls still waiting. When it fires, the calls whose deadline has passed get [`Error::TimedOut`] (their
//! replies, should they still come, are read and dropped, keeping the order) and it is set for the next.
//! Deadlines are mostly in call order, so the timer is set about once per timeout, not once per call.
//!
//! The connection ends when its last [`Connection`] handle is dropped, or at the first I/O or protocol
//! error, which every call still waiting gets (as [`Error::Broken`]).

use super::resp::{self, Parsed};
use super::Error;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use timer::Timer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

mod timer;

/// A handle on one connection; clones share it. The last one dropped closes it.
#[derive(Clone)]
pub struct Connection(Arc<Handle>);

struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.closed = true;
        if let Some(driver) = state.driver.take() {
            driver.wake();
        }
    }
}

/// What the callers and the driver share.
#[derive(Default)]
struct Shared(Mutex<State>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Number buffers kept for the next calls (a call's replies are parsed into one).
const SPARE_NUMBERS: usize = 16;

#[derive(Default)]
struct State {
    /// Commands not yet taken by the driver.
    out: Vec<u8>,
    /// The calls whose replies are not all read or whose answer is not taken yet, oldest first;
    /// `pending[0]` has id `first_id`.
    pending: VecDeque<Pending>,
    first_id: u64,
    /// The id of the call the next reply belongs to.
    answering: u64,
    driver: Option<Waker>,
    /// The earliest deadline of the calls waiting (or earlier): what the driver's timer is to be set for.
    timer_at: Option<Instant>,
    /// Emptied number buffers of answered calls.
    spare: Vec<Vec<Option<i64>>>,
    /// Why the connection failed; later calls fail at once.
    broken: Option<String>,
    /// Every handle is gone: the driver stops.
    closed: bool,
}

/// A call waiting for its replies.
struct Pending {
    replies_left: usize,
    numbers: Vec<Option<i64>>,
    error: Option<Error>,
    /// Its answer is ready: every reply read, or the call failed or timed out (then replies may still be
    /// owed: they are read and dropped).
    answered: bool,
    deadline: Option<Instant>,
    waker: Option<Waker>,
    /// Its caller took the answer or is gone.
    released: bool,
}

impl Pending {
    /// Gives the answer to the caller: wakes it.
    fn answer(&mut self, error: Option<Error>) {
        if self.answered {
            return;
        }
        self.answered = true;
        if let Some(error) = error {
            self.error = Some(error);
        }
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

impl State {
    /// Drops the calls at the front whose replies are all read and whose callers took the answer or left,
    /// keeping their number buffers for the next calls.
    fn pop_finished(&mut self) {
        while let Some(front) = self.pending.front() {
            if front.replies_left > 0 || !front.released {
                break;
            }
            if let Some(mut done) = self.pending.pop_front() {
                if self.spare.len() < SPARE_NUMBERS {
                    done.numbers.clear();
                    self.spare.push(done.numbers);
                }
            }
            self.first_id += 1;
        }
    }

    /// Call `id`, unless it is answered and gone.
    fn slot(&mut self, id: u64) -> Option<&mut Pending> {
        self.pending
            .get_mut(id.wrapping_sub(self.first_id) as usize)
    }

    /// Fails every call still waiting with `why`, and every later one.
    fn fail(&mut self, why: String) {
        for p in self.pending.iter_mut() {
            p.replies_left = 0;
            p.answer(Some(Error::Broken(why.clone())));
        }
        self.answering = self.first_id + self.pending.len() as u64;
        self.broken = Some(why);
        self.pop_finished();
    }

    /// Times out the calls waiting whose deadline is `now` or earlier, and sets the timer for the earliest
    /// deadline left.
    fn expire(&mut self, now: Instant) {
        let mut next: Option<Instant> = None;
        for p in self.pending.iter_mut().filter(|p| !p.answered) {
            match p.deadline {
                Some(deadline) if deadline <= now => p.answer(Some(Error::TimedOut)),
                Some(deadline) => next = Some(next.map_or(deadline, |n| n.min(deadline))),
                None => {}
            }
        }
        self.timer_at = next;
    }
}

impl Connection {
    /// Starts the driver of `stream` on the current runtime.
    pub(super) fn start<S>(stream: S) -> Connection
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::default());
        tokio::spawn(Driver {
            stream,
            shared: shared.clone(),
            out: Vec::new(),
            written: 0,
            flushed: true,
            input: Vec::new(),
            filled: 0,
            timer: Timer::new(shared.clone()),
        });
        Connection(Arc::new(Handle(shared)))
    }

    /// Sends the `replies` commands `encode` writes (see [`resp`]), and waits for their replies until
    /// `deadline` (None: the caller bounds the wait); `read` gets their numbers, in order, unless one is an
    /// error reply, which is the call's error.
    pub async fn call<T>(
        &self,
        replies: usize,
        deadline: Option<Instant>,
        encode: impl FnOnce(&mut Vec<u8>),
        read: impl FnOnce(&[Option<i64>]) -> T,
    ) -> Result<T, Error> {
        if replies == 0 {
            return Ok(read(&[]));
        }
        let id = {
            let mut guard = self.0 .0.lock();
            let state = &mut *guard;
            if let Some(why) = &state.broken {
                return Err(Error::Broken(why.clone()));
            }
            encode(&mut state.out);
            let id = state.first_id + state.pending.len() as u64;
            state.pending.push_back(Pending {
                replies_left: replies,
                numbers: state.spare.pop().unwrap_or_default(),
                error: None,
                answered: false,
                deadline,
                waker: None,
                released: false,
            });
            if let Some(deadline) = deadline {
                if state.timer_at.is_none_or(|at| deadline < at) {
                    state.timer_at = Some(deadline);
                }
            }
            if let Some(driver) = &state.driver {
                driver.wake_by_ref();
            }
            id
        };
        let reply = Reply { conn: self, id };
        let mut read = Some(read);
        std::future::poll_fn(|cx| reply.poll_answer(cx, &mut read)).await
    }
}

/// A caller's wait for the replies of call `id`; dropped early, it leaves them to be read and dropped.
struct Reply<'a> {
    conn: &'a Connection,
    id: u64,
}

impl Reply<'_> {
    /// The call's answer once it is there, read by `read` (taken when it is).
    fn poll_answer<T, R>(
        &self,
        cx: &mut Context<'_>,
        read: &mut Option<R>,
    ) -> Poll<Result<T, Error>>
    where
        R: FnOnce(&[Option<i64>]) -> T,
    {
        let mut state = self.conn.0 .0.lock();
        let Some(p) = state.slot(self.id) else {
            // Not reached: a call's slot stays until its caller took the answer.
            return Poll::Ready(Err(Error::Broken("a redis reply was lost".into())));
        };
        if !p.answered {
            if !p.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                p.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        p.released = true;
        let answer = match (p.error.take(), read.take()) {
            (Some(error), _) => Err(error),
            (None, Some(read)) => Ok(read(&p.numbers)),
            (None, None) => Err(Error::Broken("a redis reply was read twice".into())),
        };
        state.pop_finished();
        Poll::Ready(answer)
    }
}

impl Drop for Reply<'_> {
    fn drop(&mut self) {
        let mut state = self.conn.0 .0.lock();
        if let Some(p) = state.slot(self.id) {
            p.released = true;
            p.waker = None;
        }
        state.pop_finished();
    }
}

/// Room kept free in the input buffer for a read (replies here are tens of bytes).
const READ_AT_LEAST: usize = 4096;

/// The task that owns the stream.
struct Driver<S> {
    stream: S,
    shared: Arc<Shared>,
    /// Commands being written: `out[written..]` is still to go.
    out: Vec<u8>,
    written: usize,
    flushed: bool,
    /// Bytes read and not yet parsed: `input[..filled]` (the rest is room for the next read).
    input: Vec<u8>,
    filled: usize,
    /// The one timer for the calls' deadlines.
    timer: Timer,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Future for Driver<S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        loop {
            let timer_at = {
                let mut state = this.shared.lock();
                if state.closed || state.broken.is_some() {
                    return Poll::Ready(());
                }
                if this.written == this.out.len() && !state.out.is_empty() {
                    this.out.clear();
                    this.written = 0;
                    std::mem::swap(&mut this.out, &mut state.out);
                }
                if !state
                    .driver
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    state.driver = Some(cx.waker().clone());
                }
                state.timer_at
            };
            this.timer.set(timer_at);
            let rang = this.timer.rang();
            if let Some(at) = rang {
                // The timer's clock may be a hair behind `at`: what it set off is due.
                this.shared.lock().expire(Instant::now().max(at));
            }
            let read_any = match this.write(cx).and_then(|()| this.read(cx)) {
                Ok(read_any) => read_any,
                Err(why) => {
                    this.shared.lock().fail(why);
                    return Poll::Ready(());
                }
            };
            // More commands came in while the last ones were written (from another thread).
            let more_to_send = this.written == this.out.len() && !this.shared.lock().out.is_empty();
            // After a ring, another turn sets the timer for the next deadline.
            if !read_any && !more_to_send && rang.is_none() {
                return Poll::Pending;
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Driver<S> {
    /// Writes what it can of `out` and flushes it (what is left goes when the stream is ready again).
    fn write(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let mut stream = Pin::new(&mut self.stream);
        while self.written < self.out.len() {
            match stream.as_mut().poll_write(cx, &self.out[self.written..]) {
                Poll::Ready(Ok(0)) => return Err("redis connection closed while writing".into()),
                Poll::Ready(Ok(n)) => {
                    self.written += n;
                    self.flushed = false;
                }
                Poll::Ready(Err(e)) => return Err(format!("writing to redis: {e}")),
                Poll::Pending => return Ok(()),
            }
        }
        if !self.flushed {
            match stream.poll_flush(cx) {
                Poll::Ready(Ok(())) => self.flushed = true,
                Poll::Ready(Err(e)) => return Err(format!("writing to redis: {e}")),
                Poll::Pending => {}
            }
        }
        Ok(())
    }

    /// Reads what has arrived and answers the calls whose replies are whole; whether anything was read.
    fn read(&mut self, cx: &mut Context<'_>) -> Result<bool, String> {
        let mut read_any = false;
        loop {
            if self.input.len() - self.filled < READ_AT_LEAST {
                self.input
                    .resize(self.filled + READ_AT_LEAST.max(self.input.len()), 0);
            }
            let mut buf = ReadBuf::new(&mut self.input[self.filled..]);
            match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
                Poll::Pending => return Ok(read_any),
                Poll::Ready(Err(e)) => return Err(format!("reading from redis: {e}")),
                Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                    return Err("redis closed the connection".into())
                }
                Poll::Ready(Ok(())) => {
                    self.filled += buf.filled().len();
                    read_any = true;
                    self.answer()?;
                }
            }
        }
    }

    /// Hands every whole reply in `input` to its call.
    fn answer(&mut self) -> Result<(), String> {
        let mut guard = self.shared.lock();
        let state = &mut *guard;
        let mut at = 0;
        while at < self.filled {
            let id = state.answering;
            let Some(p) = state.slot(id) else {
                return Err("a reply from redis that no command asked for".into());
            };
            match resp::parse(&self.input[at..self.filled], &mut p.numbers)? {
                Parsed::Incomplete => break,
                Parsed::Reply { len, error } => {
                    at += len;
                    if let (Some(error), None, false) = (error, &p.error, p.answered) {
                        p.error = Some(Error::Reply(error));
                    }
                    p.replies_left -= 1;
                    if p.replies_left == 0 {
                        p.answer(None);
                        state.answering += 1;
                    }
                }
            }
        }
        state.pop_finished();
        self.input.copy_within(at..self.filled, 0);
        self.filled -= at;
        Ok(())
    }
}
