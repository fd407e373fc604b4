DROP TABLE audit_log;
DROP INDEX org_members_joined;
ALTER TABLE users DROP COLUMN disabled_at;
