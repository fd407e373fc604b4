DROP INDEX conversations_budget_reached;
ALTER TABLE conversations DROP COLUMN budget_reached_at;
ALTER TABLE conversations DROP COLUMN max_budget_per_task;
