//! One pipelined connection: callers write their commands into a shared output buffer and wait for their
//! replies; a driver task (spawned on the runtime that opened the connection) writes the buffer out, reads
//! the replies and hands each to its caller, in order.
//!
//! Per call that is one lock to encode and queue, one wake-up of the driver, and one wake-up back, with
//! the reply parsed straight into the caller's numbers: no command object, channel or value tree.
//! The connection ends when its last [`Connection`] handle is dropped, or at the first I/O or protocol
//! error, which every call still waiting gets (as [`Error::Broken`]).

use super::resp::{self, Parsed};
use super::Error;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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

#[derive(Default)]
struct State {
    /// Commands not yet taken by the driver.
    out: Vec<u8>,
    /// The calls whose replies are not all taken yet, oldest first; `pending[0]` has id `first_id`.
    pending: VecDeque<Pending>,
    first_id: u64,
    /// The id of the call the next reply belongs to.
    answering: u64,
    driver: Option<Waker>,
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
    waker: Option<Waker>,
    /// Its caller took the answer or is gone (its replies are still read, to keep the order).
    released: bool,
}

impl State {
    /// Drops the calls at the front that are answered and whose callers took the answer or left.
    fn pop_finished(&mut self) {
        while let Some(front) = self.pending.front() {
            if front.replies_left > 0 || !front.released {
                break;
            }
            self.pending.pop_front();
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
        for p in self.pending.iter_mut().filter(|p| p.replies_left > 0) {
            p.replies_left = 0;
            p.error = Some(Error::Broken(why.clone()));
            if let Some(w) = p.waker.take() {
                w.wake();
            }
        }
        self.answering = self.first_id + self.pending.len() as u64;
        self.broken = Some(why);
        self.pop_finished();
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
        });
        Connection(Arc::new(Handle(shared)))
    }

    /// Sends the `replies` commands `encode` writes (see [`resp`]), and waits for their replies: their
    /// numbers, in order, or the first error reply.
    pub async fn call(
        &self,
        replies: usize,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Result<Vec<Option<i64>>, Error> {
        let id = {
            let mut state = self.0 .0.lock();
            if let Some(why) = &state.broken {
                return Err(Error::Broken(why.clone()));
            }
            encode(&mut state.out);
            let id = state.first_id + state.pending.len() as u64;
            state.pending.push_back(Pending {
                replies_left: replies,
                numbers: Vec::new(),
                error: None,
                waker: None,
                released: false,
            });
            if let Some(driver) = &state.driver {
                driver.wake_by_ref();
            }
            id
        };
        Reply { conn: self, id }.await
    }
}

/// A caller's wait for the replies of call `id`.
struct Reply<'a> {
    conn: &'a Connection,
    id: u64,
}

impl Future for Reply<'_> {
    type Output = Result<Vec<Option<i64>>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.conn.0 .0.lock();
        let Some(p) = state.slot(self.id) else {
            // Not reached: a call's slot stays until its caller took the answer.
            return Poll::Ready(Err(Error::Broken("a redis reply was lost".into())));
        };
        if p.replies_left > 0 {
            if !p.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                p.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        p.released = true;
        let answer = match p.error.take() {
            Some(error) => Err(error),
            None => Ok(std::mem::take(&mut p.numbers)),
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
}

impl<S: AsyncRead + AsyncWrite + Unpin> Future for Driver<S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        loop {
            {
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
            if !read_any && !more_to_send {
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
                    if let (Some(error), None) = (error, &p.error) {
                        p.error = Some(Error::Reply(error));
                    }
                    p.replies_left -= 1;
                    if p.replies_left == 0 {
                        if let Some(w) = p.waker.take() {
                            w.wake();
                        }
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
