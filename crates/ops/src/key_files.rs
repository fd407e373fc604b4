//! The files a server reads its other secrets from, each kept out of the environment and the
//! command line (`ps` shows those): the LLM API key (`--llm-api-key-file`) and the trusted
//! service's key (`--service-api-key-file`). (The OpenID client's secret is read by sign-in,
//! `switchboard_api::sign_in`.)

use std::path::Path;

use anyhow::{Context, Result, bail};
use switchboard_domain::services::ServiceKey;

/// The environment variable holding the LLM API key when no file names it.
pub const LLM_API_KEY_ENV: &str = "LLM_API_KEY";

/// The operator's LLM API key: the content of `file` without trailing white space, else the
/// `LLM_API_KEY` variable when set and not empty, else `None`.
///
/// # Errors
/// The file cannot be read.
pub fn llm_api_key(file: Option<&Path>) -> Result<Option<String>> {
    match file {
        Some(path) => Ok(Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the LLM API key file {}", path.display()))?
                .trim_end()
                .to_owned(),
        )),
        None => Ok(std::env::var(LLM_API_KEY_ENV)
            .ok()
            .filter(|k| !k.is_empty())),
    }
}

/// The service key in `file` (surrounding white space ignored), if a file is given; a warning
/// is logged when group or others may read the file.
///
/// # Errors
/// The file cannot be read, or holds only white space.
pub fn service_key(file: Option<&Path>) -> Result<Option<ServiceKey>> {
    let Some(path) = file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the service API key file {}", path.display()))?;
    let Some(key) = ServiceKey::new(&text) else {
        bail!("the service API key file {} is empty", path.display());
    };
    if readable_by_others(path) {
        tracing::warn!(file = %path.display(), "the service API key file is readable by others than its owner (chmod 600 it)");
    }
    Ok(Some(key))
}

/// Whether group or others may read `path` (false when its mode cannot be read).
fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0)
}
