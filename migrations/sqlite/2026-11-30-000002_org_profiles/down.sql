ALTER TABLE org_defaults DROP COLUMN provider_connections;
ALTER TABLE org_defaults DROP COLUMN active_profile;
ALTER TABLE org_defaults DROP COLUMN profiles;
