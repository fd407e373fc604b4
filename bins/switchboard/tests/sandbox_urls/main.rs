//! The sandbox URL forms (issue 31; API.md, Sandbox proxy, "Sandbox URLs"), on the real
//! binary on loopback:
//! - `forms`: `serve` with defaults shows each sandbox's agent server on a port of its own
//!   (`http://127.0.0.1:<port>`, no path) that serves what the path form serves, closes it
//!   when the sandbox is deleted and gives it out again; a range overlapping the ephemeral
//!   range is refused at start; the path and host forms still work;
//! - `replicas`: two replicas of one PostgreSQL database on different addresses both serve a
//!   sandbox's port; a third on an address already serving it shows the path form;
//! - `sdk`: the SDK's `OpenHandsCloudWorkspace` against `serve` as the README starts it.

mod forms;
mod replicas;
mod sdk;

use std::sync::Mutex;

/// Held by the tests that use the default port range (`20000-20999`), so that two servers of
/// this binary never contend for its first port.
pub static DEFAULT_RANGE: Mutex<()> = Mutex::new(());
