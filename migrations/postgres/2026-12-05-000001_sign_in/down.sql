DROP TABLE device_grants;
DROP TABLE web_sessions;
DROP TABLE sign_in_states;
DROP TABLE user_identities;
