use super::*;

struct Marker;

impl Marker {
    fn log(&self, _: &RequestCtx<'_>, _: &LogRecord) {}
    fn header_filter(&self, _: &mut RequestCtx<'_>, _: &mut http::response::Parts) {}
}

/// The chain learns a plugin's phases from its registered handlers, and from nothing else.
#[test]
fn phases_are_the_registered_handlers() {
    let none = Registered::new("none", Marker).build();
    assert!(!none.has_header_filter() && !none.has_body_filter() && !none.has_log());
    let some = Registered::new("some", Marker)
        .log(Marker::log)
        .header_filter(Marker::header_filter)
        .build();
    assert!(some.has_header_filter() && some.has_log() && !some.has_body_filter());
    assert_eq!(some.name(), "some");
    assert!(!some.needs_request_body() && some.metrics_flags().is_none());
}
