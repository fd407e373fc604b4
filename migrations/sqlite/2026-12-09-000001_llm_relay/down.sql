DROP TABLE llm_usage;
DROP TABLE llm_routes;
