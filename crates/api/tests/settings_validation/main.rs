//! The body of `POST /api/organizations/app`: every rule of reference §1.2 as API.md fixes
//! it (422 entries with `loc` and `type`, 400 for duplicate names, 413 over 1 MiB), patch
//! semantics, and the version check of reference §1.5 (409). After every refusal the stored
//! settings are unchanged.
//!
//! One file per topic: `rig.rs` (a non-default state and a refusal that changes nothing),
//! `fields.rs` (each field's type and value, marketplace entries), `framing.rs` (malformed
//! bodies, duplicate names), `patches.rs` (patch semantics, what comes back, bodies that write
//! nothing), `versions.rs` (versions and the optimistic lock).

mod fields;
mod framing;
mod patches;
mod rig;
mod versions;

use fields::{field_types_and_values, marketplace_entries};
use framing::{body_framing, duplicate_names};
use patches::{
    empty_and_unknown_bodies_write_nothing, entries_come_back_complete, patch_semantics,
};
use versions::{optimistic_locking, versions_strictly_increase};

on_both_backends!(
    field_types_and_values,
    marketplace_entries,
    body_framing,
    duplicate_names,
    patch_semantics,
    entries_come_back_complete,
    empty_and_unknown_bodies_write_nothing,
    versions_strictly_increase,
    optimistic_locking,
);
