//! `PREPARING_REPOSITORY`: the start's clone (issue 18, "Repository sources"; issue 21, "Use").
//!
//! An `owner/repo` slug is cloned from its provider's host ([`provider_remote`]: the public
//! host, the host the user stored with their token, or the operator's `--git-provider-url`)
//! with the user's token for that provider, when they stored one. The token reaches git
//! through a credential helper given to that one command, never through a command line, a
//! URL, the environment or a config file that stays:
//! 1. `umask 077; mktemp -d` makes a directory only the sandbox's user reads;
//! 2. the agent server's file upload writes `credential` in it (`username=…`, `password=…`);
//! 3. `git -c credential.helper= -c 'credential.helper=!f() {…}; f' clone …` runs, the helper
//!    answering `get` with that file for the clone's host only (`credential.helper=` first
//!    drops every helper of the sandbox's own configuration, so none stores the token);
//! 4. the same command removes the directory, whatever the clone's outcome; a failure before
//!    it removes it with a command of its own.
//!
//! The command lines (which the agent server keeps as bash events) hold the directory's
//! path and the host, never the token; `-c` before the subcommand is not written to the new
//! repository's `.git/config`, and the remote URL holds no credentials.

use super::steps::{Agent, SHORT_COMMAND};
use super::{Failure, Run, check_sources, quote};
use crate::conversations::provider_remote::{self, token_credential, url_host};
use crate::conversations::repository::{self, Form};
use crate::conversations::start_request::StartRequest;
use crate::conversations::start_tasks::StartTaskStatus;
use crate::sandboxes::settings::ManagedSandboxes;

/// A token for one clone: what the credential file holds, and the host it is for.
struct Credential {
    provider: String,
    username: String,
    password: String,
    host: String,
}

impl Run<'_> {
    /// `PREPARING_REPOSITORY`: the repository cloned into the working directory (its sources
    /// checked again against the server's settings now), with the user's provider token for a
    /// slug (see the module's text).
    pub(super) fn clone_repository(
        &mut self,
        agent: &Agent<'_>,
        m: &ManagedSandboxes,
        request: &StartRequest,
        repo: &str,
        workdir: &str,
    ) -> Result<(), Failure> {
        self.set(StartTaskStatus::PreparingRepository)?;
        let cannot = |e: String| Failure(format!("the repository cannot be cloned: {e}"));
        let allowed = &m.settings.local_repositories;
        check_sources(request, allowed).map_err(|e| cannot(e.to_string()))?;
        let provider = request.git_provider.as_deref().unwrap_or("github");
        let form = repository::check(repo, allowed).map_err(cannot)?;
        let slug = form == Form::Slug;
        let (source, credential) = match form {
            Form::Slug => {
                let (token, host) = self.provider_token(provider)?;
                let url = provider_remote::provider_url(
                    provider,
                    repo,
                    host.as_deref(),
                    &m.settings.git_provider_urls,
                )
                .map_err(cannot)?;
                let credential = token
                    .map(|t| self.credential(provider, &t, &url))
                    .transpose()?;
                (url, credential)
            }
            _ => (
                repository::clone_source(repo, request.git_provider.as_deref(), allowed)
                    .map_err(cannot)?,
                None,
            ),
        };
        let mut cmd = String::from("git clone --quiet");
        if let Some(depth) = self.prefs.depth_flag() {
            cmd.push(' ');
            cmd.push_str(depth);
        }
        if let Some(branch) = &request.selected_branch {
            cmd.push_str(" --branch ");
            cmd.push_str(&quote(branch));
        }
        cmd.push_str(" -- ");
        cmd.push_str(&quote(&source));
        cmd.push(' ');
        cmd.push_str(&quote(workdir));
        let result = match &credential {
            Some(c) => self.clone_with(agent, c, &cmd),
            None => self.run_clone(agent, cmd),
        };
        let no_token = slug && credential.is_none();
        result.map_err(|Failure(detail)| {
            if no_token {
                Failure(format!(
                    "{detail} (no {provider} token is stored for this user: POST /api/v1/secrets/git-providers)"
                ))
            } else {
                Failure(detail)
            }
        })
    }

    /// The user's token for `provider` and the host stored with it.
    fn provider_token(&self, provider: &str) -> Result<(Option<String>, Option<String>), Failure> {
        match &self.svc.personal {
            Some(p) => p
                .provider_token(self.task.org_id, self.task.created_by_user_id, provider)
                .map_err(|e| Failure(format!("reading the user's {provider} token failed: {e}"))),
            None => Ok((None, None)),
        }
    }

    /// The credential for `token` at `url`'s host (the token and its password part join the
    /// values masked in a detail).
    fn credential(
        &mut self,
        provider: &str,
        token: &str,
        url: &str,
    ) -> Result<Credential, Failure> {
        self.secrets.push(token.to_owned());
        if token.contains(['\n', '\r', '\0']) {
            return Err(Failure(format!(
                "the stored {provider} token holds a line break: store it again with POST /api/v1/secrets/git-providers"
            )));
        }
        let (username, password) = token_credential(provider, token);
        self.secrets.push(password.clone());
        let host = url_host(url).ok_or_else(|| {
            Failure(format!(
                "the repository cannot be cloned: {url} is not an http(s) URL"
            ))
        })?;
        Ok(Credential {
            provider: provider.to_owned(),
            username,
            password,
            host,
        })
    }

    /// Steps 1 to 4 of the module's text around `clone` (a `git clone …` command line).
    fn clone_with(&self, agent: &Agent<'_>, c: &Credential, clone: &str) -> Result<(), Failure> {
        let made = agent
            .bash("umask 077 && mktemp -d".into(), None, SHORT_COMMAND)
            .map_err(|e| Failure(format!("preparing the {} token failed: {e}", c.provider)))?;
        let dir = made.stdout.trim().to_owned();
        let plain = dir.starts_with('/')
            && dir
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-'));
        if made.exit_code != Some(0) || !plain {
            return Err(Failure(format!(
                "preparing the {} token failed: mktemp answered {:?}: {}",
                c.provider,
                self.tail(&made.stdout),
                self.tail(&made.stderr)
            )));
        }
        let file = format!("{dir}/credential");
        let content = format!("username={}\npassword={}\n", c.username, c.password);
        if let Err(e) = agent
            .client
            .upload_file(&agent.url, &agent.key, &file, content.as_bytes())
        {
            self.remove(agent, &dir);
            return Err(Failure(format!(
                "handing the {} token to git failed: {e}",
                c.provider
            )));
        }
        let helper = format!(
            "credential.helper=!f() {{ test \"$1\" = get || exit 0; grep -Fx {} >/dev/null || exit 0; cat {}; }}; f",
            quote(&format!("host={}", c.host)),
            quote(&file)
        );
        let rest = clone.strip_prefix("git ").unwrap_or(clone);
        let cmd = format!(
            "git -c credential.helper= -c {} {rest}; status=$?; rm -rf -- {}; exit $status",
            quote(&helper),
            quote(&dir)
        );
        let result = self.run_clone(agent, cmd);
        if result.is_err() {
            self.remove(agent, &dir);
        }
        result
    }

    /// Removes `dir` (best effort: the sandbox may be gone).
    fn remove(&self, agent: &Agent<'_>, dir: &str) {
        if let Err(e) = agent.bash(format!("rm -rf -- {}", quote(dir)), None, SHORT_COMMAND) {
            tracing::warn!(task = %self.task.id, error = %e, "removing a clone's credential directory failed");
        }
    }

    /// Runs the clone command `cmd` for at most the clone timeout.
    fn run_clone(&self, agent: &Agent<'_>, cmd: String) -> Result<(), Failure> {
        let timeout = self.svc.timeouts.clone;
        let out = agent
            .bash(cmd, None, timeout)
            .map_err(|e| Failure(format!("cloning the repository failed: {e}")))?;
        self.finished(
            &out,
            "cloning the repository failed",
            &format!(
                "cloning the repository took longer than {} s",
                timeout.as_secs()
            ),
        )
    }
}
