-- hmac-auth's credentials: Kong's `hmacauth_credentials` as a Sluice kind table (see 000_base.sql for the
-- row shape): `username` unique, the consumer referenced with Kong's cascade, changes logged for the nodes.

CREATE TABLE hmacauth_credentials (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  username text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE INDEX ON hmacauth_credentials (consumer);
CREATE INDEX ON hmacauth_credentials USING gin (tags);
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON hmacauth_credentials FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
