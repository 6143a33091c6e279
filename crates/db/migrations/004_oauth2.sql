-- The oauth2 plugin. Its credentials, `oauth2_credentials`, are a config kind like every one in 000_base
-- (the entity whole as jsonb, its unique `client_id`, its consumer with Kong's cascade, tags, the change
-- trigger). Its authorization codes and tokens are runtime data the proxy writes, with Kong's tables and
-- columns: no change trigger (they are not config; nodes read them on demand), deleted with their
-- credential, service or plugin, and dropped once past `ttl` (nodes delete those rows; reads skip them).

CREATE TABLE oauth2_credentials (
  id uuid PRIMARY KEY, created_at bigint NOT NULL, tags text[], entity jsonb NOT NULL,
  client_id text UNIQUE,
  consumer uuid NOT NULL REFERENCES consumers (id) ON DELETE CASCADE
);
CREATE INDEX ON oauth2_credentials (consumer);
CREATE INDEX ON oauth2_credentials USING gin (tags);
CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON oauth2_credentials FOR EACH ROW EXECUTE FUNCTION sluice_log_change();

CREATE TABLE oauth2_authorization_codes (
  id uuid PRIMARY KEY,
  created_at bigint NOT NULL,
  credential_id uuid NOT NULL REFERENCES oauth2_credentials (id) ON DELETE CASCADE,
  service_id uuid REFERENCES services (id) ON DELETE CASCADE,
  plugin_id uuid REFERENCES plugins (id) ON DELETE CASCADE,
  code text UNIQUE NOT NULL,
  authenticated_userid text,
  scope text,
  challenge text,
  challenge_method text,
  ttl timestamptz
);
CREATE INDEX ON oauth2_authorization_codes (ttl);

CREATE TABLE oauth2_tokens (
  id uuid PRIMARY KEY,
  created_at bigint NOT NULL,
  credential_id uuid NOT NULL REFERENCES oauth2_credentials (id) ON DELETE CASCADE,
  service_id uuid REFERENCES services (id) ON DELETE CASCADE,
  token_type text NOT NULL DEFAULT 'bearer',
  expires_in integer NOT NULL,
  access_token text UNIQUE NOT NULL,
  refresh_token text UNIQUE,
  authenticated_userid text,
  scope text,
  ttl timestamptz
);
CREATE INDEX ON oauth2_tokens (credential_id);
CREATE INDEX ON oauth2_tokens (ttl);
