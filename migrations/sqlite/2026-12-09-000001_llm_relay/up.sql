-- The LLM pass-through (issue 38; docs/API.md, "LLM pass-through").
--
-- `llm_routes`: what a conversation's pass-through token opens, under the token's SHA-256
-- (the token itself is never stored), the real key sealed bound to that hash. Written at the
-- start after the conversation's row; answered only while its sandbox is not deleted (a
-- tombstone keeps its row) and its conversation exists, which the lookup joins. Deleted with
-- its conversation (conversations are deleted outright), sandbox, organization or member.
CREATE TABLE llm_routes (
    token_hash TEXT PRIMARY KEY NOT NULL,
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    upstream TEXT NOT NULL,
    api_key_sealed TEXT NOT NULL,
    key_owner TEXT NOT NULL,
    model TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX llm_routes_sandbox ON llm_routes (sandbox_id);
CREATE INDEX llm_routes_conversation ON llm_routes (conversation_id);

-- `llm_usage`: what the forwarded requests used as their providers reported it, one row per
-- conversation, UTC day ('YYYY-MM-DD') and model, added to by one upsert per request (so
-- concurrent requests on several replicas all count). The rows are the organization's
-- spending: kept after their conversation or member is deleted, deleted with the organization.
CREATE TABLE llm_usage (
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    day DATE NOT NULL,
    model TEXT NOT NULL,
    requests BIGINT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE NOT NULL,
    PRIMARY KEY (conversation_id, day, model)
);
CREATE INDEX llm_usage_org_day ON llm_usage (org_id, day);
CREATE INDEX llm_usage_org_user_day ON llm_usage (org_id, user_id, day);
