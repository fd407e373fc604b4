//! The flags of the sandbox URL forms (issue 31; API.md, Sandbox proxy, "Sandbox URLs"):
//! `--sandbox-url-form`, `--sandbox-url-ports` and `--sandbox-host-pattern`, made into the
//! API's form (checked, with the ports, by [`switchboard_api::sandbox_proxy::url_ports`]).

use anyhow::Result;
use clap::{Args, ValueEnum};
use switchboard_api::sandbox_proxy::hosts::HostPattern;
use switchboard_api::sandbox_proxy::url_ports::UrlForm;
use switchboard_domain::sandboxes::url_ports::{DEFAULT_URL_PORTS, UrlPortRange};

use crate::cli_help::heading;

/// `--sandbox-url-form`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum UrlFormArg {
    /// The agent server on a port of the sandbox's own: `http://<public host>:<port>`.
    Port,
    /// Each service on a host of its own (needs `--sandbox-host-pattern`).
    Host,
    /// Each service under `<public-url>/sandboxes/{id}/{service}`.
    Path,
}

/// How sandbox URLs are shown and served.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = heading::SANDBOX_URLS)]
pub struct SandboxUrlArgs {
    /// The form of the sandbox URLs the API shows: `port` (the agent server at `<scheme>://<public host>:<port>` on a port of the sandbox's own, see --sandbox-url-ports), `host` (each service at the root of a host of its own, see --sandbox-host-pattern) or `path` (`<public-url>/sandboxes/{id}/{service}`). Default: `host` with --sandbox-host-pattern, else `port`. Every form is served whichever is shown.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_URL_FORM", value_enum)]
    pub sandbox_url_form: Option<UrlFormArg>,
    /// The ports Switchboard owns for the port form, `FIRST-LAST`: each sandbox gets one, on which Switchboard listens (on the address of --bind) for that sandbox's agent server alone; released when the sandbox is deleted. Must lie outside the ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range), where sandboxes get their own ports.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_URL_PORTS", value_name = "FIRST-LAST", default_value_t = DEFAULT_URL_PORTS)]
    pub sandbox_url_ports: UrlPortRange,
    /// Host-based routing of the sandbox proxy: a host name with {id} and {service}, e.g. `{id}-{service}.sandboxes.example.com` (a wildcard DNS record must point at Switchboard); URLs are then shown as `<scheme>://<host>[:<port>]` of the public URL (the host form). Default: none.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_HOST_PATTERN", value_name = "PATTERN", value_parser = HostPattern::parse)]
    pub sandbox_host_pattern: Option<HostPattern>,
}

impl SandboxUrlArgs {
    /// The form shown ([`UrlForm::chosen`]).
    ///
    /// # Errors
    /// `host` without a pattern.
    pub fn form(&self) -> Result<UrlForm> {
        let asked = self.sandbox_url_form.map(|f| match f {
            UrlFormArg::Port => UrlForm::Port,
            UrlFormArg::Host => UrlForm::Host,
            UrlFormArg::Path => UrlForm::Path,
        });
        UrlForm::chosen(asked, self.sandbox_host_pattern.is_some()).map_err(anyhow::Error::msg)
    }
}
