//! Starting app conversations through the API on both backends, against real sandboxes (the
//! stand-in agent server run by the process runtime): the pipeline to READY (with a local
//! repository cloned and its setup script run), the snapshots of stream-start, the events the
//! stand-in posts back landing on the same conversation row, a failure at each step (ERROR,
//! a redacted detail, the sandbox deleted), the 400 and 422 answers, who sees which task,
//! search paging and count, and 20 starts at once.
//!
//! One file per topic: `rig.rs` (the app, a start and its task, a test repository),
//! `ready.rs` (starts that reach READY), `failures.rs` (a failure at each step),
//! `requests.rs` (the 400, 409 and 422 answers), `tasks.rs` (visibility, search and count,
//! concurrent starts).

mod failures;
mod ready;
mod requests;
mod rig;
mod tasks;

use failures::failures_are_error;
use ready::{repository_and_setup_script, start_to_ready};
use requests::bad_requests;
use tasks::{concurrent_starts, search_and_count, visibility};

on_both_backends!(
    start_to_ready,
    repository_and_setup_script,
    failures_are_error,
    bad_requests,
    visibility,
    search_and_count,
    concurrent_starts,
);
