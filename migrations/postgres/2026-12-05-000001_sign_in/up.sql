-- Sign-in (issue 34): users matched by their OpenID provider's issuer and subject; the
-- state of a sign-in in flight (single use, minutes); browser sessions; and device
-- authorizations for `openhands login` (RFC 8628). Secrets are stored as SHA-256 hex only.
CREATE TABLE user_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    last_sign_in_at TIMESTAMP NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

CREATE TABLE sign_in_states (
    state_hash TEXT PRIMARY KEY NOT NULL,
    nonce TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    return_to TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL
);

CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    remote_addr TEXT,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

CREATE TABLE device_grants (
    device_code_hash TEXT PRIMARY KEY NOT NULL,
    user_code TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    remote_addr TEXT,
    interval_secs BIGINT NOT NULL,
    last_polled_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
