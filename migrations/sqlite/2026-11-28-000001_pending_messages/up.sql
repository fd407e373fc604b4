-- Messages queued for a conversation that is still starting (issue 22; OpenHands'
-- pending_messages): the agent server's SendMessageRequest as JSON, delivered and deleted when
-- the start is READY, deleted when it fails. No foreign key to conversations: a message may
-- be queued before the start writes the conversation's row.
CREATE TABLE pending_messages (
    id TEXT PRIMARY KEY NOT NULL,
    conversation_id TEXT NOT NULL,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    created_by_user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    body TEXT NOT NULL CHECK (json_valid(body)),
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX pending_messages_conversation ON pending_messages (conversation_id, created_at, id);
