-- Agent profiles (issue 25): each member's named agent launch specifications in an
-- organization. `profile` holds the profile's fields as JSON (no secret: it names an LLM
-- profile instead of holding a key); `active` marks the one the member activated.
CREATE TABLE agent_profiles (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    revision BIGINT NOT NULL CHECK (revision >= 0),
    agent_kind TEXT NOT NULL CHECK (agent_kind IN ('openhands', 'acp')),
    profile TEXT NOT NULL CHECK (profile::jsonb IS NOT NULL),
    active BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, id),
    UNIQUE (org_id, user_id, name)
);
CREATE INDEX agent_profiles_user ON agent_profiles (user_id);
