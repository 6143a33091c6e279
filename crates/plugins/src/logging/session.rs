//! Kong's stream log serializer (`kong.log.serialize()` in the stream subsystem): one JSON object per
//! finished L4 session, written with [`super::json`] as the HTTP record is ([`super::serialize`]).
//!
//! Shape (Kong 3.x, `kong/pdk/log.lua`): `session {tls?, received, sent, status, server_port}`,
//! `upstream {received, sent}`, `latencies {kong, session}`, `tries` (as for requests), `route`,
//! `service`, `client_ip`, `started_at` (ms), `workspace`, `workspace_name`. There is no `request`,
//! `response`, `upstream_uri` or `source`, and never a consumer or `authenticated_entity` (a stream has
//! no authentication). `session.tls` is there only when the gateway terminated the TLS.

use super::entities::EntityJson;
use super::json::{self, Object};
use super::serialize::{epoch_ms, since_epoch, tls_fields, tries, WORKSPACE_FIELDS};
use crate::stream::SessionRecord;

/// The serialized record of one finished session (one JSON object, no trailing newline).
pub fn serialize_session(s: &SessionRecord<'_>, entities: &EntityJson) -> Vec<u8> {
    let mut out = Vec::with_capacity(2048);
    let mut o = Object::open(&mut out);
    {
        let out = o.key("session");
        // `tls` comes first, so the members after it start with a comma either way.
        match &s.tls {
            Some(tls) => {
                out.push(b'{');
                tls_fields(out, tls);
                out.extend_from_slice(b",\"received\":");
            }
            None => out.extend_from_slice(b"{\"received\":"),
        }
        json::uint(out, s.received);
        let mut session = Object::continued(out);
        json::uint(session.key("sent"), s.sent);
        json::uint(session.key("status"), s.status.into());
        json::uint(session.key("server_port"), s.server_port.into());
        session.close();
    }
    let mut upstream = Object::open(o.key("upstream"));
    json::uint(upstream.key("received"), s.sent);
    json::uint(upstream.key("sent"), s.received);
    upstream.close();
    let mut latencies = Object::open(o.key("latencies"));
    json::uint(latencies.key("kong"), s.kong_latency_ms);
    json::uint(latencies.key("session"), s.session_ms);
    latencies.close();
    if !s.tries.is_empty() {
        let started = (s.started, since_epoch(s.started_wall));
        tries(o.key("tries"), started, s.tries.iter());
    }
    if let Some(route) = s.route {
        entities.write_route(o.key("route"), route);
    }
    if let Some(service) = s.service {
        entities.write_service(o.key("service"), service);
    }
    json::ip(o.key("client_ip"), s.client.ip());
    json::uint(o.key("started_at"), epoch_ms(s.started_wall));
    o.out.extend_from_slice(WORKSPACE_FIELDS);
    o.close();
    out
}
