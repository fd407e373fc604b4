-- The installation's record (docs/operations.md): one row naming the installation (the id its
-- runtimes label what they make with) and the fingerprint of the key sealing the database's
-- secrets, so that a server holding another key refuses to start; a restored copy that does
-- not replace the original gets a new id and remembers the old one.
CREATE TABLE installation (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    id TEXT NOT NULL,
    key_fingerprint TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    restored_from TEXT,
    restored_at TIMESTAMP
);
