-- Organizations (with their app settings), users, memberships and API keys.
-- Ids are UUID text (dashed, lowercase); times are UTC with microseconds.
CREATE TABLE orgs (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    enable_proactive_conversation_starters BOOLEAN NOT NULL DEFAULT TRUE,
    max_budget_per_task DOUBLE PRECISION,
    registered_marketplaces TEXT NOT NULL DEFAULT '[]' CHECK (registered_marketplaces::jsonb IS NOT NULL),
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX orgs_name ON orgs (name);

CREATE TABLE users (
    id TEXT PRIMARY KEY NOT NULL,
    email TEXT NOT NULL UNIQUE,
    name TEXT,
    current_org_id TEXT REFERENCES orgs (id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE org_members (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_members_user ON org_members (user_id);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id TEXT REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    display_prefix TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    expires_at TIMESTAMP,
    revoked_at TIMESTAMP
);
CREATE INDEX api_keys_user ON api_keys (user_id);
