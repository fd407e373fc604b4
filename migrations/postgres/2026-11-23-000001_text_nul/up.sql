-- JSON columns are checked as `json`, not `jsonb`: `jsonb` cannot hold the escape \u0000 (NUL),
-- which event payloads, conversation metadata and marketplace entries may carry and must keep
-- unchanged (API.md, NUL characters; issue 7). `json` checks the syntax and accepts it; the
-- text is stored as written either way.
-- NOT VALID: every existing row already passed the stricter `jsonb` check, so the table is not
-- scanned again (the constraint holds for every row written from now on).
ALTER TABLE orgs
    DROP CONSTRAINT orgs_registered_marketplaces_check,
    ADD CONSTRAINT orgs_registered_marketplaces_check
        CHECK (registered_marketplaces::json IS NOT NULL) NOT VALID;
ALTER TABLE conversations
    DROP CONSTRAINT conversations_metadata_check,
    ADD CONSTRAINT conversations_metadata_check
        CHECK (metadata IS NULL OR metadata::json IS NOT NULL) NOT VALID;
ALTER TABLE events
    DROP CONSTRAINT events_payload_check,
    ADD CONSTRAINT events_payload_check
        CHECK (payload::json IS NOT NULL) NOT VALID;
