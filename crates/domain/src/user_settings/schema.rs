//! `GET /api/v1/settings/agent-schema` and `/conversation-schema` (issue 21): what the
//! settings pages may show and send, as JSON Schema (2020-12) written from the rules of
//! [`super::patch`]. OpenHands answers its SDK's own export format there; Switchboard checks
//! only the fields below and keeps the others as sent, so a JSON Schema of those is what a
//! client can rely on (docs/API.md, "Each user's settings").

use serde_json::{Value, json};

use super::diffs::SECURITY_ANALYZERS;
use super::patch::SANDBOX_GROUPING_STRATEGIES;

/// The agent settings: `llm` (model, base URL, key: write-only) and `mcp_config`; other
/// fields are kept as sent.
pub fn agent_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "AgentSettings",
        "type": "object",
        "additionalProperties": true,
        "properties": {
            "llm": {
                "title": "LLM",
                "type": "object",
                "additionalProperties": true,
                "properties": {
                    "model": {"type": ["string", "null"], "description": "LiteLLM model name, e.g. openai/gpt-4o"},
                    "base_url": {"type": ["string", "null"], "pattern": "^https?://",
                                 "description": "The provider's base URL; empty or null for the model's default"},
                    "api_key": {"type": ["string", "null"], "writeOnly": true,
                                "description": "Stored sealed; never returned (llm_api_key_set says whether one is set)"}
                }
            },
            "mcp_config": {
                "title": "MCPConfig",
                "type": ["object", "null"],
                "additionalProperties": true,
                "description": "MCP servers (sse_servers, shttp_servers, stdio_servers, or mcpServers); stored sealed, credentials masked in answers"
            }
        }
    })
}

/// The conversation settings (OpenHands' `ConversationSettings`).
pub fn conversation_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ConversationSettings",
        "type": "object",
        "additionalProperties": true,
        "properties": {
            "schema_version": {"type": "integer", "minimum": 1, "default": 1},
            "max_iterations": {"type": "integer", "minimum": 1, "default": 500,
                               "description": "Used by a start whose request sets none"},
            "confirmation_mode": {"type": "boolean", "default": false,
                                  "description": "A start asks the agent server to confirm actions: the risky ones when security_analyzer is llm (ConfirmRisky), else every one (AlwaysConfirm)"},
            "security_analyzer": {"enum": [SECURITY_ANALYZERS[0], SECURITY_ANALYZERS[1], null], "default": "llm",
                                  "description": "llm: a start gives the agent OpenHands' LLMSecurityAnalyzer; none or null: no analyzer"}
        },
        "x-sandbox-grouping-strategies": SANDBOX_GROUPING_STRATEGIES,
    })
}
