-- Why a sandbox is ERROR or MISSING, in words its user can act on (at most about a kilobyte:
-- the reason and the last lines of its log); NULL for any other status.
ALTER TABLE sandboxes ADD COLUMN status_message TEXT;
