-- Event storage quotas (issue 33): the bytes of each conversation's events (the canonical
-- JSON the events table keeps), and the events and bytes of each organization's
-- conversations together. Both are kept in the transactions that insert and delete events.
ALTER TABLE conversations ADD COLUMN event_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE conversations c SET event_bytes = s.bytes
  FROM (SELECT conversation_id, SUM(octet_length(payload))::BIGINT AS bytes
          FROM events GROUP BY conversation_id) s
 WHERE s.conversation_id = c.id;
CREATE TABLE org_event_usage (
  org_id TEXT PRIMARY KEY,
  event_count BIGINT NOT NULL DEFAULT 0,
  event_bytes BIGINT NOT NULL DEFAULT 0
);
INSERT INTO org_event_usage (org_id, event_count, event_bytes)
  SELECT org_id, SUM(event_count)::BIGINT, SUM(event_bytes)::BIGINT
    FROM conversations GROUP BY org_id;
