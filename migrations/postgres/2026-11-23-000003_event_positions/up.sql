-- Live delivery (issue 11): every event gets its dense 0-based position in its conversation
-- (`position`, the `seq` of the session socket), assigned at append under the append lock;
-- the conversation keeps how many events it has, so the next position and an unfiltered count
-- are one row read. Existing events are numbered in append (global `seq`) order.
ALTER TABLE events ADD COLUMN position BIGINT NOT NULL DEFAULT -1;
UPDATE events SET position = numbered.position
    FROM (SELECT seq, ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY seq) - 1 AS position
          FROM events) AS numbered
    WHERE events.seq = numbered.seq;
ALTER TABLE events ALTER COLUMN position DROP DEFAULT;
CREATE UNIQUE INDEX events_conversation_position ON events (conversation_id, position);
ALTER TABLE conversations ADD COLUMN event_count BIGINT NOT NULL DEFAULT 0;
UPDATE conversations SET event_count = (SELECT COUNT(*) FROM events WHERE events.conversation_id = conversations.id);
