-- Start tasks are claimed by the replica that runs them (issue 20): `claimed_by` names it
-- (its replica id), `claim_expires_at` is when the claim lapses unless renewed. A WORKING
-- task without a claim waits for a replica's conversation-start job; an unfinished task whose
-- claim lapsed is failed by the restart rule.
ALTER TABLE start_tasks ADD COLUMN claimed_by TEXT;
ALTER TABLE start_tasks ADD COLUMN claim_expires_at TIMESTAMP;
CREATE INDEX start_tasks_unclaimed ON start_tasks (created_at, id)
    WHERE status = 'WORKING' AND claimed_by IS NULL;
CREATE INDEX start_tasks_open_claims ON start_tasks (claim_expires_at)
    WHERE status NOT IN ('READY', 'ERROR');
