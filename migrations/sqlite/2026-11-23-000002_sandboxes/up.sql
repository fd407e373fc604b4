-- Sandboxes that Switchboard runs itself (issue 9). The table is rebuilt: `org_id` and
-- `owner_id` become nullable (NULL while a sandbox waits in the warm pool; both set when it is
-- claimed), and the columns of a managed sandbox are added. Rows registered before this
-- migration are `external` sandboxes (agent servers Switchboard does not run).
-- Foreign keys are off while the old table is dropped: with them on, the implicit DELETE of
-- DROP TABLE would set every conversation's sandbox_id to NULL.
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE sandboxes_rebuilt (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT REFERENCES orgs (id) ON DELETE CASCADE,
    owner_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    session_key_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL,
    spec_id TEXT NOT NULL,
    runtime TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING')),
    session_key_sealed TEXT,
    handle TEXT CHECK (handle IS NULL OR json_valid(handle)),
    agent_server_url TEXT,
    updated_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    last_used_at TIMESTAMP,
    deleted_at TIMESTAMP,
    CHECK ((org_id IS NULL) = (owner_id IS NULL))
);
INSERT INTO sandboxes_rebuilt (id, org_id, owner_id, session_key_hash, created_at, spec_id,
                               runtime, status, updated_at)
    SELECT id, org_id, owner_id, session_key_hash, created_at, 'external', 'external', 'RUNNING',
           created_at
    FROM sandboxes;
DROP TABLE sandboxes;
ALTER TABLE sandboxes_rebuilt RENAME TO sandboxes;
CREATE INDEX sandboxes_org_created ON sandboxes (org_id, created_at, id);
CREATE INDEX sandboxes_status ON sandboxes (status);
COMMIT;
PRAGMA foreign_keys = ON;
