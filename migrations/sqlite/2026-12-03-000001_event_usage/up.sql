-- Event storage quotas (issue 33): the bytes of each conversation's events (the canonical
-- JSON the events table keeps), and the events and bytes of each organization's
-- conversations together. Both are kept in the transactions that insert and delete events.
ALTER TABLE conversations ADD COLUMN event_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE conversations SET event_bytes = COALESCE(
  (SELECT SUM(LENGTH(CAST(e.payload AS BLOB))) FROM events e
    WHERE e.conversation_id = conversations.id), 0);
CREATE TABLE org_event_usage (
  org_id TEXT PRIMARY KEY NOT NULL,
  event_count BIGINT NOT NULL DEFAULT 0,
  event_bytes BIGINT NOT NULL DEFAULT 0
);
INSERT INTO org_event_usage (org_id, event_count, event_bytes)
  SELECT org_id, SUM(event_count), SUM(event_bytes) FROM conversations GROUP BY org_id;
