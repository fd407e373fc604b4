-- The tokens the stored metrics count (accumulated prompt + completion tokens): a metrics
-- snapshot replaces the stored one only when it counts at least as many, since the stream
-- path, the pull path and the webhooks report one conversation's metrics in any order and a
-- conversation's spend only grows. NULL: not known (any snapshot replaces it).
ALTER TABLE conversations ADD COLUMN metrics_tokens BIGINT;
