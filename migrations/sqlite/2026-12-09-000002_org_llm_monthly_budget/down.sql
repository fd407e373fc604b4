ALTER TABLE orgs DROP COLUMN llm_monthly_budget;
