-- Back to registered sandboxes only: warm-pool sandboxes (no owner) are dropped, managed
-- columns removed.
UPDATE conversations SET sandbox_id = NULL
    WHERE sandbox_id IN (SELECT id FROM sandboxes WHERE org_id IS NULL);
DELETE FROM sandboxes WHERE org_id IS NULL OR owner_id IS NULL;
DROP INDEX sandboxes_org_created;
DROP INDEX sandboxes_status;
ALTER TABLE sandboxes
    DROP CONSTRAINT sandboxes_owned_together,
    DROP COLUMN spec_id,
    DROP COLUMN runtime,
    DROP COLUMN status,
    DROP COLUMN session_key_sealed,
    DROP COLUMN handle,
    DROP COLUMN agent_server_url,
    DROP COLUMN updated_at,
    DROP COLUMN started_at,
    DROP COLUMN last_used_at,
    DROP COLUMN deleted_at,
    ALTER COLUMN org_id SET NOT NULL,
    ALTER COLUMN owner_id SET NOT NULL;
