-- A conversation's budget (docs/API.md, "Budgets"): `max_budget_per_task` is the budget in
-- USD fixed when it started (its member's, under the organization's ceiling); NULL: none.
-- `budget_reached_at` is when its accumulated cost reached that budget and Switchboard
-- stopped it, set once by a conditional update (whichever replica wins pauses its run);
-- NULL: not reached. The index serves the sweep that pauses again, after a lost pause, the
-- stopped conversations their agent server still reports running.
ALTER TABLE conversations ADD COLUMN max_budget_per_task DOUBLE;
ALTER TABLE conversations ADD COLUMN budget_reached_at TIMESTAMP;
CREATE INDEX conversations_budget_reached ON conversations (budget_reached_at)
    WHERE budget_reached_at IS NOT NULL;
