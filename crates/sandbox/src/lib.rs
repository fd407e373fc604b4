//! # switchboard-sandbox
//!
//! Switchboard's sandbox runtimes, implementing the domain's port
//! ([`switchboard_domain::sandboxes::runtime`]):
//!
//! - [`ProcessRuntime`]: each sandbox an agent server run as a local process in a process
//!   group of its own, with a clean environment, supervised through `/proc` (issue 9).
//! - [`HttpAgentServerClient`]: the blocking HTTP client that probes agent servers
//!   (`GET /alive`).
//!
//! Every call blocks: async callers run them on a blocking pool.

pub mod agent_client;
pub mod launch;
pub mod process;
pub mod procfs;

pub use agent_client::HttpAgentServerClient;
pub use process::{ProcessIdentity, ProcessRuntime};
