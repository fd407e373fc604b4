-- An organization's defaults for its members (issue 21): the agent settings (the LLM's model
-- and base URL, the rest kept as sent) and conversation settings as JSON, and the LLM key,
-- the search key and the MCP configuration sealed with the installation key (bound to the
-- organization and the field). A member's own settings win over them at a start.
CREATE TABLE org_defaults (
    org_id TEXT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    agent_settings TEXT NOT NULL DEFAULT '{}' CHECK (agent_settings::jsonb IS NOT NULL),
    conversation_settings TEXT NOT NULL DEFAULT '{}' CHECK (conversation_settings::jsonb IS NOT NULL),
    llm_api_key_sealed TEXT,
    search_api_key_sealed TEXT,
    mcp_config_sealed TEXT,
    updated_at TIMESTAMP NOT NULL
);
