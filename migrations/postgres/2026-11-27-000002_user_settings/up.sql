-- Each user's own settings in an organization (issue 21): the agent and conversation settings
-- and app preferences as JSON, LLM profiles (JSON array, each key sealed), and every key
-- sealed with the installation key (XChaCha20-Poly1305, hex). One row per (org, user).
CREATE TABLE user_settings (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent_settings TEXT NOT NULL DEFAULT '{}' CHECK (agent_settings::jsonb IS NOT NULL),
    conversation_settings TEXT NOT NULL DEFAULT '{}' CHECK (conversation_settings::jsonb IS NOT NULL),
    preferences TEXT NOT NULL DEFAULT '{}' CHECK (preferences::jsonb IS NOT NULL),
    llm_api_key_sealed TEXT,
    search_api_key_sealed TEXT,
    mcp_config_sealed TEXT,
    profiles TEXT NOT NULL DEFAULT '[]' CHECK (profiles::jsonb IS NOT NULL),
    active_profile TEXT,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX user_settings_user ON user_settings (user_id);

-- Custom secrets: a name unique per user and organization, a description, the value sealed.
CREATE TABLE user_secrets (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    value_sealed TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, name)
);
CREATE INDEX user_secrets_user ON user_secrets (user_id);

-- Git provider tokens: one per provider, with the host of a self-hosted one, the token sealed
-- (NULL: a host kept without a token).
CREATE TABLE git_provider_tokens (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    host TEXT,
    token_sealed TEXT,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (org_id, user_id, provider)
);
CREATE INDEX git_provider_tokens_user ON git_provider_tokens (user_id);
