-- The jwt plugin's credentials, `jwt_secrets`: the same shape as every kind's table in 000_base (the entity
-- whole as jsonb, its unique `key`, its consumer with Kong's cascade, tags), its indexes and change trigger.

CREATE TABLE jwt_secrets (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  key text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE INDEX ON jwt_secrets (consumer);
CREATE INDEX ON jwt_secrets USING gin (tags);
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON jwt_secrets FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
