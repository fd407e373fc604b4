-- Nothing changes on SQLite: its JSON checks (`json_valid`) accept the escape \u0000 and its
-- TEXT holds any character; the PostgreSQL migration of the same version moves its checks from
-- `jsonb` to `json` (API.md, NUL characters; issue 7). Kept so that both backends list the same
-- versions; diesel refuses an empty migration, hence the statement.
SELECT 1;
