-- response-ratelimiting's `policy: cluster`: Kong's `response_ratelimiting_metrics` table (same columns and
-- key; `period` is `<limit name>_<period>`), plus the `ttl` that rate-limiting's table has, so the nodes delete
-- rows of ended windows as they do for `ratelimiting_metrics` (`sluice_db::counters::expire`). The plugin
-- reads a request's windows in access and adds what the response spent in one statement after it, as Kong does.

CREATE TABLE response_ratelimiting_metrics (
  identifier text NOT NULL,
  period text NOT NULL,
  period_date timestamptz NOT NULL,
  service_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000'::uuid,
  route_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000'::uuid,
  value bigint,
  ttl timestamptz,
  PRIMARY KEY (identifier, period, period_date, service_id, route_id)
);
CREATE INDEX ON response_ratelimiting_metrics (ttl);
