//! Where an `owner/repo` slug is cloned from, and with which credential (issue 21, "Use"):
//! the provider's public host, the host the user stored with their provider token (a
//! self-hosted GitLab, GitHub Enterprise, Forgejo, Bitbucket Data Center), or the base URL
//! the operator maps a provider or a host to (`--git-provider-url KEY=URL`, for servers on a
//! private network, plain `http://` allowed there because the operator chose it).
//!
//! | provider | public host | path |
//! |---|---|---|
//! | `github` | github.com | `/{owner}/{repo}.git` |
//! | `gitlab` | gitlab.com | `/{group}/…/{repo}.git` |
//! | `bitbucket` | bitbucket.org | `/{workspace}/{repo}.git` |
//! | `forgejo` | codeberg.org | `/{owner}/{repo}.git` |
//! | `azure_devops` | dev.azure.com | `/{organization}/{project}/_git/{repo}` |
//! | `bitbucket_data_center` | none (a host must be stored or mapped) | `/scm/{project}/{repo}.git` |

use std::collections::BTreeMap;

/// The operator's base URLs by provider name or by `host[:port]`
/// (`--git-provider-url KEY=URL`): an `http://` or `https://` URL without credentials,
/// query or fragment, its trailing `/` dropped.
pub type ProviderUrls = BTreeMap<String, String>;

/// Checks one `--git-provider-url` entry `KEY=URL` and returns it split.
///
/// # Errors
/// Why it is refused: no `=`, an empty key, a URL that is not `http://` or `https://`,
/// that holds credentials (`@`), a query, a fragment or a space.
pub fn parse_provider_url(entry: &str) -> Result<(String, String), String> {
    let (key, url) = entry
        .split_once('=')
        .ok_or_else(|| format!("{entry:?} is not KEY=URL"))?;
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or_else(|| format!("{url:?} is not an http:// or https:// URL"))?;
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'))
    {
        return Err(format!("{key:?} is not a provider name or host[:port]"));
    }
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty()
        || !url.bytes().all(|b| b.is_ascii_graphic())
        || url.contains(['@', '?', '#'])
    {
        return Err(format!(
            "{url:?} must be a base URL without credentials, query or fragment"
        ));
    }
    Ok((key.to_owned(), url.trim_end_matches('/').to_owned()))
}

/// The URL `git clone` gets for `slug` at `provider`: from the operator's URL for
/// `stored_host` (else `https://{stored_host}`) when the user stored a host with their token,
/// else the operator's URL for the provider, else the provider's public host (module table).
/// A slug of another shape than the provider's is still mapped (git then fails to find it).
///
/// # Errors
/// `bitbucket_data_center` with no host stored or mapped, or an unknown provider: no host to
/// clone from (give the repository's URL).
pub fn provider_url(
    provider: &str,
    slug: &str,
    stored_host: Option<&str>,
    operator: &ProviderUrls,
) -> Result<String, String> {
    let slug = slug.strip_suffix(".git").unwrap_or(slug);
    let base = match stored_host {
        Some(host) => operator
            .get(host)
            .cloned()
            .unwrap_or_else(|| format!("https://{host}")),
        None => match operator.get(provider) {
            Some(url) => url.clone(),
            None => public_host(provider)
                .ok_or_else(|| {
                    format!("git_provider {provider:?} has no public host: give the repository's URL, or store the host with your token")
                })?
                .to_owned(),
        },
    };
    Ok(match provider {
        "azure_devops" => match slug.rsplit_once('/') {
            Some((org_project, repo)) if org_project.contains('/') => {
                format!("{base}/{org_project}/_git/{repo}")
            }
            _ => format!("{base}/{slug}"),
        },
        "bitbucket_data_center" => format!("{base}/scm/{slug}.git"),
        _ => format!("{base}/{slug}.git"),
    })
}

/// The public host of `provider`, `https://` included; `None` for one without.
fn public_host(provider: &str) -> Option<&'static str> {
    Some(match provider {
        "github" => "https://github.com",
        "gitlab" => "https://gitlab.com",
        "bitbucket" => "https://bitbucket.org",
        "forgejo" => "https://codeberg.org",
        "azure_devops" => "https://dev.azure.com",
        _ => return None,
    })
}

/// The user name and password git presents for `token` at `provider` (the forms each
/// provider takes for a token over HTTPS): GitHub and Forgejo/Gitea `x-access-token`, GitLab
/// `oauth2`, Bitbucket `x-token-auth` (a token written `user:app-password` is that pair),
/// Azure DevOps `pat`.
pub fn token_credential(provider: &str, token: &str) -> (String, String) {
    let user = match provider {
        "gitlab" => "oauth2",
        "bitbucket" | "bitbucket_data_center" => {
            if let Some((user, password)) = token.split_once(':') {
                return (user.to_owned(), password.to_owned());
            }
            "x-token-auth"
        }
        "azure_devops" => "pat",
        _ => "x-access-token",
    };
    (user.to_owned(), token.to_owned())
}

/// `host[:port]` of an `http(s)://` URL, lower-cased, as git names it to a credential
/// helper (`host=` line); `None` for another form.
pub fn url_host(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))?;
    let host = rest.split('/').next()?;
    (!host.is_empty() && !host.contains('@')).then(|| host.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(provider: &str, slug: &str, host: Option<&str>, op: &[(&str, &str)]) -> String {
        let op: ProviderUrls = op
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        provider_url(provider, slug, host, &op).unwrap()
    }

    #[test]
    fn hosts_by_precedence() {
        assert_eq!(
            url("github", "o/r", None, &[]),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            url("gitlab", "g/s/r", Some("git.corp:8443"), &[]),
            "https://git.corp:8443/g/s/r.git"
        );
        assert_eq!(
            url(
                "gitlab",
                "g/r",
                Some("git.corp"),
                &[("git.corp", "http://127.0.0.1:9")]
            ),
            "http://127.0.0.1:9/g/r.git"
        );
        assert_eq!(
            url(
                "github",
                "o/r.git",
                None,
                &[("github", "https://ghe.corp/base")]
            ),
            "https://ghe.corp/base/o/r.git"
        );
        assert_eq!(
            url("bitbucket_data_center", "P/r", Some("bb.corp"), &[]),
            "https://bb.corp/scm/P/r.git"
        );
        assert_eq!(
            url("azure_devops", "org/p/r", None, &[]),
            "https://dev.azure.com/org/p/_git/r"
        );
        assert!(provider_url("bitbucket_data_center", "P/r", None, &ProviderUrls::new()).is_err());
    }

    #[test]
    fn operator_entries_are_checked() {
        assert_eq!(
            parse_provider_url("gitlab=http://127.0.0.1:8080/").unwrap(),
            ("gitlab".into(), "http://127.0.0.1:8080".into())
        );
        for bad in [
            "gitlab",
            "=https://x",
            "gitlab=ftp://x",
            "gitlab=https://u:p@x",
            "gitlab=https://x?q",
            "gitlab=https://",
            "git lab=https://x",
        ] {
            assert!(parse_provider_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_per_provider() {
        assert_eq!(token_credential("gitlab", "t").0, "oauth2");
        assert_eq!(
            token_credential("github", "t"),
            ("x-access-token".into(), "t".into())
        );
        assert_eq!(
            token_credential("bitbucket", "me:pw"),
            ("me".into(), "pw".into())
        );
        assert_eq!(
            url_host("http://127.0.0.1:9/o/r.git").as_deref(),
            Some("127.0.0.1:9")
        );
        assert_eq!(url_host("ssh://h/r"), None);
    }
}
