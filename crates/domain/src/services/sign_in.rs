//! Signing in through the company's OpenID provider (issue 34): the sign-in in flight, the
//! user a provider identity is (matched by issuer and subject; a first sign-in links a user
//! of the same verified e-mail or creates one, a member by the operator's rules), browser
//! sessions, and what a signed-in member does on their account page (their organizations;
//! their own API keys: create, list, revoke).
//!
//! The protocol itself (discovery, PKCE, the ID token's checks) is the HTTP layer's, with a
//! certified client library; this service sees only checked claims.

use std::sync::Arc;

use serde_json::json;
use time::{Duration, OffsetDateTime};

use crate::error::{DomainError, StorageError};
use crate::identity::api_keys::{ApiKeyRecord, IssuedKey};
use crate::identity::audit::{Actor, AuditAction, AuditEntry};
use crate::identity::sign_in::{
    MembershipRule, ProviderIdentity, SignInState, WebSession, fresh_secret, secret_hash,
};
use crate::identity::{OrgMembership, User};
use crate::ids::{ApiKeyId, UserId};
use crate::permissions::Role;
use crate::ports::{IdentityLink, IdentityStore, NewWebSession, SignInStore};
use crate::services::ApiKeyService;
use crate::time_input::now_micros;

/// How long a sign-in may take at the provider.
pub const SIGN_IN_STATE_TTL: Duration = Duration::minutes(10);

/// How long a browser session lasts by default (`--session-ttl-hours`).
pub const DEFAULT_SESSION_TTL: Duration = Duration::hours(12);

/// The prefix of session cookies' values.
const SESSION_PREFIX: &str = "sbw_";

/// A session just opened: the cookie's value (given out once) and its CSRF token.
#[derive(Debug, Clone)]
pub struct OpenedSession {
    /// The cookie's value.
    pub cookie: String,
    /// The user.
    pub user: User,
    /// Whether this sign-in created the user.
    pub created: bool,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
}

/// What the account page shows.
#[derive(Debug, Clone)]
pub struct Account {
    /// The user.
    pub user: User,
    /// Their organizations and roles, by name.
    pub memberships: Vec<OrgMembership>,
    /// Their keys, newest first, revoked ones included.
    pub keys: Vec<ApiKeyRecord>,
}

/// Sign-ins, sessions and the account page.
#[derive(Clone)]
pub struct SignInService {
    identity: Arc<dyn IdentityStore>,
    store: Arc<dyn SignInStore>,
    api_keys: ApiKeyService,
    rules: Arc<Vec<MembershipRule>>,
    session_ttl: Duration,
}

/// Whether `path` is a path of this server and nothing else: it starts with one `/`, and
/// holds no backslash or control character (browsers read `/\host` and `//host` as another
/// host: an open redirect).
fn is_local_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.chars().any(|c| c == '\\' || c.is_control())
}

/// Refuses a sign-in with the text the person sees (403).
fn refuse(text: &str) -> DomainError {
    DomainError::Forbidden(text.to_owned())
}

impl SignInService {
    /// The service over the stores; no membership rules; sessions of
    /// [`DEFAULT_SESSION_TTL`].
    pub fn new(
        identity: Arc<dyn IdentityStore>,
        store: Arc<dyn SignInStore>,
        api_keys: ApiKeyService,
    ) -> Self {
        SignInService {
            identity,
            store,
            api_keys,
            rules: Arc::new(Vec::new()),
            session_ttl: DEFAULT_SESSION_TTL,
        }
    }

    /// With the operator's membership rules for first sign-ins and a session lifetime.
    pub fn configured(
        mut self,
        rules: Vec<MembershipRule>,
        session_ttl: std::time::Duration,
    ) -> Self {
        self.rules = Arc::new(rules);
        self.session_ttl = Duration::try_from(session_ttl).unwrap_or(DEFAULT_SESSION_TTL);
        self
    }

    /// With another key service (its limit per member).
    pub(crate) fn with_api_keys(mut self, api_keys: ApiKeyService) -> Self {
        self.api_keys = api_keys;
        self
    }

    /// Keeps a sign-in in flight: `state` (the value sent to the provider), the ID token's
    /// `nonce`, the PKCE verifier and where to go after (a path of this server; anything
    /// else becomes `/account`).
    ///
    /// # Errors
    /// Storage.
    pub fn begin(
        &self,
        state: &str,
        nonce: &str,
        pkce_verifier: &str,
        return_to: &str,
    ) -> Result<(), DomainError> {
        let return_to = if is_local_path(return_to) {
            return_to
        } else {
            "/account"
        };
        let s = SignInState {
            nonce: nonce.to_owned(),
            pkce_verifier: pkce_verifier.to_owned(),
            return_to: return_to.to_owned(),
            expires_at: now_micros() + SIGN_IN_STATE_TTL,
        };
        Ok(self.store.put_sign_in_state(&secret_hash(state), &s)?)
    }

    /// The sign-in of `state`, once: a state that was never issued, was used or lapsed is
    /// refused (a tampered or replayed callback).
    ///
    /// # Errors
    /// [`DomainError::BadRequest`]; storage.
    pub fn resume(&self, state: &str) -> Result<SignInState, DomainError> {
        self.store
            .take_sign_in_state(&secret_hash(state), now_micros())?
            .ok_or_else(|| {
                DomainError::BadRequest(
                    "This sign-in is unknown, used or expired: start again at /login".into(),
                )
            })
    }

    /// The user `who` is, made or found (module doc), then a new session of theirs.
    ///
    /// # Errors
    /// 403 with the reason for an identity without an e-mail, one whose e-mail belongs to
    /// another user but is unverified, or a disabled user; storage.
    pub fn sign_in(
        &self,
        who: &ProviderIdentity,
        remote_addr: Option<&str>,
    ) -> Result<OpenedSession, DomainError> {
        let now = now_micros();
        let email = who
            .email
            .as_deref()
            .map(str::trim)
            .filter(|e| e.contains('@'))
            .ok_or_else(|| {
                refuse("The identity provider gave no e-mail address: Switchboard needs the email scope")
            })?;
        let link = IdentityLink {
            issuer: &who.issuer,
            subject: &who.subject,
            email,
            at: now,
        };
        let (user, created) = match self.store.user_by_identity(&who.issuer, &who.subject)? {
            Some(id) => (
                self.identity.user(id)?.ok_or(DomainError::UserNotFound)?,
                false,
            ),
            None => match self.identity.user_by_email(email)? {
                Some(u) if who.email_verified => (u, false),
                Some(_) => {
                    return Err(refuse(
                        "A user with this e-mail exists, and the identity provider does not say the e-mail is verified: verify it there, or ask an admin",
                    ));
                }
                None => (self.create(who, email, &link)?, true),
            },
        };
        if user.disabled_at.is_some() {
            return Err(DomainError::UserDisabled);
        }
        if !created {
            self.store.link_identity(user.id, &link)?;
        }
        let secret = fresh_secret(SESSION_PREFIX);
        let csrf = fresh_secret("").value;
        let expires_at = now + self.session_ttl;
        self.store.insert_web_session(&NewWebSession {
            id_hash: &secret.hash,
            user_id: user.id,
            csrf_token: &csrf,
            remote_addr,
            created_at: now,
            expires_at,
        })?;
        Ok(OpenedSession {
            cookie: secret.value,
            user,
            created,
            expires_at,
        })
    }

    /// A first sign-in's user, a member where the operator's rules say.
    fn create(
        &self,
        who: &ProviderIdentity,
        email: &str,
        link: &IdentityLink<'_>,
    ) -> Result<User, DomainError> {
        let mut user = User {
            id: UserId::new_random(),
            email: email.to_owned(),
            name: who.name.clone(),
            current_org_id: None,
            created_at: link.at,
            disabled_at: None,
        };
        let mut memberships: Vec<(crate::ids::OrgId, Role, AuditEntry)> = Vec::new();
        for rule in self.rules.iter().filter(|r| r.applies_to(who)) {
            if memberships.iter().any(|(o, _, _)| *o == rule.org) {
                continue;
            }
            if self.identity.org_membership(rule.org, user.id)?.is_none() {
                tracing::warn!(rule = %rule, "a sign-in rule names an organization that does not exist");
                continue;
            }
            let entry = AuditEntry {
                org: Some(rule.org),
                actor: Actor::User {
                    id: user.id,
                    email: email.to_owned(),
                },
                action: AuditAction::MemberAdded,
                target: Some((user.id, email.to_owned())),
                detail: json!({ "role": rule.role.as_str(), "rule": rule.to_string() }),
                remote_addr: None,
                at: link.at,
            };
            memberships.push((rule.org, rule.role, entry));
        }
        user.current_org_id = memberships.first().map(|(o, _, _)| *o);
        match self.store.create_signed_in_user(&user, link, &memberships) {
            Ok(()) => Ok(user),
            // Two first sign-ins of one person at once: the other made the user.
            Err(StorageError::UniqueViolation(_)) => self
                .identity
                .user_by_email(email)?
                .ok_or(DomainError::UserNotFound),
            Err(e) => Err(e.into()),
        }
    }

    /// The session of a cookie's value.
    ///
    /// # Errors
    /// [`DomainError::NotAuthenticated`] for none, an unknown or a lapsed one;
    /// [`DomainError::UserDisabled`]; storage.
    pub fn session(&self, cookie: &str) -> Result<WebSession, DomainError> {
        if !cookie.starts_with(SESSION_PREFIX) {
            return Err(DomainError::NotAuthenticated);
        }
        let s = self
            .store
            .web_session(&secret_hash(cookie), now_micros())?
            .ok_or(DomainError::NotAuthenticated)?;
        if s.user_disabled {
            return Err(DomainError::UserDisabled);
        }
        Ok(s)
    }

    /// Ends the session of a cookie's value.
    ///
    /// # Errors
    /// Storage.
    pub fn sign_out(&self, cookie: &str) -> Result<(), DomainError> {
        Ok(self.store.delete_web_session(&secret_hash(cookie))?)
    }

    /// The account page of a session's user.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`]; storage.
    pub fn account(&self, session: &WebSession) -> Result<Account, DomainError> {
        let user = self
            .identity
            .user(session.user_id)?
            .ok_or(DomainError::UserNotFound)?;
        Ok(Account {
            memberships: self.identity.memberships(user.id)?,
            keys: self.identity.api_keys_of(user.id)?,
            user,
        })
    }

    /// A new key of the session's user, bound to no organization (it acts in their current
    /// one, or the one `X-Org-Id` names), within the limit per member.
    ///
    /// # Errors
    /// 409 at the limit; 422 for a bad name; storage.
    pub fn create_key(&self, session: &WebSession, name: &str) -> Result<IssuedKey, DomainError> {
        let request = crate::identity::api_keys::ApiKeyCreate::named(name)?;
        self.api_keys
            .issue_within_limit(session.user_id, None, request.name().to_owned(), None)
    }

    /// Revokes a key of the session's user.
    ///
    /// # Errors
    /// [`DomainError::ApiKeyNotFound`] for another's or none; storage.
    pub fn revoke_key(&self, session: &WebSession, key: ApiKeyId) -> Result<(), DomainError> {
        match self.identity.api_key(key)? {
            Some(k) if k.user_id == session.user_id => {
                self.identity.revoke_api_key(key, now_micros())?;
                Ok(())
            }
            _ => Err(DomainError::ApiKeyNotFound),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_local_path;

    #[test]
    fn only_local_paths_are_returned_to() {
        for ok in ["/account", "/device?user_code=BCDF-GHJK", "/"] {
            assert!(is_local_path(ok), "{ok}");
        }
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "account",
            "/a\nb",
            "",
        ] {
            assert!(!is_local_path(bad), "{bad:?}");
        }
    }
}
