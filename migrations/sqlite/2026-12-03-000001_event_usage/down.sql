DROP TABLE org_event_usage;
ALTER TABLE conversations DROP COLUMN event_bytes;
