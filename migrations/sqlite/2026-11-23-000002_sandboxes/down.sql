-- Back to registered sandboxes only: warm-pool sandboxes (no owner) are dropped, managed
-- columns removed. Foreign keys off while the table is rebuilt (see up.sql).
PRAGMA foreign_keys = OFF;
BEGIN;
UPDATE conversations SET sandbox_id = NULL
    WHERE sandbox_id IN (SELECT id FROM sandboxes WHERE org_id IS NULL);
CREATE TABLE sandboxes_rebuilt (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session_key_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL
);
INSERT INTO sandboxes_rebuilt (id, org_id, owner_id, session_key_hash, created_at)
    SELECT id, org_id, owner_id, session_key_hash, created_at FROM sandboxes
    WHERE org_id IS NOT NULL AND owner_id IS NOT NULL;
DROP TABLE sandboxes;
ALTER TABLE sandboxes_rebuilt RENAME TO sandboxes;
COMMIT;
PRAGMA foreign_keys = ON;
