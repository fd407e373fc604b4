//! Where a start may clone from (issue 18, "Repository sources"): `selected_repository` is
//! checked when the start is asked for (a 422 naming the field, before any sandbox starts),
//! and again by the pipeline's clone, which clones only what [`clone_source`] returns.
//!
//! | form | cloned from |
//! |---|---|
//! | `owner/repo` with `git_provider` (GitHub when none) | the provider's HTTPS URL ([`provider_url`]) |
//! | `https://[user[:token]@]host[:port]/path` | as given |
//! | `ssh://[user@]host[:port]/path` | as given |
//! | `user@host:path` (`git@github.com:owner/repo.git`) | as given |
//! | `/absolute/path`, `file:///absolute/path` | as given, only under a directory of `--allow-local-repositories` |
//!
//! Anything else is refused: other transports (`ext::`, `fd::`, `http://`, `git://`, …), a
//! value starting with `-` (an option to git), relative paths, `..`, anything but printable
//! ASCII without spaces. `selected_branch` must be a plain branch name ([`check_branch`]):
//! never anything git could read as an option. The remote forms are one pattern
//! ([`REPOSITORY_PATTERN`]), which the OpenAPI document states.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::provider_remote;

/// The longest `selected_repository` accepted, in bytes.
pub const MAX_REPOSITORY_LEN: usize = 2048;
/// The longest `selected_branch` accepted, in bytes.
pub const MAX_BRANCH_LEN: usize = 255;

/// A host name (never starting with `-`, which would reach ssh as an option) or an IP
/// literal in brackets.
macro_rules! host {
    () => {
        r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])"
    };
}

/// The remote forms `selected_repository` takes, as one pattern (ECMA-262 and Rust syntax
/// alike, so the OpenAPI document states exactly the server's rule): printable ASCII without
/// spaces, and `https://[userinfo@]host[:port][/path]`, `ssh://[user@]host[:port]/path`,
/// `user@host:path` (the path not starting with `-`) or an `owner/repo` slug. Local paths and
/// `file://` URLs are accepted besides, under the directories the operator allows.
pub const REPOSITORY_PATTERN: &str = concat!(
    r"^(?:",
    r"[Hh][Tt][Tt][Pp][Ss]://(?:[!-.0-?A-~]+@)?",
    host!(),
    r"(?::[0-9]{1,5})?(?:/[!-~]*)?",
    r"|[Ss][Ss][Hh]://(?:[A-Za-z0-9_][A-Za-z0-9_.-]*@)?",
    host!(),
    r"(?::[0-9]{1,5})?/[!-~]+",
    r"|[A-Za-z0-9_][A-Za-z0-9_.-]*@",
    host!(),
    r":(?:[!-,.0-9;-~][!-9;-~]*|/[!-~]+)",
    r"|[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+",
    r")$"
);

/// `selected_branch`: segments of letters, digits and `_+=,-` (inner dots allowed, never two
/// in a row or at a segment's end) joined by `/`, starting with a letter, a digit or `_`;
/// never anything git could read as an option. A subset of what `git check-ref-format`
/// accepts for a branch.
pub const BRANCH_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9_+=,-]*(?:\.[A-Za-z0-9_+=,-]+)*(?:/[A-Za-z0-9_+=,-]+(?:\.[A-Za-z0-9_+=,-]+)*)*$";

/// The owner/repo slug among the forms of [`REPOSITORY_PATTERN`].
const SLUG_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+$";

/// What every refusal says the field may be.
const ACCEPTED: &str = "selected_repository must be owner/repo (with a git_provider; GitHub \
    when none), an https:// or ssh:// URL, user@host:path, or a local path or file:// URL \
    under a directory the server allows (--allow-local-repositories), in printable ASCII \
    without spaces";

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid pattern"))
}

/// The argument `git clone` gets for `repository` (see the module's table), or why it cannot
/// be cloned: [`check`]'s refusal, or a slug whose `git_provider` has no public host.
/// `allowed_local` are the canonical directories of `--allow-local-repositories`.
///
/// # Errors
/// The refusal's message.
pub fn clone_source(
    repository: &str,
    git_provider: Option<&str>,
    allowed_local: &[PathBuf],
) -> Result<String, String> {
    match check(repository, allowed_local)? {
        Form::Local(path) => Ok(path),
        Form::Url => Ok(repository.to_owned()),
        Form::Slug => provider_url(git_provider.unwrap_or("github"), repository),
    }
}

/// The form of an accepted `selected_repository`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// A local path or `file://` URL under an allowed directory: what git gets, resolved.
    Local(String),
    /// An `https://` or `ssh://` URL or `user@host:path`, given to git as it is.
    Url,
    /// `owner/repo`, cloned from its provider ([`provider_url`]).
    Slug,
}

/// Checks `repository` alone (the rule of the request's field: [`REPOSITORY_PATTERN`], or a
/// local repository under `allowed_local`) and tells its form.
///
/// # Errors
/// The refusal's message (a 422 at `selected_repository`).
pub fn check(repository: &str, allowed_local: &[PathBuf]) -> Result<Form, String> {
    if repository.is_empty() || repository.len() > MAX_REPOSITORY_LEN {
        return Err(format!(
            "selected_repository must hold 1 to {MAX_REPOSITORY_LEN} bytes"
        ));
    }
    if !repository.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ACCEPTED.to_owned());
    }
    if let Some(path) = strip_prefix_ignore_case(repository, "file://") {
        let path = path.strip_prefix("localhost").unwrap_or(path);
        if path.contains('%') {
            return Err("a file:// URL must give its path as it is (no %-escapes)".to_owned());
        }
        return local(Path::new(path), allowed_local)
            .map(|p| Form::Local(format!("file://{}", p.display())));
    }
    if repository.starts_with('/') {
        return local(Path::new(repository), allowed_local)
            .map(|p| Form::Local(p.display().to_string()));
    }
    static REMOTE: OnceLock<Regex> = OnceLock::new();
    static SLUG: OnceLock<Regex> = OnceLock::new();
    if !regex(&REMOTE, REPOSITORY_PATTERN).is_match(repository) {
        return Err(ACCEPTED.to_owned());
    }
    if regex(&SLUG, SLUG_PATTERN).is_match(repository) {
        Ok(Form::Slug)
    } else {
        Ok(Form::Url)
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// The HTTPS URL of `slug` (`owner/repo`) at `provider`'s public host
/// ([`provider_remote::provider_url`] with no stored host and no operator URL).
///
/// # Errors
/// `bitbucket_data_center` (or an unknown provider): it has no public host, its
/// repositories are given by URL.
pub fn provider_url(provider: &str, slug: &str) -> Result<String, String> {
    provider_remote::provider_url(provider, slug, None, &provider_remote::ProviderUrls::new())
}

/// A local repository: an absolute path with no `.` or `..`, under a directory of
/// `allowed` (also once symbolic links are resolved, when it exists). Returns it resolved.
fn local(path: &Path, allowed: &[PathBuf]) -> Result<PathBuf, String> {
    if allowed.is_empty() {
        return Err(
            "local repositories are not allowed on this server (its operator lists the \
             directories they may be cloned from with --allow-local-repositories)"
                .to_owned(),
        );
    }
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Err("a local repository is an absolute path without '.' or '..'".to_owned());
    }
    let under = |p: &Path| allowed.iter().any(|dir| p.starts_with(dir) && p != dir);
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if under(path) && under(&resolved) {
        Ok(resolved)
    } else {
        Err(format!(
            "{} is not under a directory this server allows local repositories from \
             (--allow-local-repositories)",
            path.display()
        ))
    }
}

/// Checks `selected_branch` against [`BRANCH_PATTERN`] and [`MAX_BRANCH_LEN`].
///
/// # Errors
/// The refusal's message (a 422 at `selected_branch`).
pub fn check_branch(branch: &str) -> Result<(), String> {
    static BRANCH: OnceLock<Regex> = OnceLock::new();
    if branch.len() <= MAX_BRANCH_LEN && regex(&BRANCH, BRANCH_PATTERN).is_match(branch) {
        Ok(())
    } else {
        Err(format!(
            "{branch:?} is not a branch name this server clones: 1 to {MAX_BRANCH_LEN} bytes \
             of letters, digits and _+=,-. in segments joined by '/', starting with a \
             letter, a digit or '_', without '..'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(repo: &str, provider: Option<&str>) -> String {
        clone_source(repo, provider, &[])
            .unwrap_or_else(|e| panic!("{repo} ({provider:?}) refused: {e}"))
    }

    #[test]
    fn remote_forms_are_accepted_as_given() {
        for repo in [
            "https://github.com/o/r.git",
            "HTTPS://user:tok@git.example:8443/group/sub/r",
            "https://[::1]:3000/r",
            "ssh://git@github.com/o/r.git",
            "ssh://host:2222/srv/git/r",
            "git@github.com:o/r.git",
            "deploy@git.example:/srv/r.git",
        ] {
            assert_eq!(ok(repo, None), repo);
        }
    }

    #[test]
    fn slugs_become_the_providers_urls() {
        assert_eq!(ok("o/r", Some("github")), "https://github.com/o/r.git");
        assert_eq!(ok("o/r.git", Some("github")), "https://github.com/o/r.git");
        assert_eq!(ok("g/s/r", Some("gitlab")), "https://gitlab.com/g/s/r.git");
        assert_eq!(
            ok("w/r", Some("bitbucket")),
            "https://bitbucket.org/w/r.git"
        );
        assert_eq!(ok("o/r", Some("forgejo")), "https://codeberg.org/o/r.git");
        assert_eq!(
            ok("org/proj/r", Some("azure_devops")),
            "https://dev.azure.com/org/proj/_git/r"
        );
        assert_eq!(
            ok("o/r", None),
            "https://github.com/o/r.git",
            "GitHub by default"
        );
        assert_eq!(check("o/r", &[]), Ok(Form::Slug));
        assert!(
            clone_source("o/r", Some("bitbucket_data_center"), &[]).is_err(),
            "no public host"
        );
        for repo in ["o/../r", "o/./r"] {
            assert!(check(repo, &[]).is_err(), "{repo}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for repo in [
            "",
            "ext::sh -c touch% /tmp/pwned",
            "ext::sh",
            "fd::17",
            "-uhelp",
            "--upload-pack=touch /tmp/x",
            "http://example.com/r.git",
            "git://example.com/r.git",
            "ftp://example.com/r",
            "ssh://-oProxyCommand=x/r",
            "git@-oProxyCommand=x:r",
            "git@host:-r",
            "https://github.com/o/r\n",
            "https://github.com/o/r x",
            "https://github.com/o/r\u{e9}",
            "relative/../path",
            "./r",
            "r",
            "~/r",
            "/etc/passwd",
            "file:///etc",
        ] {
            assert!(clone_source(repo, Some("github"), &[]).is_err(), "{repo:?}");
        }
        assert!(clone_source(&"a".repeat(MAX_REPOSITORY_LEN + 1), None, &[]).is_err());
        assert!(check_branch(&"a".repeat(MAX_BRANCH_LEN + 1)).is_err());
    }

    #[test]
    fn local_repositories_only_under_allowed_directories() {
        let root = tempfile::tempdir().unwrap();
        let allowed = std::fs::canonicalize(root.path()).unwrap().join("repos");
        let other = std::fs::canonicalize(root.path()).unwrap().join("other");
        std::fs::create_dir_all(allowed.join("r")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&other, allowed.join("escape")).unwrap();
        let dirs = [allowed.clone()];
        let r = allowed.join("r").display().to_string();
        assert_eq!(clone_source(&r, None, &dirs).unwrap(), r);
        assert_eq!(
            clone_source(&format!("file://{r}"), None, &dirs).unwrap(),
            format!("file://{r}")
        );
        for refused in [
            other.display().to_string(),
            allowed.display().to_string(),
            format!("{}/../other", allowed.display()),
            format!("{}/escape", allowed.display()),
            format!("file://{}", other.display()),
            format!("file://{}%2Fr", allowed.display()),
        ] {
            assert!(clone_source(&refused, None, &dirs).is_err(), "{refused}");
        }
        assert!(
            clone_source(&r, None, &[]).is_err(),
            "none allowed by default"
        );
    }

    #[test]
    fn branches_are_plain_names() {
        for ok in [
            "main",
            "work",
            "feature/x-1",
            "v1.2",
            "release_2026",
            "a/-b",
        ] {
            assert!(check_branch(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-b",
            "--upload-pack=x",
            "a..b",
            "a b",
            "a~1",
            "a^",
            "x:y",
            "a*",
            "a[",
            "x/",
            "/x",
            ".x",
            "x.",
            "a@{1}",
            "@",
            "a\nb",
            "a//b",
        ] {
            assert!(check_branch(bad).is_err(), "{bad:?}");
        }
    }
}
