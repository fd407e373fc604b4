-- Back to the JSON arrays and `agent_profiles`.
ALTER TABLE user_settings ADD COLUMN profiles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(profiles));
ALTER TABLE user_settings ADD COLUMN active_profile TEXT;
ALTER TABLE org_defaults ADD COLUMN profiles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(profiles));
ALTER TABLE org_defaults ADD COLUMN active_profile TEXT;

UPDATE user_settings SET
    profiles = COALESCE((
        SELECT json_group_array(json_object('name', n.name, 'config', json(n.body), 'api_key_sealed', n.secret_sealed))
        FROM (SELECT * FROM named_profiles
              WHERE org_id = user_settings.org_id AND owner = user_settings.user_id AND collection = 'llm'
              ORDER BY name) n), '[]'),
    active_profile = (
        SELECT name FROM named_profiles
        WHERE org_id = user_settings.org_id AND owner = user_settings.user_id AND collection = 'llm' AND active);

UPDATE org_defaults SET
    profiles = COALESCE((
        SELECT json_group_array(json_object('name', n.name, 'config', json(n.body), 'api_key_sealed', n.secret_sealed))
        FROM (SELECT * FROM named_profiles
              WHERE org_id = org_defaults.org_id AND owner = '' AND collection = 'llm'
              ORDER BY name) n), '[]'),
    active_profile = (
        SELECT name FROM named_profiles
        WHERE org_id = org_defaults.org_id AND owner = '' AND collection = 'llm' AND active);

CREATE TABLE agent_profiles (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    revision BIGINT NOT NULL CHECK (revision >= 0),
    agent_kind TEXT NOT NULL CHECK (agent_kind IN ('openhands', 'acp')),
    profile TEXT NOT NULL CHECK (json_valid(profile)),
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
