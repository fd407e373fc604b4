ALTER TABLE conversations DROP COLUMN metrics_tokens;
