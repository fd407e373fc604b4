DROP INDEX start_tasks_open_claims;
DROP INDEX start_tasks_unclaimed;
ALTER TABLE start_tasks DROP COLUMN claim_expires_at;
ALTER TABLE start_tasks DROP COLUMN claimed_by;
