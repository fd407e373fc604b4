-- Sandboxes (agent servers, authenticated by a hashed session key), conversations and their
-- append-only event log. `seq` is global and assigned at insert; search pages by (ts, seq).
CREATE TABLE sandboxes (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session_key_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE conversations (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sandbox_id TEXT REFERENCES sandboxes (id) ON DELETE SET NULL,
    title TEXT,
    execution_status TEXT,
    metadata TEXT CHECK (metadata IS NULL OR metadata::jsonb IS NOT NULL),
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX conversations_org ON conversations (org_id, created_at);

CREATE TABLE events (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    ts TIMESTAMP NOT NULL,
    payload TEXT NOT NULL CHECK (payload::jsonb IS NOT NULL),
    UNIQUE (conversation_id, event_id)
);
CREATE INDEX events_conversation_ts ON events (conversation_id, ts, seq);
CREATE INDEX events_conversation_kind_ts ON events (conversation_id, kind, ts, seq);
