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
-- (owner_id, created_at, id) stays for the cascade from users; a member's search with
-- sub-conversations reads the organization's index.
DROP INDEX conversations_owner_updated;
-- The parent index served `parent_conversation_id IS NULL` too: without statistics the
-- planner combined it with the organization's index and sorted every row of the organization
-- (64 ms at 30,000). It now holds children only, in the order they are listed.
DROP INDEX conversations_parent;
CREATE INDEX conversations_parent ON conversations (parent_conversation_id, created_at, id)
    WHERE parent_conversation_id IS NOT NULL;
DROP INDEX conversations_sandbox;
CREATE INDEX conversations_sandbox ON conversations (sandbox_id, created_at, id);

-- `title__contains`: trigrams of the lowercased title (`lower(title) LIKE '%…%'`).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX conversations_title_trgm ON conversations USING gin (lower(title) gin_trgm_ops);

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

CREATE FUNCTION conversation_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE conversation_counts SET n = n - 1
        WHERE org_id = OLD.org_id AND owner_id = OLD.owner_id
            AND sub = (OLD.parent_conversation_id IS NOT NULL);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO conversation_counts (org_id, owner_id, sub, n)
        VALUES (NEW.org_id, NEW.owner_id, NEW.parent_conversation_id IS NOT NULL, 1)
        ON CONFLICT (org_id, owner_id, sub) DO UPDATE SET n = conversation_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_count AFTER INSERT OR DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION conversation_counts_apply();
CREATE TRIGGER conversations_count_moved AFTER UPDATE OF org_id, owner_id, parent_conversation_id
    ON conversations FOR EACH ROW
    WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id OR OLD.owner_id IS DISTINCT FROM NEW.owner_id
        OR (OLD.parent_conversation_id IS NULL) <> (NEW.parent_conversation_id IS NULL))
    EXECUTE FUNCTION conversation_counts_apply();

CREATE TABLE start_task_counts (
    org_id TEXT NOT NULL,
    created_by_user_id TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (org_id, created_by_user_id)
);
INSERT INTO start_task_counts (org_id, created_by_user_id, n)
    SELECT org_id, created_by_user_id, count(*) FROM start_tasks GROUP BY 1, 2;

CREATE FUNCTION start_task_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE start_task_counts SET n = n - 1
        WHERE org_id = OLD.org_id AND created_by_user_id = OLD.created_by_user_id;
    ELSE
        INSERT INTO start_task_counts (org_id, created_by_user_id, n)
        VALUES (NEW.org_id, NEW.created_by_user_id, 1)
        ON CONFLICT (org_id, created_by_user_id) DO UPDATE SET n = start_task_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER start_tasks_count AFTER INSERT OR DELETE ON start_tasks
    FOR EACH ROW EXECUTE FUNCTION start_task_counts_apply();

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

CREATE FUNCTION conversation_moves_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO conversation_moves (conversation_id, org_id, old_updated_at, new_updated_at)
    VALUES (NEW.id, NEW.org_id, OLD.updated_at, NEW.updated_at);
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_moved AFTER UPDATE OF updated_at ON conversations
    FOR EACH ROW WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at)
    EXECUTE FUNCTION conversation_moves_record();

ANALYZE conversations;
ANALYZE start_tasks;
