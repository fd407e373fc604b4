DROP TABLE audit_log;
ALTER TABLE users DROP COLUMN disabled_at;
