//! A real OpenID provider for sign-in tests (issue 34): `scripts/oidc-provider` (npm
//! `oidc-provider`, certified; `scripts/oidc-provider/setup.sh` installs it) run with Node on
//! a loopback port ([`OidcProvider`]), and a scripted browser ([`Browser`]) that signs in
//! through the provider's own login and consent forms with plain HTTP requests.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The directory of the provider's script.
pub fn provider_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/oidc-provider")
}

/// Why the provider cannot run here (`None`: it can): no `node`, or its packages not
/// installed (`scripts/oidc-provider/setup.sh`).
pub fn unavailable() -> Option<String> {
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no node on PATH (Debian's nodejs)".into());
    }
    if !provider_dir().join("node_modules/oidc-provider").is_dir() {
        return Some(
            "scripts/oidc-provider/node_modules is missing: run scripts/oidc-provider/setup.sh"
                .into(),
        );
    }
    None
}

/// The provider, stopped on drop.
pub struct OidcProvider {
    child: Child,
    /// Its issuer URL (`http://127.0.0.1:PORT`).
    pub issuer: String,
}

/// The test client's id and secret the provider is started with.
pub const CLIENT_ID: &str = "switchboard";
/// The test client's secret.
pub const CLIENT_SECRET: &str = "switchboard-secret";

impl OidcProvider {
    /// Starts the provider with one client ([`CLIENT_ID`], [`CLIENT_SECRET`]) allowed to
    /// return to `redirect_uris`, its default accounts (alice, verified, groups
    /// `engineering`; bob, unverified; carol, verified, groups `admins`; passwords
    /// `<login>-password`) and ID tokens living `id_token_ttl` seconds.
    ///
    /// # Panics
    /// When it cannot start ([`unavailable`] says why beforehand).
    pub fn start(redirect_uris: &[&str], id_token_ttl: u32) -> OidcProvider {
        OidcProvider::start_behind(redirect_uris, id_token_ttl, 0)
    }

    /// As [`OidcProvider::start`], the provider's clock `clock_behind` seconds behind (past
    /// `id_token_ttl`, its ID tokens have lapsed when issued).
    ///
    /// # Panics
    /// As [`OidcProvider::start`].
    pub fn start_behind(
        redirect_uris: &[&str],
        id_token_ttl: u32,
        clock_behind: u32,
    ) -> OidcProvider {
        let clients = format!(
            r#"[{{"client_id":"{CLIENT_ID}","client_secret":"{CLIENT_SECRET}","redirect_uris":[{}]}}]"#,
            redirect_uris
                .iter()
                .map(|u| format!("\"{u}\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut child = Command::new("node")
            .arg(provider_dir().join("provider.mjs"))
            .env("OIDC_PORT", "0")
            .env("OIDC_CLIENTS", clients)
            .env("OIDC_ID_TOKEN_TTL", id_token_ttl.to_string())
            .env("OIDC_CLOCK_BEHIND", clock_behind.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the provider");
        // Its first line, within a minute (a provider that never starts fails the test).
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(60)) else {
            let _ = child.kill();
            panic!("the OpenID provider printed nothing within 60 s");
        };
        let issuer = line
            .trim()
            .strip_prefix("ISSUER=")
            .unwrap_or_else(|| panic!("the provider printed {line:?}"))
            .to_owned();
        OidcProvider { child, issuer }
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser without a screen: one cookie jar, redirects followed by hand (so each hop can
/// be seen), the provider's forms submitted as a person would.
pub struct Browser {
    client: reqwest::Client,
}

/// What a page answered: status, the URL it was at, `Location`, body.
#[derive(Debug, Clone)]
pub struct Page {
    /// HTTP status.
    pub status: u16,
    /// The URL fetched.
    pub url: String,
    /// `Location`, for a redirect (absolute).
    pub location: Option<String>,
    /// The body.
    pub body: String,
}

/// `location` made absolute against `base`'s origin.
fn absolute(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let origin_end = base
        .find("://")
        .map(|i| base[i + 3..].find('/').map_or(base.len(), |j| i + 3 + j))
        .unwrap_or(base.len());
    format!("{}{location}", &base[..origin_end])
}

/// The `value` of the hidden input `name` in an HTML page.
pub fn hidden_value(body: &str, name: &str) -> Option<String> {
    let at = body.find(&format!("name=\"{name}\" value=\""))?;
    let rest = &body[at + name.len() + 15..];
    Some(rest[..rest.find('"')?].to_owned())
}

impl Default for Browser {
    fn default() -> Self {
        Browser::new()
    }
}

impl Browser {
    /// A browser with an empty cookie jar.
    pub fn new() -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .expect("a client"),
        }
    }

    async fn page(&self, url: &str, resp: reqwest::Response) -> Page {
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(|l| absolute(url, l));
        Page {
            status,
            url: url.to_owned(),
            location,
            body: resp.text().await.unwrap_or_default(),
        }
    }

    /// `GET url`.
    pub async fn get(&self, url: &str) -> Page {
        let resp = self.client.get(url).send().await.expect("GET");
        self.page(url, resp).await
    }

    /// `POST url` with a form.
    pub async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Page {
        let resp = self.client.post(url).form(form).send().await.expect("POST");
        self.page(url, resp).await
    }

    /// Follows redirects from `page` until one that is not (at most 20 hops), or one to a
    /// URL starting with `stop_at` (returned unfollowed).
    pub async fn follow(&self, mut page: Page, stop_at: Option<&str>) -> Page {
        for _ in 0..20 {
            let Some(next) = page.location.clone() else {
                return page;
            };
            if stop_at.is_some_and(|s| next.starts_with(s)) {
                return page;
            }
            page = self.get(&next).await;
        }
        panic!("more than 20 redirects, at {}", page.url);
    }

    /// Signs in at the provider from `start` (Switchboard's `/login…`): submits the login
    /// form as `login` / `password` and the consent form, and stops at the redirect to
    /// `callback_prefix` (Switchboard's callback), returned unfollowed. A page that is
    /// neither form nor redirect is returned as it is (a refusal).
    pub async fn sign_in_at_provider(
        &self,
        start: &str,
        login: &str,
        password: &str,
        callback_prefix: &str,
    ) -> Page {
        let mut page = self
            .follow(self.get(start).await, Some(callback_prefix))
            .await;
        for _ in 0..4 {
            if page.location.is_some() || page.status != 200 {
                return page;
            }
            let action = page.url.clone();
            let next = match hidden_value(&page.body, "prompt").as_deref() {
                Some("login") => {
                    self.post_form(
                        &action,
                        &[
                            ("prompt", "login"),
                            ("login", login),
                            ("password", password),
                        ],
                    )
                    .await
                }
                Some("consent") => self.post_form(&action, &[("prompt", "consent")]).await,
                _ => return page,
            };
            page = self.follow(next, Some(callback_prefix)).await;
        }
        page
    }
}
