//! The standard gRPC health service (`grpc.health.v1.Health`, its unary `Check`) of the test upstream, as
//! tonic-health would serve it but hand-written like the rest of this server: the whole server's status
//! (any `service` name asked for gets it), which a test switches between `SERVING` and `NOT_SERVING`, and
//! a count of the checks answered (the gateway's active probes).

use super::Boxed;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use tonic::server::UnaryService;

/// The service's path.
pub(super) const CHECK: &str = "/grpc.health.v1.Health/Check";

/// `HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Request {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `HealthCheckResponse`; `status` 1 is `SERVING`, 2 `NOT_SERVING`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Response {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

pub(super) type Codec = tonic_prost::ProstCodec<Response, Request>;

/// The server's health: what `Check` answers, and how many it answered. Shared by its connections.
#[derive(Clone)]
pub(super) struct Health(Arc<(AtomicI32, AtomicU64)>);

impl Health {
    /// A serving server.
    pub fn new() -> Health {
        Health(Arc::new((AtomicI32::new(1), AtomicU64::new(0))))
    }

    pub fn set_serving(&self, serving: bool) {
        self.0
             .0
            .store(if serving { 1 } else { 2 }, Ordering::SeqCst);
    }

    pub fn checks(&self) -> u64 {
        self.0 .1.load(Ordering::SeqCst)
    }
}

impl UnaryService<Request> for Health {
    type Response = Response;
    type Future = Boxed<tonic::Response<Response>>;
    fn call(&mut self, _: tonic::Request<Request>) -> Self::Future {
        self.0 .1.fetch_add(1, Ordering::SeqCst);
        let status = self.0 .0.load(Ordering::SeqCst);
        Box::pin(async move { Ok(tonic::Response::new(Response { status })) })
    }
}
