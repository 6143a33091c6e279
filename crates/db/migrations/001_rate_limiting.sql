-- rate-limiting's `policy: cluster`: Kong's `ratelimiting_metrics` table (same columns and key), and one
-- function that checks every window of a request and counts it in all of them or in none, atomically: it
-- takes a transaction-scoped advisory lock on the request's (identifier, service, route), so concurrent
-- requests from any number of nodes are counted one after the other and the requests let through equal the
-- limit. Rows past their `ttl` are deleted by the nodes (`sluice_db::counters::expire`).

CREATE TABLE ratelimiting_metrics (
  identifier text NOT NULL,
  period text NOT NULL,
  period_date timestamptz NOT NULL,
  service_id uuid NOT NULL,
  route_id uuid NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  ttl timestamptz,
  PRIMARY KEY (identifier, period, period_date, service_id, route_id)
);
CREATE INDEX ON ratelimiting_metrics (ttl);

CREATE FUNCTION sluice_rl_check_and_count(
  p_identifier text, p_service uuid, p_route uuid,
  p_periods text[], p_dates timestamptz[], p_limits bigint[], p_ttls timestamptz[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  counts bigint[] := '{}';
  c bigint;
  n int := coalesce(array_length(p_periods, 1), 0);
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_identifier || '|' || p_service || '|' || p_route, 7));
  FOR i IN 1 .. n LOOP
    SELECT value INTO c FROM ratelimiting_metrics
      WHERE identifier = p_identifier AND period = p_periods[i] AND period_date = p_dates[i]
        AND service_id = p_service AND route_id = p_route;
    counts := counts || coalesce(c, 0);
  END LOOP;
  FOR i IN 1 .. n LOOP
    IF counts[i] >= p_limits[i] THEN
      RETURN array_prepend(0::bigint, counts);
    END IF;
  END LOOP;
  FOR i IN 1 .. n LOOP
    INSERT INTO ratelimiting_metrics AS m
        (identifier, period, period_date, service_id, route_id, value, ttl)
      VALUES (p_identifier, p_periods[i], p_dates[i], p_service, p_route, 1, p_ttls[i])
      ON CONFLICT (identifier, period, period_date, service_id, route_id)
      DO UPDATE SET value = m.value + 1
      RETURNING value INTO c;
    counts[i] := c;
  END LOOP;
  RETURN array_prepend(1::bigint, counts);
END $$;
