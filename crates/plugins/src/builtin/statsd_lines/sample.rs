//! What the metric plugins need of one finished request (the fields of Kong's log record they read),
//! packed into a few dozen bytes on the worker and read back, without copying, on the `sluice-log` thread,
//! where the metric lines are written. Packing is a handful of copies: no formatting on the worker.

use crate::ctx::{LogRecord, RequestCtx};
use crate::logging::serialize::{request_size, response_size};
use crate::stream::SessionRecord;
use bytes::Bytes;
use uuid::Uuid;

/// One request as the metric lines see it (Kong's `message`), or one L4 session's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample<'a> {
    /// An L4 session's ([`Sample::of_session`]): Kong's stream record has no `request`, `response` or
    /// request latency, only `latencies.kong`, the route and the service.
    pub stream: bool,
    /// The status sent to the client.
    pub status: u16,
    /// `request.size` and `response.size` of Kong's log record.
    pub request_size: u64,
    pub response_size: u64,
    /// `latencies.request`, `latencies.proxy` (-1 when not proxied) and `latencies.kong`, in ms.
    pub latency: u64,
    pub upstream_latency: i64,
    pub kong_latency: u64,
    pub service: Option<ServiceRef<'a>>,
    pub route: Option<RouteRef<'a>>,
    pub consumer: Option<ConsumerRef<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRef<'a> {
    pub id: Uuid,
    pub name: Option<&'a str>,
    pub host: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRef<'a> {
    pub id: Uuid,
    pub name: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerRef<'a> {
    pub id: Uuid,
    pub custom_id: Option<&'a str>,
    pub username: Option<&'a str>,
}

impl<'a> ServiceRef<'a> {
    fn of(s: &'a sluice_model::Service) -> ServiceRef<'a> {
        ServiceRef {
            id: s.id,
            name: s.name.as_deref(),
            host: &s.host,
        }
    }
}

impl<'a> RouteRef<'a> {
    fn of(r: &'a sluice_model::Route) -> RouteRef<'a> {
        RouteRef {
            id: r.id,
            name: r.name.as_deref(),
        }
    }
}

/// Marks an absent optional string in the packed form.
const NONE: u32 = u32::MAX;

/// The packed form's numbers (status, five 8-byte numbers) and its byte of flags.
const FIXED_LEN: usize = 2 + 5 * 8 + 1;

impl<'a> Sample<'a> {
    /// The sample of a finished request (in the log phase, on the worker).
    pub fn of(ctx: &RequestCtx<'a>, record: &LogRecord) -> Sample<'a> {
        Sample {
            stream: false,
            status: record.status,
            request_size: request_size(ctx, record),
            response_size: response_size(record),
            latency: record.request_latency_ms,
            upstream_latency: record.upstream_latency_ms.map_or(-1, |ms| ms as i64),
            kong_latency: record.kong_latency_ms,
            service: ctx.service.map(ServiceRef::of),
            route: ctx.route.map(RouteRef::of),
            consumer: ctx.consumer.map(|c| ConsumerRef {
                id: c.id,
                custom_id: c.custom_id.as_deref(),
                username: c.username.as_deref(),
            }),
        }
    }

    /// The sample of a finished L4 session (its `stream_log`, on the worker): the sizes and the request
    /// latency are zero and the upstream latency -1, for no line reads them.
    pub fn of_session(session: &SessionRecord<'a>) -> Sample<'a> {
        Sample {
            stream: true,
            status: session.status,
            request_size: 0,
            response_size: 0,
            latency: 0,
            upstream_latency: -1,
            kong_latency: session.kong_latency_ms,
            service: session.service.map(ServiceRef::of),
            route: session.route.map(RouteRef::of),
            consumer: None,
        }
    }

    /// The packed form: fixed-width numbers, then each present entity's id and strings. Written into a
    /// vector of exactly its size, which becomes the `Bytes` as it is (one with room left would need a
    /// second allocation for its shared header).
    pub fn pack(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.packed_len());
        out.extend_from_slice(&self.status.to_le_bytes());
        for n in [self.request_size, self.response_size, self.latency] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.upstream_latency.to_le_bytes());
        out.extend_from_slice(&self.kong_latency.to_le_bytes());
        let present = |b: bool, bit: u8| if b { bit } else { 0 };
        out.push(
            present(self.service.is_some(), 1)
                | present(self.route.is_some(), 2)
                | present(self.consumer.is_some(), 4)
                | present(self.stream, 8),
        );
        if let Some(s) = &self.service {
            out.extend_from_slice(s.id.as_bytes());
            put(&mut out, s.name);
            put(&mut out, Some(s.host));
        }
        if let Some(r) = &self.route {
            out.extend_from_slice(r.id.as_bytes());
            put(&mut out, r.name);
        }
        if let Some(c) = &self.consumer {
            out.extend_from_slice(c.id.as_bytes());
            put(&mut out, c.custom_id);
            put(&mut out, c.username);
        }
        out.into()
    }

    /// The length of [`Sample::pack`]'s bytes.
    pub(crate) fn packed_len(&self) -> usize {
        let text = |s: Option<&str>| 4 + s.map_or(0, str::len);
        let service = self
            .service
            .map_or(0, |s| 16 + text(s.name) + text(Some(s.host)));
        let route = self.route.map_or(0, |r| 16 + text(r.name));
        let consumer = self
            .consumer
            .map_or(0, |c| 16 + text(c.custom_id) + text(c.username));
        FIXED_LEN + service + route + consumer
    }

    /// Reads a packed sample back; None for bytes [`Sample::pack`] did not write.
    pub fn unpack(bytes: &'a [u8]) -> Option<Sample<'a>> {
        let mut r = Reader(bytes);
        let status = u16::from_le_bytes(r.take()?);
        let request_size = u64::from_le_bytes(r.take()?);
        let response_size = u64::from_le_bytes(r.take()?);
        let latency = u64::from_le_bytes(r.take()?);
        let upstream_latency = i64::from_le_bytes(r.take()?);
        let kong_latency = u64::from_le_bytes(r.take()?);
        let [present] = r.take()?;
        let service = if present & 1 != 0 {
            let (id, name, host) = (r.id()?, r.str()?, r.str()??);
            Some(ServiceRef { id, name, host })
        } else {
            None
        };
        let route = if present & 2 != 0 {
            Some(RouteRef {
                id: r.id()?,
                name: r.str()?,
            })
        } else {
            None
        };
        let consumer = if present & 4 != 0 {
            let (id, custom_id, username) = (r.id()?, r.str()?, r.str()?);
            Some(ConsumerRef {
                id,
                custom_id,
                username,
            })
        } else {
            None
        };
        Some(Sample {
            stream: present & 8 != 0,
            status,
            request_size,
            response_size,
            latency,
            upstream_latency,
            kong_latency,
            service,
            route,
            consumer,
        })
    }
}

/// An optional string: its length (or [`NONE`]) and its bytes.
fn put(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        None => out.extend_from_slice(&NONE.to_le_bytes()),
    }
}

/// A cursor over a packed sample.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }

    fn id(&mut self) -> Option<Uuid> {
        Some(Uuid::from_bytes(self.take()?))
    }

    /// An optional string: `Some(None)` when absent, None when the bytes are malformed.
    fn str(&mut self) -> Option<Option<&'a str>> {
        let len = u32::from_le_bytes(self.take()?);
        if len == NONE {
            return Some(None);
        }
        std::str::from_utf8(self.bytes(len as usize)?)
            .ok()
            .map(Some)
    }
}
