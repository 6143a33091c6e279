//! The tunnel of an upgraded request (WebSocket): once the upstream answered 101, bytes are copied both
//! ways between the client's connection and the upstream's until either side closes, as nginx does for an
//! upgraded connection. Runs in the request's task after the 101 was handed to the client; the upstream
//! connection is consumed (it never goes back to the pool).
//!
//! Timeouts are nginx's for upgraded connections: the tunnel closes when no byte moved either way for the
//! service's `read_timeout` (nginx re-arms `proxy_read_timeout` on every event of the tunnel), or when a
//! write, to either side, makes no progress for `write_timeout`. An end of stream from one side ends the
//! tunnel once what was read from that side has been written on: nginx has no half-closed tunnels.
//!
//! Each direction waits with a waker of its own ([`Side`]), so a wake-up pumps only the direction whose
//! socket moved: the other one would only have asked tokio again whether its socket was readable, and
//! registered its waker again (~430 of 3,700 instructions an echoed message).

use crate::conn::Conn;
use futures_util::task::AtomicWaker;
use half::{Half, Pumped};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::{Instant, Sleep};

/// The service's timeouts, as they apply to a tunnel.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// No byte moved either way for this long: the tunnel is idle and closes (`read_timeout`).
    pub idle: Duration,
    /// A write to either side stalled for this long: the tunnel closes (`write_timeout`).
    pub write: Duration,
}

/// Why a tunnel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The client closed its side (after the upstream got everything it sent).
    Client,
    /// The upstream closed its side (after the client got everything it sent).
    Upstream,
    /// No byte moved for the idle timeout.
    Idle,
    /// A write made no progress for the write timeout.
    WriteStalled,
    /// A read or write failed (a reset, a TLS error).
    Failed,
}

/// What went through a tunnel, for the log phase.
#[derive(Debug, Clone, Copy)]
pub struct Moved {
    /// Bytes read from the client and sent upstream.
    pub to_upstream: u64,
    /// Bytes read from the upstream (those that came right behind its 101 included) and sent to the client.
    pub to_client: u64,
    pub end: End,
}

/// Copies bytes both ways between `client` and the upstream connection `conn` (whose unread bytes, sent
/// right behind the 101, go to the client first) until either side closes or a timeout ends it; then
/// shuts both down (bounded by the write timeout) and says what moved.
pub async fn run<C>(mut client: C, conn: Conn, t: Timeouts) -> Moved
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let Conn {
        stream: mut upstream,
        buf,
        ..
    } = conn;
    let mut up = Half::new(&[]);
    let mut down = Half::new(&buf);
    drop(buf);
    let (mut up_waits, mut down_waits) = (Waits::new(), Waits::new());
    let mut last_progress = Instant::now();
    let mut timer: Pin<Box<Sleep>> = Box::pin(tokio::time::sleep_until(last_progress + t.idle));
    // The waker the timer was last polled with (None until then, and once it went off).
    let mut timer_waker: Option<Waker> = None;
    let end = poll_fn(|cx| loop {
        let now = Instant::now();
        let Ok(a) = up_waits.pump(cx.waker(), &mut up, &mut client, &mut upstream) else {
            return Poll::Ready(End::Failed);
        };
        let Ok(b) = down_waits.pump(cx.waker(), &mut down, &mut upstream, &mut client) else {
            return Poll::Ready(End::Failed);
        };
        if a.done {
            return Poll::Ready(End::Client);
        }
        if b.done {
            return Poll::Ready(End::Upstream);
        }
        if a.progressed || b.progressed {
            last_progress = now;
        }
        let idle_at = last_progress + t.idle;
        let stalled_at = [up.note_stall(&a, now), down.note_stall(&b, now)]
            .into_iter()
            .flatten()
            .min()
            .map(|since| since + t.write);
        match stalled_at {
            Some(at) if at <= now && at <= idle_at => return Poll::Ready(End::WriteStalled),
            _ if idle_at <= now => return Poll::Ready(End::Idle),
            _ => {}
        }
        let deadline = stalled_at.map_or(idle_at, |at| at.min(idle_at));
        // Re-armed only when the deadline came earlier, or the timer went off: every message moves the
        // idle deadline later, and re-arming per message is a trip to tokio's timer wheel; a timer that
        // goes off before the deadline is only looked at again here.
        let rearmed = deadline < timer.deadline() || timer.is_elapsed();
        if rearmed {
            timer.as_mut().reset(deadline);
        }
        // A timer polled with this task's waker stays registered until it goes off or is re-armed:
        // polled again on every message, it would only take the same waker again (and a coop budget
        // unit).
        if !rearmed
            && timer_waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        if timer.as_mut().poll(cx).is_pending() {
            timer_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        // The timer went off: look again (progress since may have moved the deadline).
        timer_waker = None;
    })
    .await;
    let _ = tokio::time::timeout(t.write, async {
        let _ = client.shutdown().await;
        let _ = upstream.shutdown().await;
    })
    .await;
    Moved {
        to_upstream: up.moved,
        to_client: down.moved,
        end,
    }
}

/// One direction's waker: notes that what the direction waits on moved, then wakes the tunnel's task.
struct Side {
    woken: AtomicBool,
    task: AtomicWaker,
}

/// One direction's wake-ups: its [`Side`], that as a waker, and whether it waits on a write (then it
/// is pumped at every wake-up: a TLS read may write, and take the writer's waker slot of a socket both
/// directions use).
struct Waits {
    side: Arc<Side>,
    waker: Waker,
    blocked: bool,
}

impl Waits {
    /// Woken from the start: the first poll pumps the direction.
    fn new() -> Waits {
        let side = Arc::new(Side {
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        Waits {
            waker: Waker::from(side.clone()),
            side,
            blocked: false,
        }
    }

    /// Pumps `half` from `from` to `to` when something it waits on moved since its last pump (or it
    /// waits on a write); otherwise it did nothing. `task` is the tunnel task's waker.
    fn pump<R, W>(
        &mut self,
        task: &Waker,
        half: &mut Half,
        from: &mut R,
        to: &mut W,
    ) -> std::io::Result<Pumped>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.side.task.register(task);
        if !self.side.woken.swap(false, Ordering::AcqRel) && !self.blocked {
            return Ok(Pumped::default());
        }
        let pumped = half.pump(&mut Context::from_waker(&self.waker), from, to)?;
        self.blocked = pumped.blocked;
        Ok(pumped)
    }
}

impl Wake for Side {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

mod half;
#[cfg(test)]
mod tests;
