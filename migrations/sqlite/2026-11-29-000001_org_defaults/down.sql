DROP TABLE org_defaults;
