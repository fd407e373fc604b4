DROP INDEX events_conversation_position;
ALTER TABLE events DROP COLUMN position;
ALTER TABLE conversations DROP COLUMN event_count;
