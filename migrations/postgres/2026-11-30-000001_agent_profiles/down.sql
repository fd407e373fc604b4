DROP TABLE agent_profiles;
