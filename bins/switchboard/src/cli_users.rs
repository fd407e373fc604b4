//! The operator's commands on users, members and the audit log (issue 34): their arguments.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Create a user.
    Create {
        /// E-mail (unique).
        #[arg(long)]
        email: String,
        /// Display name.
        #[arg(long)]
        name: Option<String>,
    },
    /// List users, oldest first (one page; `next_after` continues it).
    List {
        /// Only e-mails containing this (any case).
        #[arg(long)]
        email: Option<String>,
        /// Continue after this user id (the `next_after` of the page before).
        #[arg(long)]
        after: Option<String>,
        /// Users per page (1-1000).
        #[arg(long, default_value = "100")]
        limit: u32,
    },
    /// Disable a user: every key of theirs is refused at once, on every replica.
    Disable {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
    /// Remove a user with everything they own (keys, settings, secrets, conversations);
    /// refused while they are an organization's only owner.
    Remove {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Audit log entries, newest first: an organization's, or (without --org-id) the
    /// changes to users as a whole.
    List {
        /// Organization id.
        #[arg(long)]
        org_id: Option<String>,
        /// Entries before this position (the `next_before` of the page before).
        #[arg(long)]
        before: Option<i64>,
        /// Entries per page (1-1000).
        #[arg(long, default_value = "100")]
        limit: u32,
    },
}

#[derive(Subcommand)]
pub enum MembersCommand {
    /// Add a user to an organization (or change their role).
    Add {
        /// Organization id.
        #[arg(long)]
        org_id: String,
        /// User id.
        #[arg(long)]
        user_id: String,
        /// owner, admin or member.
        #[arg(long)]
        role: String,
    },
    /// Remove a user from an organization (their keys bound to it revoked); refused for its
    /// last owner.
    Remove {
        /// Organization id.
        #[arg(long)]
        org_id: String,
        /// User id.
        #[arg(long)]
        user_id: String,
    },
}
