-- App conversations (issue 10): the conversation row the event store already keeps gains the
-- fields of OpenHands' AppConversationInfo (reference app-server §5.1), and start tasks record
-- each step of the start pipeline (§5.3) so a client polling them, or a restarted server,
-- finds every start where it stopped.
ALTER TABLE conversations ADD COLUMN selected_repository TEXT;
ALTER TABLE conversations ADD COLUMN selected_branch TEXT;
ALTER TABLE conversations ADD COLUMN git_provider TEXT;
ALTER TABLE conversations ADD COLUMN conversation_trigger TEXT;
ALTER TABLE conversations ADD COLUMN pr_number TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(pr_number));
ALTER TABLE conversations ADD COLUMN llm_model TEXT;
ALTER TABLE conversations ADD COLUMN agent_kind TEXT NOT NULL DEFAULT 'openhands';
ALTER TABLE conversations ADD COLUMN parent_conversation_id TEXT;
ALTER TABLE conversations ADD COLUMN public BOOLEAN;
ALTER TABLE conversations ADD COLUMN tags TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tags));
ALTER TABLE conversations ADD COLUMN metrics TEXT CHECK (metrics IS NULL OR json_valid(metrics));
CREATE INDEX conversations_org_created ON conversations (org_id, created_at, id);
CREATE INDEX conversations_org_updated ON conversations (org_id, updated_at, id);
CREATE INDEX conversations_owner_created ON conversations (owner_id, created_at, id);
CREATE INDEX conversations_owner_updated ON conversations (owner_id, updated_at, id);
CREATE INDEX conversations_sandbox ON conversations (sandbox_id);
CREATE INDEX conversations_parent ON conversations (parent_conversation_id);
DROP INDEX conversations_org;

CREATE TABLE start_tasks (
    id TEXT PRIMARY KEY NOT NULL,
    org_id TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    created_by_user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('WORKING', 'WAITING_FOR_SANDBOX',
        'PREPARING_REPOSITORY', 'RUNNING_SETUP_SCRIPT', 'SETTING_UP_GIT_HOOKS',
        'SETTING_UP_SKILLS', 'STARTING_CONVERSATION', 'READY', 'ERROR')),
    detail TEXT,
    conversation_id TEXT NOT NULL,
    sandbox_id TEXT,
    agent_server_url TEXT,
    request TEXT NOT NULL CHECK (json_valid(request)),
    secrets_sealed TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX start_tasks_org_created ON start_tasks (org_id, created_at, id);
CREATE INDEX start_tasks_org_updated ON start_tasks (org_id, updated_at, id);
CREATE INDEX start_tasks_creator_created ON start_tasks (created_by_user_id, created_at, id);
CREATE INDEX start_tasks_creator_updated ON start_tasks (created_by_user_id, updated_at, id);
CREATE INDEX start_tasks_conversation ON start_tasks (conversation_id);
CREATE INDEX start_tasks_status ON start_tasks (status);
