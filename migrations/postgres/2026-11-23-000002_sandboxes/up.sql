-- Sandboxes that Switchboard runs itself (issue 9): `org_id` and `owner_id` become nullable
-- (NULL while a sandbox waits in the warm pool; both set when it is claimed), and the columns
-- of a managed sandbox are added. Rows registered before this migration are `external`
-- sandboxes (agent servers Switchboard does not run).
ALTER TABLE sandboxes
    ALTER COLUMN org_id DROP NOT NULL,
    ALTER COLUMN owner_id DROP NOT NULL,
    ADD COLUMN spec_id TEXT NOT NULL DEFAULT 'external',
    ADD COLUMN runtime TEXT NOT NULL DEFAULT 'external',
    ADD COLUMN status TEXT NOT NULL DEFAULT 'RUNNING'
        CHECK (status IN ('STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING')),
    ADD COLUMN session_key_sealed TEXT,
    ADD COLUMN handle TEXT CHECK (handle IS NULL OR handle::json IS NOT NULL),
    ADD COLUMN agent_server_url TEXT,
    ADD COLUMN updated_at TIMESTAMP,
    ADD COLUMN started_at TIMESTAMP,
    ADD COLUMN last_used_at TIMESTAMP,
    ADD COLUMN deleted_at TIMESTAMP,
    ADD CONSTRAINT sandboxes_owned_together CHECK ((org_id IS NULL) = (owner_id IS NULL));
UPDATE sandboxes SET updated_at = created_at;
ALTER TABLE sandboxes
    ALTER COLUMN updated_at SET NOT NULL,
    ALTER COLUMN spec_id DROP DEFAULT,
    ALTER COLUMN runtime DROP DEFAULT,
    ALTER COLUMN status DROP DEFAULT;
CREATE INDEX sandboxes_org_created ON sandboxes (org_id, created_at, id);
CREATE INDEX sandboxes_status ON sandboxes (status);
