-- Members managed through the API (issue 34): a user can be disabled (their keys and
-- sessions refused at once), and every change to members, users and keys made by an owner,
-- an admin or the operator is kept in an audit log, readable by the organization's owners.
-- The log names the actor and the target by id and by the e-mail they had then, so an entry
-- outlives the user it names.
ALTER TABLE users ADD COLUMN disabled_at TIMESTAMP;

-- An organization's members in the order they joined: the members list's keyset.
CREATE INDEX org_members_joined ON org_members (org_id, created_at, user_id);

CREATE TABLE audit_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id TEXT REFERENCES orgs (id) ON DELETE CASCADE,
    actor_user_id TEXT,
    actor_email TEXT,
    action TEXT NOT NULL,
    target_user_id TEXT,
    target_email TEXT,
    detail TEXT NOT NULL DEFAULT '{}' CHECK (detail::jsonb IS NOT NULL),
    remote_addr TEXT,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
