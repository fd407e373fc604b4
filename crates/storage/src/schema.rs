//! The logical schema, the same on both backends (`migrations/sqlite`, `migrations/postgres`);
//! `tests/migrations.rs` checks that each backend's migrations produce exactly this.

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

diesel::joinable!(org_members -> orgs (org_id));
diesel::joinable!(org_members -> users (user_id));
diesel::joinable!(api_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(orgs, users, org_members, api_keys);
