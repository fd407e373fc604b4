ALTER TABLE sandboxes DROP COLUMN status_message;
