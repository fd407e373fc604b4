-- An organization's LLM budget in USD per calendar month (UTC), an app setting
-- (`POST /api/organizations/app`, `llm_monthly_budget`): finite and > 0; NULL: none. The LLM
-- pass-through refuses the organization's requests once its recorded cost this month reaches it.
ALTER TABLE orgs ADD COLUMN llm_monthly_budget DOUBLE;
