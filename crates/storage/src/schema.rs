//! The logical schema of `migrations/{sqlite,postgres}`, which `tests/migrations.rs` checks.
pub mod llm_relay;

diesel::table! {
    /// Organizations and their app settings.
    orgs (id) {
        /// UUID.
        id -> Text,
        /// Display name.
        name -> Text,
        /// App setting, default true.
        enable_proactive_conversation_starters -> Bool,
        /// App setting: finite, > 0, or NULL.
        max_budget_per_task -> Nullable<Double>,
        /// App setting: JSON array of marketplace entries.
        registered_marketplaces -> Text,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// Settings version, UTC microseconds; strictly increases.
        updated_at -> Timestamp,
        /// App setting: the LLM budget, USD per calendar month (UTC); finite, > 0, or NULL.
        llm_monthly_budget -> Nullable<Double>,
    }
}

diesel::table! {
    /// Users.
    users (id) {
        /// UUID.
        id -> Text,
        /// Unique e-mail.
        email -> Text,
        /// Display name.
        name -> Nullable<Text>,
        /// The organization used when a request names none.
        current_org_id -> Nullable<Text>,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// When the user was disabled (keys and sessions refused), UTC; `NULL` when enabled.
        disabled_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    /// Memberships: a user's role in an organization.
    org_members (org_id, user_id) {
        /// Organization UUID.
        org_id -> Text,
        /// User UUID.
        user_id -> Text,
        /// `owner`, `admin` or `member`.
        role -> Text,
        /// When the membership was created, UTC.
        created_at -> Timestamp,
    }
}

diesel::table! {
    /// API keys, stored as SHA-256 hashes only.
    api_keys (id) {
        /// UUID.
        id -> Text,
        /// The user the key acts for.
        user_id -> Text,
        /// The organization the key is bound to, or NULL.
        org_id -> Nullable<Text>,
        /// Name.
        name -> Text,
        /// Hex SHA-256 of the key.
        key_hash -> Text,
        /// First characters of the key.
        display_prefix -> Text,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// Last use (debounced), UTC.
        last_used_at -> Nullable<Timestamp>,
        /// Expiry, UTC.
        expires_at -> Nullable<Timestamp>,
        /// Revocation time, UTC.
        revoked_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    /// Sandboxes: agent servers Switchboard runs (`process`, `docker`) or that were registered
    /// (`external`), authenticated on the webhook routes by a session key. A deleted sandbox
    /// stays as a tombstone (`deleted_at`) so conversations keep their `sandbox_id`.
    sandboxes (id) {
        /// UUID.
        id -> Text,
        /// Owning organization; NULL while the sandbox waits in the warm pool.
        org_id -> Nullable<Text>,
        /// Owning user (its creator); NULL while the sandbox waits in the warm pool.
        owner_id -> Nullable<Text>,
        /// Hex SHA-256 of the session key.
        session_key_hash -> Text,
        /// Creation time (for a warm-pool sandbox: when it was claimed), UTC.
        created_at -> Timestamp,
        /// The sandbox spec it runs (`external` for registered ones).
        spec_id -> Text,
        /// `process`, `docker` or `external`.
        runtime -> Text,
        /// The last reconciled status: `STARTING`, `RUNNING`, `PAUSED`, `ERROR`, `MISSING`.
        status -> Text,
        /// Why it is `ERROR` or `MISSING` (about a kilobyte at most); NULL otherwise.
        status_message -> Nullable<Text>,
        /// The session key sealed with XChaCha20-Poly1305 (hex of nonce and ciphertext); NULL
        /// for registered sandboxes and after delete.
        session_key_sealed -> Nullable<Text>,
        /// The runtime handle, JSON; NULL until launched and after the runtime cleaned up.
        handle -> Nullable<Text>,
        /// The agent server's base URL as Switchboard reaches it.
        agent_server_url -> Nullable<Text>,
        /// Last change, UTC microseconds; the version of conditional updates.
        updated_at -> Timestamp,
        /// When the current run began (launch or latest resume), UTC.
        started_at -> Nullable<Timestamp>,
        /// Last start, claim, resume or webhook use, UTC (the per-user running limit pauses
        /// the least recently used).
        last_used_at -> Nullable<Timestamp>,
        /// Delete time (tombstone), UTC.
        deleted_at -> Nullable<Timestamp>,
        /// Its own listener's port (`--sandbox-url-ports`); NULL before assignment, after delete.
        url_port -> Nullable<BigInt>,
    }
}

diesel::table! {
    /// Conversations.
    conversations (id) {
        /// UUID.
        id -> Text,
        /// Owning organization.
        org_id -> Text,
        /// Owning user.
        owner_id -> Text,
        /// The sandbox it runs in.
        sandbox_id -> Nullable<Text>,
        /// Title.
        title -> Nullable<Text>,
        /// Run state (`idle`, `running`, `paused`, `finished`, `error`, …).
        execution_status -> Nullable<Text>,
        /// The agent server's last `ConversationInfo`, JSON.
        metadata -> Nullable<Text>,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// Last change, UTC.
        updated_at -> Timestamp,
        /// The repository cloned for it (`owner/repo`, a URL or a local path), if any.
        selected_repository -> Nullable<Text>,
        /// Its branch.
        selected_branch -> Nullable<Text>,
        /// `github`, `gitlab`, … (OpenHands' `ProviderType`).
        git_provider -> Nullable<Text>,
        /// What started it (OpenHands' `trigger`: `gui`, `openhands_api`, `resolver`, …).
        conversation_trigger -> Nullable<Text>,
        /// Pull request numbers, a JSON array of integers.
        pr_number -> Text,
        /// The LLM model it runs with.
        llm_model -> Nullable<Text>,
        /// `openhands` (or `acp`).
        agent_kind -> Text,
        /// The conversation it is a sub-conversation of.
        parent_conversation_id -> Nullable<Text>,
        /// Whether it is shared publicly.
        public -> Nullable<Bool>,
        /// Tags, a JSON object of strings.
        tags -> Text,
        /// The latest cost and token metrics, JSON (from `stats` updates).
        metrics -> Nullable<Text>,
        /// How many events it has (the next event's position).
        event_count -> BigInt,
        /// Tokens `metrics` counts (prompt + completion); later metrics replace it if not fewer.
        metrics_tokens -> Nullable<BigInt>,
        /// Bytes of its events' canonical JSON (event quotas, `2026-12-03-000001_event_usage`).
        event_bytes -> BigInt,
        /// Its budget in USD, fixed at its start (`2026-12-08-000001_conversation_budgets`).
        max_budget_per_task -> Nullable<Double>,
        /// When its accumulated cost reached that budget (set once: it was stopped), UTC.
        budget_reached_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    /// Start tasks: one start of an app conversation, step by step (reference app-server
    /// §5.3); every step is written before it runs.
    start_tasks (id) {
        /// UUID.
        id -> Text,
        /// The organization it starts the conversation in.
        org_id -> Text,
        /// Who asked.
        created_by_user_id -> Text,
        /// `WORKING`, `WAITING_FOR_SANDBOX`, …, `READY`, `ERROR`.
        status -> Text,
        /// What went wrong (no secret in it), for `ERROR`.
        detail -> Nullable<Text>,
        /// The conversation it starts (chosen up front; `app_conversation_id` once `READY`).
        conversation_id -> Text,
        /// The sandbox it runs in, once chosen.
        sandbox_id -> Nullable<Text>,
        /// The agent server's URL, once known.
        agent_server_url -> Nullable<Text>,
        /// The start request, JSON, without its secrets.
        request -> Text,
        /// The request's secrets, sealed (XChaCha20-Poly1305), if any.
        secrets_sealed -> Nullable<Text>,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// Last step's time, UTC.
        updated_at -> Timestamp,
        /// The replica running it (its id), once claimed.
        claimed_by -> Nullable<Text>,
        /// When the claim lapses unless renewed, UTC.
        claim_expires_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    /// The append-only event log.
    events (seq) {
        /// Global sequence number, assigned at insert; commit order on PostgreSQL.
        seq -> BigInt,
        /// Conversation UUID.
        conversation_id -> Text,
        /// Event id (unique per conversation).
        event_id -> Text,
        /// Event kind.
        kind -> Text,
        /// Event source.
        source -> Text,
        /// The timestamp as received.
        timestamp -> Text,
        /// The timestamp as a UTC instant (naive means UTC), microseconds.
        ts -> Timestamp,
        /// Canonical JSON of the event (the SDK's persisted form).
        payload -> Text,
        /// Dense 0-based position in its conversation, assigned at append under the append
        /// lock (the session socket's `seq`, API.md, Live delivery).
        position -> BigInt,
    }
}

diesel::table! {
    /// Conversations per organization, owner and kind (migration `2026-11-26-000001`), kept
    /// by triggers on `conversations` in the writing transaction.
    conversation_counts (org_id, owner_id, sub) {
        /// Organization.
        org_id -> Text,
        /// Owner.
        owner_id -> Text,
        /// Sub-conversations (`parent_conversation_id` set) or top-level ones.
        sub -> Bool,
        /// How many.
        n -> BigInt,
    }
}

diesel::table! {
    /// Start tasks per organization and creator, kept by triggers on `start_tasks`.
    start_task_counts (org_id, created_by_user_id) {
        /// Organization.
        org_id -> Text,
        /// Creator.
        created_by_user_id -> Text,
        /// How many.
        n -> BigInt,
    }
}

diesel::table! {
    /// Every change of a conversation's `updated_at` (written by a trigger; pruned after a
    /// day): where a conversation stood before it moved, for walks in `UPDATED_AT` orders.
    /// The table has no key in SQL (a conversation may move to the same instant twice);
    /// diesel's key here is only nominal.
    conversation_moves (conversation_id, new_updated_at) {
        /// The conversation.
        conversation_id -> Text,
        /// Its organization.
        org_id -> Text,
        /// `updated_at` before the change, UTC.
        old_updated_at -> Timestamp,
        /// `updated_at` after it, UTC.
        new_updated_at -> Timestamp,
    }
}

diesel::table! {
    /// The conversations deleted through the API, kept for 30 days: a webhook or listing
    /// arriving after the delete never brings one back (migration
    /// `2026-12-02-000001_conversation_tombstones`).
    conversation_tombstones (id) {
        /// The deleted conversation's UUID.
        id -> Text,
        /// When it was deleted, UTC.
        deleted_at -> Timestamp,
    }
}

diesel::table! {
    /// The events and bytes of each organization's conversations together, kept in the
    /// transactions that insert and delete events (event quotas, migration
    /// `2026-12-03-000001_event_usage`).
    org_event_usage (org_id) {
        /// Organization UUID.
        org_id -> Text,
        /// Events of its conversations.
        event_count -> BigInt,
        /// Bytes of those events' canonical JSON.
        event_bytes -> BigInt,
    }
}

diesel::table! {
    /// Each user's own settings in an organization (issue 21); keys sealed.
    user_settings (org_id, user_id) {
        /// Organization UUID.
        org_id -> Text,
        /// User UUID.
        user_id -> Text,
        /// JSON object: the agent settings without any key.
        agent_settings -> Text,
        /// JSON object: the conversation settings.
        conversation_settings -> Text,
        /// JSON object: the app preferences.
        preferences -> Text,
        /// The LLM API key, sealed.
        llm_api_key_sealed -> Nullable<Text>,
        /// The search API key, sealed.
        search_api_key_sealed -> Nullable<Text>,
        /// The MCP configuration (JSON), sealed.
        mcp_config_sealed -> Nullable<Text>,
        /// Last change, UTC.
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// Custom secrets of a user in an organization (issue 21); values sealed.
    user_secrets (org_id, user_id, name) {
        /// Organization UUID.
        org_id -> Text,
        /// User UUID.
        user_id -> Text,
        /// Name, unique per user and organization.
        name -> Text,
        /// Description.
        description -> Nullable<Text>,
        /// The value, sealed.
        value_sealed -> Text,
        /// Creation time, UTC.
        created_at -> Timestamp,
        /// Last change, UTC.
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// Git provider tokens of a user in an organization (issue 21); tokens sealed.
    git_provider_tokens (org_id, user_id, provider) {
        /// Organization UUID.
        org_id -> Text,
        /// User UUID.
        user_id -> Text,
        /// `github`, `gitlab`, ….
        provider -> Text,
        /// Host of a self-hosted provider.
        host -> Nullable<Text>,
        /// The token, sealed (NULL: none).
        token_sealed -> Nullable<Text>,
        /// Last change, UTC.
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// An organization's defaults for its members (issue 21); keys sealed.
    org_defaults (org_id) {
        /// Organization UUID.
        org_id -> Text,
        /// JSON object: the agent settings without any key.
        agent_settings -> Text,
        /// JSON object: the conversation settings.
        conversation_settings -> Text,
        /// The LLM API key, sealed.
        llm_api_key_sealed -> Nullable<Text>,
        /// The search API key, sealed.
        search_api_key_sealed -> Nullable<Text>,
        /// The MCP configuration (JSON), sealed.
        mcp_config_sealed -> Nullable<Text>,
        /// Last change, UTC.
        updated_at -> Timestamp,
        /// JSON array of LLM provider connections, each key sealed (issue 25).
        provider_connections -> Text,
    }
}

diesel::table! {
    /// Messages queued for a conversation that is still starting (issue 22).
    pending_messages (id) {
        /// Message UUID.
        id -> Text,
        /// The conversation it is for (no foreign key: its row may not exist yet).
        conversation_id -> Text,
        /// Organization UUID.
        org_id -> Text,
        /// Who queued it.
        created_by_user_id -> Text,
        /// The agent server's `SendMessageRequest`, JSON.
        body -> Text,
        /// When it was queued, UTC.
        created_at -> Timestamp,
    }
}

diesel::table! {
    /// Named profiles (issues 21, 25, 37): a member's LLM profiles, an organization's LLM
    /// profiles and members' agent profiles, one row each; a collection is (`org_id`,
    /// `owner`, `collection`).
    named_profiles (org_id, owner, collection, name) {
        /// Organization UUID.
        org_id -> Text,
        /// The member's user UUID, or `''` for the organization's own.
        owner -> Text,
        /// `llm` or `agent`.
        collection -> Text,
        /// Its name, unique in its collection.
        name -> Text,
        /// An agent profile's stable id (UUID); `NULL` for an LLM profile.
        id -> Nullable<Text>,
        /// Bumped by each save of an agent profile; 0 for an LLM profile.
        revision -> BigInt,
        /// An agent profile's `agent_kind`; `NULL` for an LLM profile.
        kind -> Nullable<Text>,
        /// JSON object: an LLM profile's configuration without its key, an agent profile's
        /// fields but `id`, `name`, `revision`.
        body -> Text,
        /// An LLM profile's key, sealed.
        secret_sealed -> Nullable<Text>,
        /// Whether it is its collection's active profile.
        active -> Bool,
        /// Created, UTC.
        created_at -> Timestamp,
        /// Last change, UTC.
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// Changes to members, users and keys (issue 34), newest last.
    audit_log (id) {
        /// Order of writing.
        id -> BigInt,
        /// The organization the change was in; `NULL` for a change to a user as a whole.
        org_id -> Nullable<Text>,
        /// Who made it; `NULL` for the operator's commands.
        actor_user_id -> Nullable<Text>,
        /// Their e-mail then.
        actor_email -> Nullable<Text>,
        /// What was done (`member.role_changed`, `member.removed`, `user.disabled`, …).
        action -> Text,
        /// The user it was done to.
        target_user_id -> Nullable<Text>,
        /// Their e-mail then.
        target_email -> Nullable<Text>,
        /// The details (a JSON object).
        detail -> Text,
        /// The client's address.
        remote_addr -> Nullable<Text>,
        /// When, UTC.
        created_at -> Timestamp,
    }
}

diesel::table! {
    /// A user's identity at an OpenID provider (issue 34).
    user_identities (issuer, subject) {
        /// The provider's issuer URL.
        issuer -> Text,
        /// The user's `sub` there.
        subject -> Text,
        /// The Switchboard user.
        user_id -> Text,
        /// The e-mail of the last sign-in's claims.
        email -> Text,
        /// First sign-in, UTC.
        created_at -> Timestamp,
        /// Last sign-in, UTC.
        last_sign_in_at -> Timestamp,
    }
}

diesel::table! {
    /// A sign-in in flight: what the callback checks (single use).
    sign_in_states (state_hash) {
        /// SHA-256 hex of the `state` parameter.
        state_hash -> Text,
        /// The ID token's expected `nonce`.
        nonce -> Text,
        /// The PKCE code verifier.
        pkce_verifier -> Text,
        /// Where to go after signing in (a path of this server).
        return_to -> Text,
        /// When it lapses, UTC.
        expires_at -> Timestamp,
    }
}

diesel::table! {
    /// Browser sessions.
    web_sessions (id_hash) {
        /// SHA-256 hex of the session cookie.
        id_hash -> Text,
        /// The user.
        user_id -> Text,
        /// The session's CSRF token (forms carry it).
        csrf_token -> Text,
        /// The address it was opened from.
        remote_addr -> Nullable<Text>,
        /// Opened, UTC.
        created_at -> Timestamp,
        /// Lapses, UTC.
        expires_at -> Timestamp,
    }
}

diesel::table! {
    /// Device authorizations (RFC 8628) for `openhands login`.
    device_grants (device_code_hash) {
        /// SHA-256 hex of the device code.
        device_code_hash -> Text,
        /// The code the user types (`XXXX-XXXX`).
        user_code -> Text,
        /// `pending`, `approved` or `denied`.
        status -> Text,
        /// Who approved or denied it.
        user_id -> Nullable<Text>,
        /// The address that asked for it.
        remote_addr -> Nullable<Text>,
        /// Seconds between polls.
        interval_secs -> BigInt,
        /// The last poll, UTC.
        last_polled_at -> Nullable<Timestamp>,
        /// Asked, UTC.
        created_at -> Timestamp,
        /// Lapses, UTC.
        expires_at -> Timestamp,
    }
}

diesel::table! {
    /// The installation's record (one row, `singleton` = 1): its id, its sealing key's fingerprint.
    installation (singleton) {
        /// Always 1.
        singleton -> BigInt,
        /// The installation id (labels of its containers, pods, volumes).
        id -> Text,
        /// 16 hex digits: the sealing key's fingerprint.
        key_fingerprint -> Text,
        /// When the record was made, UTC.
        created_at -> Timestamp,
        /// The id of the installation this copy was restored from.
        restored_from -> Nullable<Text>,
        /// When it was restored, UTC.
        restored_at -> Nullable<Timestamp>,
    }
}

diesel::joinable!(org_members -> orgs (org_id));
diesel::joinable!(events -> conversations (conversation_id));
diesel::joinable!(org_members -> users (user_id));
diesel::joinable!(api_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(
    orgs,
    users,
    org_members,
    api_keys,
    sandboxes,
    conversations,
    start_tasks,
    events,
    conversation_counts,
    start_task_counts,
    conversation_moves,
    conversation_tombstones,
    org_event_usage,
    user_settings,
    org_defaults,
    user_secrets,
    git_provider_tokens,
    pending_messages,
    named_profiles,
    audit_log,
    user_identities,
    sign_in_states,
    web_sessions,
    device_grants,
    installation
);
