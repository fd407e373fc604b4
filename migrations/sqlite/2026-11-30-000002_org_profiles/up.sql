-- An organization's LLM profiles and LLM provider connections (issue 25; what Agent Canvas
-- manages under /api/organizations/{org}/profiles and /provider-connections): JSON arrays on
-- the organization's defaults row, each key sealed with the installation key (bound to the
-- organization and the field), and the name of the profile last activated.
ALTER TABLE org_defaults ADD COLUMN profiles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(profiles));
ALTER TABLE org_defaults ADD COLUMN active_profile TEXT;
ALTER TABLE org_defaults ADD COLUMN provider_connections TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(provider_connections));
