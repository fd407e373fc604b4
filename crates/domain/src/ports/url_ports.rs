//! The stored ports of the sandboxes' own listeners (issue 31; [`crate::sandboxes::url_ports`]).

use crate::error::StorageError;
use crate::sandboxes::url_ports::{UrlPort, UrlPortRange};

/// Where the sandboxes' ports are kept. Several replicas on one database call it
/// concurrently and agree: assignment is serialized (PostgreSQL: an advisory lock for the
/// transaction; SQLite: its one writer) and a unique index backs it.
pub trait UrlPortStore: Send + Sync {
    /// In one transaction: releases the ports of deleted sandboxes (NULL again, so they can
    /// be assigned anew); gives every live managed sandbox without a port the lowest free port
    /// of `range` (none left: it keeps none, and its URL stays in the path form); returns
    /// every live sandbox's port with its status. A port stored outside `range` (the range
    /// changed between runs) is kept and returned as is; the caller decides.
    ///
    /// # Errors
    /// The database failed.
    fn sync_url_ports(&self, range: UrlPortRange) -> Result<Vec<UrlPort>, StorageError>;
}
