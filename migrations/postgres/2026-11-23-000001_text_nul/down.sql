-- Back to the `jsonb` checks. NOT VALID: rows stored meanwhile may hold \u0000, which `jsonb`
-- refuses; they stay, and only rows written from now on are checked.
ALTER TABLE orgs
    DROP CONSTRAINT orgs_registered_marketplaces_check,
    ADD CONSTRAINT orgs_registered_marketplaces_check
        CHECK (registered_marketplaces::jsonb IS NOT NULL) NOT VALID;
ALTER TABLE conversations
    DROP CONSTRAINT conversations_metadata_check,
    ADD CONSTRAINT conversations_metadata_check
        CHECK (metadata IS NULL OR metadata::jsonb IS NOT NULL) NOT VALID;
ALTER TABLE events
    DROP CONSTRAINT events_payload_check,
    ADD CONSTRAINT events_payload_check
        CHECK (payload::jsonb IS NOT NULL) NOT VALID;
