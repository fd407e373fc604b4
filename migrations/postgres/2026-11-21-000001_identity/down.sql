DROP TABLE api_keys;
DROP TABLE org_members;
DROP TABLE users;
DROP TABLE orgs;
