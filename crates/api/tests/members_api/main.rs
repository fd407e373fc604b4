//! Members managed through the API (issue 34; OpenHands' `/api/organizations/{org_id}/members…`
//! routes): the list's pages and filter, the count, role changes and removals under the rank
//! rules, the refusals' words, the audit log each change writes, and a disabled user refused at
//! once; on both backends, against the real app on a loopback port.
//!
//! `rig.rs` (the calls, a new member), `paging.rs` (pages, filter, count), `changes.rs` (role
//! changes and removals), `audit.rs` (the audit log, disabled users).

mod audit;
mod changes;
mod paging;
mod rig;

use audit::{a_disabled_user_is_refused_at_once, the_audit_log_is_the_owners};
use changes::{adding_by_email, removal_ends_access_at_once, role_changes_follow_rank};
use paging::pages_filter_and_count;

on_both_backends!(
    pages_filter_and_count,
    role_changes_follow_rank,
    removal_ends_access_at_once,
    adding_by_email,
    the_audit_log_is_the_owners,
    a_disabled_user_is_refused_at_once,
);
