//! API keys over REST (`POST`/`GET /api/keys`, `DELETE /api/keys/{id}`) and
//! `GET /api/v1/users/me` (API.md, Identity and authentication).
//!
//! One file per topic: `rig.rs` (the permission lists, a key's fields, the calls),
//! `lifecycle.rs` (create, use, list, revoke; the last use debounced), `scope.rs` (keys of the
//! effective organization, other users' keys, bad ids), `creation.rs` (the create body's
//! rules), `me.rs` (`users/me`).

mod creation;
mod lifecycle;
mod me;
mod rig;
mod scope;

use creation::{create_validation, keys_per_member};
use lifecycle::{create_use_list_revoke, last_used_is_debounced};
use me::users_me;
use scope::{keys_follow_the_effective_org, other_users_keys_and_bad_ids};

on_both_backends!(
    create_use_list_revoke,
    keys_follow_the_effective_org,
    other_users_keys_and_bad_ids,
    create_validation,
    keys_per_member,
    last_used_is_debounced,
    users_me,
);
