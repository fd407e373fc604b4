-- Named profiles in one table (issue 37): a member's LLM profiles, the organization's LLM
-- profiles and each member's agent profiles, one row per profile, moved out of the JSON arrays
-- of `user_settings` and `org_defaults` and out of `agent_profiles`. A collection is
-- (`org_id`, `owner`, `collection`): `owner` is the member's user id, or '' for the
-- organization's own; `collection` is `llm` or `agent`. `body` holds the profile as JSON (an
-- LLM profile's configuration without its key, an agent profile's fields); `secret_sealed` an
-- LLM profile's key (sealed with the installation key, bound as before); `id`, `revision`
-- and `kind` an agent profile's UUID, revision and agent kind (both required of one);
-- `active` marks the one activated.
CREATE TABLE named_profiles (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    collection TEXT NOT NULL CHECK (collection IN ('llm', 'agent')),
    name TEXT NOT NULL,
    id TEXT,
    revision BIGINT NOT NULL DEFAULT 0 CHECK (revision >= 0),
    kind TEXT,
    body TEXT NOT NULL CHECK (body::jsonb IS NOT NULL),
    secret_sealed TEXT,
    active BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, owner, collection, name),
    CHECK (collection = 'llm' OR (id IS NOT NULL AND kind IS NOT NULL AND kind IN ('openhands', 'acp')))
);
CREATE UNIQUE INDEX named_profiles_id ON named_profiles (org_id, owner, collection, id);

INSERT INTO named_profiles
    (org_id, owner, collection, name, id, revision, kind, body, secret_sealed, active, created_at, updated_at)
SELECT org_id, user_id, 'agent', name, id, revision, agent_kind, profile, NULL, active, created_at, updated_at
FROM agent_profiles;

INSERT INTO named_profiles
    (org_id, owner, collection, name, id, revision, kind, body, secret_sealed, active, created_at, updated_at)
SELECT s.org_id, s.user_id, 'llm', p->>'name', NULL, 0, NULL,
       COALESCE((p->'config')::text, '{}'),
       p->>'api_key_sealed',
       COALESCE(p->>'name' = s.active_profile, FALSE),
       s.updated_at, s.updated_at
FROM user_settings s CROSS JOIN LATERAL json_array_elements(s.profiles::json) p;

INSERT INTO named_profiles
    (org_id, owner, collection, name, id, revision, kind, body, secret_sealed, active, created_at, updated_at)
SELECT d.org_id, '', 'llm', p->>'name', NULL, 0, NULL,
       COALESCE((p->'config')::text, '{}'),
       p->>'api_key_sealed',
       COALESCE(p->>'name' = d.active_profile, FALSE),
       d.updated_at, d.updated_at
FROM org_defaults d CROSS JOIN LATERAL json_array_elements(d.profiles::json) p;

DROP TABLE agent_profiles;
ALTER TABLE user_settings DROP COLUMN profiles;
ALTER TABLE user_settings DROP COLUMN active_profile;
ALTER TABLE org_defaults DROP COLUMN profiles;
ALTER TABLE org_defaults DROP COLUMN active_profile;
