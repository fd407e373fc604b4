-- The conversations deleted through the API, kept for 30 days (pruned by the store's
-- upkeep): an agent server's webhook or the pull path's listing that arrives after the
-- delete (a `deleting` info sent as the agent server drops the conversation, a late event
-- batch, the listing of a paused sandbox resumed later) never brings the conversation back.
CREATE TABLE conversation_tombstones (
    id TEXT PRIMARY KEY NOT NULL,
    deleted_at TIMESTAMP NOT NULL
);
CREATE INDEX conversation_tombstones_deleted_at ON conversation_tombstones (deleted_at);
