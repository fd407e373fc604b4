DROP TABLE git_provider_tokens;
DROP TABLE user_secrets;
DROP TABLE user_settings;
