-- Nothing to undo on SQLite (see up.sql).
SELECT 1;
