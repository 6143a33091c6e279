//! Large futures put in their box where they are made. A future's whole size (its unused states
//! included) is copied each time it moves, and `Box::pin(make())` builds it on the stack first and then
//! copies it into the box: kilobytes per request on the paths that box a request's future (the HTTP/1.1
//! loop's per-request future, a gRPC call's).

use std::future::Future;
use std::pin::Pin;

/// `Box::pin(make())` without the copy: the box is taken first, so the compiler builds the future in it.
#[inline(always)]
pub fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}
