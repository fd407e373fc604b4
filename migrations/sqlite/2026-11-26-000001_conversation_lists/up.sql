-- Conversation lists at 100,000 (issue 23). Every search order and filter of app conversations
-- is served by an index that matches it, counts read maintained counters, a walk in an
-- UPDATED_AT order can place a conversation that changed during the walk where it stood when
-- the walk began (API.md, "Paging while conversations change").

-- Top-level conversations (the default `include_sub_conversations=false`): partial indexes
-- that match the filter exactly, per order, for the organization and for one member in it.
CREATE INDEX conversations_top_created ON conversations (org_id, created_at, id)
    WHERE parent_conversation_id IS NULL;
CREATE INDEX conversations_top_updated ON conversations (org_id, updated_at, id)
    WHERE parent_conversation_id IS NULL;
CREATE INDEX conversations_top_owner_created ON conversations (org_id, owner_id, created_at, id)
    WHERE parent_conversation_id IS NULL;
CREATE INDEX conversations_top_owner_updated ON conversations (org_id, owner_id, updated_at, id)
    WHERE parent_conversation_id IS NULL;
DROP INDEX conversations_owner_updated;
DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (parent_conversation_id, created_at, id)
    WHERE parent_conversation_id IS NOT NULL;
DROP INDEX conversations_sandbox;
CREATE INDEX conversations_sandbox ON conversations (sandbox_id, created_at, id);

-- `title__contains`: an FTS5 trigram index of the titles (external content: the rows are
-- the conversations' by rowid), kept by triggers; it narrows, the LIKE on the row decides.
-- A VACUUM renumbers the rowids of conversations: run the 'rebuild' below after one.
CREATE VIRTUAL TABLE conversations_title USING fts5 (
    title, content = 'conversations', content_rowid = 'rowid', tokenize = 'trigram'
);
INSERT INTO conversations_title (conversations_title) VALUES ('rebuild');
CREATE TRIGGER conversations_title_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversations_title (rowid, title) VALUES (NEW.rowid, NEW.title);
END;
CREATE TRIGGER conversations_title_delete AFTER DELETE ON conversations BEGIN
    INSERT INTO conversations_title (conversations_title, rowid, title)
    VALUES ('delete', OLD.rowid, OLD.title);
END;
CREATE TRIGGER conversations_title_update AFTER UPDATE OF title ON conversations
WHEN OLD.title IS NOT NEW.title BEGIN
    INSERT INTO conversations_title (conversations_title, rowid, title)
    VALUES ('delete', OLD.rowid, OLD.title);
    INSERT INTO conversations_title (rowid, title) VALUES (NEW.rowid, NEW.title);
END;

-- Counts without a scan: conversations per organization, owner and kind (top-level or sub),
-- kept by triggers in the writing transaction.
CREATE TABLE conversation_counts (
    org_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    sub BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (org_id, owner_id, sub)
);
INSERT INTO conversation_counts (org_id, owner_id, sub, n)
    SELECT org_id, owner_id, parent_conversation_id IS NOT NULL, count(*)
    FROM conversations GROUP BY 1, 2, 3;
CREATE TRIGGER conversations_count_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversation_counts (org_id, owner_id, sub, n)
    VALUES (NEW.org_id, NEW.owner_id, NEW.parent_conversation_id IS NOT NULL, 1)
    ON CONFLICT (org_id, owner_id, sub) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER conversations_count_delete AFTER DELETE ON conversations BEGIN
    UPDATE conversation_counts SET n = n - 1
    WHERE org_id = OLD.org_id AND owner_id = OLD.owner_id
        AND sub = (OLD.parent_conversation_id IS NOT NULL);
END;
CREATE TRIGGER conversations_count_moved AFTER UPDATE OF org_id, owner_id, parent_conversation_id
ON conversations
WHEN OLD.org_id IS NOT NEW.org_id OR OLD.owner_id IS NOT NEW.owner_id
    OR (OLD.parent_conversation_id IS NULL) <> (NEW.parent_conversation_id IS NULL) BEGIN
    UPDATE conversation_counts SET n = n - 1
    WHERE org_id = OLD.org_id AND owner_id = OLD.owner_id
        AND sub = (OLD.parent_conversation_id IS NOT NULL);
    INSERT INTO conversation_counts (org_id, owner_id, sub, n)
    VALUES (NEW.org_id, NEW.owner_id, NEW.parent_conversation_id IS NOT NULL, 1)
    ON CONFLICT (org_id, owner_id, sub) DO UPDATE SET n = n + 1;
END;

CREATE TABLE start_task_counts (
    org_id TEXT NOT NULL,
    created_by_user_id TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (org_id, created_by_user_id)
);
INSERT INTO start_task_counts (org_id, created_by_user_id, n)
    SELECT org_id, created_by_user_id, count(*) FROM start_tasks GROUP BY 1, 2;
CREATE TRIGGER start_tasks_count_insert AFTER INSERT ON start_tasks BEGIN
    INSERT INTO start_task_counts (org_id, created_by_user_id, n)
    VALUES (NEW.org_id, NEW.created_by_user_id, 1)
    ON CONFLICT (org_id, created_by_user_id) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER start_tasks_count_delete AFTER DELETE ON start_tasks BEGIN
    UPDATE start_task_counts SET n = n - 1
    WHERE org_id = OLD.org_id AND created_by_user_id = OLD.created_by_user_id;
END;

-- Every change of a conversation's updated_at (old and new value), so a walk that began at T
-- places a conversation changed since at its updated_at as of T. Pruned after a day.
CREATE TABLE conversation_moves (
    conversation_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    old_updated_at TIMESTAMP NOT NULL,
    new_updated_at TIMESTAMP NOT NULL
);
CREATE INDEX conversation_moves_org ON conversation_moves (org_id, new_updated_at);
CREATE INDEX conversation_moves_new ON conversation_moves (new_updated_at);
CREATE TRIGGER conversations_moved AFTER UPDATE OF updated_at ON conversations
WHEN OLD.updated_at IS NOT NEW.updated_at BEGIN
    INSERT INTO conversation_moves (conversation_id, org_id, old_updated_at, new_updated_at)
    VALUES (NEW.id, NEW.org_id, OLD.updated_at, NEW.updated_at);
END;
