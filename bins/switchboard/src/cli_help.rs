//! The headings `serve --help` groups its flags under (the one-line summaries `-h` shows
//! where a flag's help is long are [`switchboard_runtime::help`]'s).

/// The headings of `serve --help` (clap's `help_heading` on each flag). Every flag of `serve`
/// has one; the server's tests (`tests/help.rs`) check that none is missing and that each is
/// one of these.
pub mod heading {
    /// Where Switchboard listens and how clients reach it.
    pub const SERVER: &str = "Server";
    /// The database, the data directory and what the database may hold.
    pub const STORAGE: &str = "Storage";
    /// Signing people in through an OpenID provider, and service keys.
    pub const SIGN_IN: &str = "Sign-in";
    /// What every sandbox runtime shares: specs, quotas, repositories, resources, egress.
    pub const SANDBOXES: &str = "Sandboxes (all runtimes)";
    /// The sandbox URLs the API shows and the sandbox proxy.
    pub const SANDBOX_URLS: &str = "Sandbox URLs and proxy";
    /// Sandboxes run as local processes (`--sandbox-runtime process`).
    pub const PROCESS: &str = "Process runtime";
    /// Sandboxes run as Docker containers (`--sandbox-runtime docker`).
    pub const DOCKER: &str = "Docker runtime";
    /// Sandboxes run as Kubernetes pods (`--sandbox-runtime kubernetes`).
    pub const KUBERNETES: &str = "Kubernetes runtime";
    /// Sandboxes started ahead of demand.
    pub const WARM_POOL: &str = "Warm pool";
    /// The LLM of started conversations, the models offered, skills.
    pub const LLM: &str = "LLM";
    /// How conversation starts run.
    pub const STARTS: &str = "Conversation starts";
    /// Request, socket, key and rate limits.
    pub const LIMITS: &str = "Limits";
    /// Logs and metrics.
    pub const OBSERVABILITY: &str = "Observability";
}
