//! Switchboard's process runtime, below the binary and beside the adapters: what every
//! server process runs whatever its flags.
//!
//! - [`supervisor`]: the one owner of the server's background work; it runs the domain's
//!   [`switchboard_domain::jobs::Job`] descriptions (and tasks of the binary's own) until
//!   shutdown, counting their steps through the domain's
//!   [`switchboard_domain::jobs::JobCounters`] port.
//! - [`open_files`]: the open-files limit raised at start, and the budget that derives the
//!   socket caps from it (issue 24).
//! - [`logging`]: the server's log on stderr, text or JSON lines.
//! - [`config_file`]: a TOML file whose keys are a clap command line's long flags, its values
//!   the flags' defaults (docs/configuration.md); [`help`]: `-h` made short.
//!
//! Depends on the domain only (and Tokio); the binary wires it to the API's metrics and the
//! storage's pool.

pub mod config_file;
pub mod help;
pub mod logging;
pub mod open_files;
pub mod supervisor;

pub use open_files::{FileBudget, OpenFilesLimit, PoolKind};
pub use supervisor::{Supervisor, Wakes};
