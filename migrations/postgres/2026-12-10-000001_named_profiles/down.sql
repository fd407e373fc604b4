-- Back to the JSON arrays and `agent_profiles`.
ALTER TABLE user_settings ADD COLUMN profiles TEXT NOT NULL DEFAULT '[]' CHECK (profiles::jsonb IS NOT NULL);
ALTER TABLE user_settings ADD COLUMN active_profile TEXT;
ALTER TABLE org_defaults ADD COLUMN profiles TEXT NOT NULL DEFAULT '[]' CHECK (profiles::jsonb IS NOT NULL);
ALTER TABLE org_defaults ADD COLUMN active_profile TEXT;

UPDATE user_settings SET
    profiles = COALESCE((
        SELECT json_agg(json_build_object('name', n.name, 'config', n.body::json, 'api_key_sealed', n.secret_sealed) ORDER BY n.name COLLATE "C")::text
        FROM named_profiles n
        WHERE n.org_id = user_settings.org_id AND n.owner = user_settings.user_id AND n.collection = 'llm'), '[]'),
    active_profile = (
        SELECT name FROM named_profiles n
        WHERE n.org_id = user_settings.org_id AND n.owner = user_settings.user_id AND n.collection = 'llm' AND n.active);

UPDATE org_defaults SET
    profiles = COALESCE((
        SELECT json_agg(json_build_object('name', n.name, 'config', n.body::json, 'api_key_sealed', n.secret_sealed) ORDER BY n.name COLLATE "C")::text
        FROM named_profiles n
        WHERE n.org_id = org_defaults.org_id AND n.owner = '' AND n.collection = 'llm'), '[]'),
    active_profile = (
        SELECT name FROM named_profiles n
        WHERE n.org_id = org_defaults.org_id AND n.owner = '' AND n.collection = 'llm' AND n.active);

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
INSERT INTO agent_profiles
SELECT org_id, owner, id, name, revision, kind, body, active, created_at, updated_at
FROM named_profiles WHERE collection = 'agent';

DROP TABLE named_profiles;
