//! Who listens where Switchboard reaches a process sandbox (issue 33): a confined sandbox runs
//! as a user of its own, so the loopback listener of its agent server or exposed service must
//! be owned by that user; a listener of any other user on the port is someone else's.

use switchboard_domain::sandboxes::listeners::ListenerCheck;
use switchboard_domain::sandboxes::runtime::{RuntimeError, RuntimeHandle};

use super::identity::ProcessIdentity;
use crate::listeners::{loopback_listener, loopback_port};

/// [`ListenerCheck`] of `url` for the sandbox of `handle`: [`ListenerCheck::Unchecked`] for an
/// unconfined sandbox (no user of its own: `--process-isolation none`) or a URL that is not
/// `http://127.0.0.1:<port>`; else from the owner of the listener a connection to
/// `127.0.0.1:<port>` would reach.
///
/// # Errors
/// [`RuntimeError::BadHandle`] for another runtime's handle; [`RuntimeError::Io`] when the
/// kernel's socket table could not be read.
pub(super) fn check(handle: &RuntimeHandle, url: &str) -> Result<ListenerCheck, RuntimeError> {
    let Some(uid) = ProcessIdentity::of(handle)?.uid else {
        return Ok(ListenerCheck::Unchecked);
    };
    let Some(port) = loopback_port(url) else {
        return Ok(ListenerCheck::Unchecked);
    };
    let listener = loopback_listener(port)
        .map_err(|e| RuntimeError::Io(format!("looking up the listener of port {port}: {e}")))?;
    Ok(match listener {
        None => ListenerCheck::Nobody,
        Some(l) if l.uid != uid => ListenerCheck::Foreign(format!(
            "{}:{port} is held by user {}, not by the sandbox's user {uid}",
            l.address, l.uid
        )),
        Some(_) => ListenerCheck::Sandbox,
    })
}
