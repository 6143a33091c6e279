-- Sluice's schema, version 000_base. One table per entity kind, named as the kind's declarative key.
--
-- Each row keeps the entity whole as `entity` (jsonb, exactly as the Admin API returns it and the node's
-- store reads it), plus the columns PostgreSQL must see to enforce Kong's rules in the write's own
-- transaction: natural keys as UNIQUE columns, foreign keys as REFERENCES with Kong's delete rule, a
-- `cache_key` UNIQUE column where Kong's uniqueness spans several fields (a plugin per name, route,
-- service and consumer; a target per upstream; an ACL group per consumer), and `tags` with a GIN index.
-- `crates/db/tests/schema.rs` checks these columns and rules against the kind table.
--
-- Propagation: every write bumps `sluice_config.version` first (the row lock serializes writers, so
-- versions commit in order), triggers log each changed row in `sluice_changes` under that version (cascaded
-- deletes too), and the writer notifies channel `sluice_config` with the version, delivered at commit.

CREATE TABLE ca_certificates (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL
);
CREATE TABLE certificates (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL
);
CREATE TABLE snis (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  name text UNIQUE,
  certificate uuid NOT NULL REFERENCES certificates (id) ON DELETE CASCADE
);
CREATE TABLE services (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  name text UNIQUE,
  client_certificate uuid REFERENCES certificates (id) ON DELETE RESTRICT
);
CREATE TABLE routes (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  name text UNIQUE,
  service uuid REFERENCES services (id) ON DELETE RESTRICT
);
CREATE TABLE upstreams (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  name text UNIQUE,
  client_certificate uuid REFERENCES certificates (id) ON DELETE RESTRICT
);
CREATE TABLE targets (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  cache_key text UNIQUE,
  upstream uuid NOT NULL REFERENCES upstreams (id) ON DELETE CASCADE
);
CREATE TABLE consumers (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  username text UNIQUE,
  custom_id text UNIQUE
);
CREATE TABLE keyauth_credentials (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  key text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE TABLE basicauth_credentials (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  username text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE TABLE acls (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  cache_key text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE TABLE plugins (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  cache_key text UNIQUE,
  service uuid REFERENCES services (id) ON DELETE CASCADE,
  route uuid REFERENCES routes (id) ON DELETE CASCADE,
  consumer uuid REFERENCES consumers (id) ON DELETE CASCADE
);

-- Foreign-key columns are indexed: a delete looks up its referencing rows, and nested lists filter by them.
CREATE INDEX ON snis (certificate);
CREATE INDEX ON services (client_certificate);
CREATE INDEX ON routes (service);
CREATE INDEX ON upstreams (client_certificate);
CREATE INDEX ON targets (upstream);
CREATE INDEX ON keyauth_credentials (consumer);
CREATE INDEX ON basicauth_credentials (consumer);
CREATE INDEX ON acls (consumer);
CREATE INDEX ON plugins (service);
CREATE INDEX ON plugins (route);
CREATE INDEX ON plugins (consumer);

CREATE INDEX ON ca_certificates USING gin (tags);
CREATE INDEX ON certificates USING gin (tags);
CREATE INDEX ON snis USING gin (tags);
CREATE INDEX ON services USING gin (tags);
CREATE INDEX ON routes USING gin (tags);
CREATE INDEX ON upstreams USING gin (tags);
CREATE INDEX ON targets USING gin (tags);
CREATE INDEX ON consumers USING gin (tags);
CREATE INDEX ON keyauth_credentials USING gin (tags);
CREATE INDEX ON basicauth_credentials USING gin (tags);
CREATE INDEX ON acls USING gin (tags);
CREATE INDEX ON plugins USING gin (tags);

CREATE TABLE sluice_config (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version bigint NOT NULL
);
INSERT INTO sluice_config (version) VALUES (0);

CREATE TABLE sluice_changes (
  version bigint NOT NULL,
  kind text NOT NULL,
  id uuid NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON sluice_changes (version);

CREATE FUNCTION sluice_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sluice_changes (version, kind, id)
    SELECT version, TG_TABLE_NAME, CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END
    FROM sluice_config;
  RETURN NULL;
END $$;

CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON ca_certificates FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON certificates FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON snis FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON services FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON routes FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON upstreams FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON targets FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON consumers FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON keyauth_credentials FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON basicauth_credentials FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON acls FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON plugins FOR EACH ROW EXECUTE FUNCTION sluice_log_change();
