//! `serve --service-api-key-file`: the shared key a trusted service (the OpenHands automation
//! service) presents as `X-Service-API-Key` to mint its runs' API keys (docs/API.md, "The
//! automation service").

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use switchboard_domain::services::ServiceKey;

use crate::cli_help::heading;

/// The service routes' key.
#[derive(Args, Clone)]
#[command(next_help_heading = heading::SIGN_IN)]
pub struct ServiceKeyArgs {
    /// A file holding the service key (surrounding whitespace ignored; keep it 0600) that the OpenHands automation service sends as X-Service-API-Key (its AUTOMATION_SERVICE_KEY) to mint its runs' API keys. Without it the /api/service routes answer 503.
    #[arg(long, env = "SWITCHBOARD_SERVICE_API_KEY_FILE", value_name = "FILE")]
    pub service_api_key_file: Option<PathBuf>,
}

impl ServiceKeyArgs {
    /// The key, if a file was given.
    ///
    /// # Errors
    /// The file cannot be read, or holds only whitespace.
    pub fn load(&self) -> Result<Option<ServiceKey>> {
        let Some(path) = &self.service_api_key_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the service API key file {}", path.display()))?;
        let Some(key) = ServiceKey::new(&text) else {
            bail!("the service API key file {} is empty", path.display());
        };
        warn_if_readable_by_others(path);
        Ok(Some(key))
    }
}

/// Warns when group or others may read the key file.
fn warn_if_readable_by_others(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(file = %path.display(), "the service API key file is readable by others than its owner (chmod 600 it)");
    }
}
