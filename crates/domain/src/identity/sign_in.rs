//! Sign-in (issue 34): who a person is at the company's OpenID provider
//! ([`ProviderIdentity`]), the operator's rules that make a first sign-in a member
//! ([`MembershipRule`]), browser sessions and device authorizations (RFC 8628, as `openhands
//! login` uses them). Their secrets come from the operating system's CSPRNG and are stored as
//! SHA-256 only.

use std::fmt;
use std::str::FromStr;

use time::OffsetDateTime;

use super::secrets::{random_secret, sha256_hex};
use crate::ids::{OrgId, UserId};
use crate::permissions::Role;

/// A person as the provider's ID token names them (claims checked by the caller: issuer,
/// audience, expiry, nonce, signature).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderIdentity {
    /// The provider's issuer URL (`iss`).
    pub issuer: String,
    /// The person's id there (`sub`).
    pub subject: String,
    /// `email`, when the provider gave it.
    pub email: Option<String>,
    /// `email_verified` (absent: `false`).
    pub email_verified: bool,
    /// `name`.
    pub name: Option<String>,
    /// The groups claim (`--oidc-groups-claim`, default `groups`), when a list of strings.
    pub groups: Vec<String>,
}

/// What a [`MembershipRule`] matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleMatch {
    /// A verified e-mail at this domain (`domain:example.com`), any case.
    EmailDomain(String),
    /// This group in the groups claim (`group:engineering`).
    Group(String),
}

/// The operator's rule (`--oidc-member-rule`): a first sign-in that matches becomes a member
/// of `org` with `role`. Written `domain:<domain>=<org-id>:<role>` or
/// `group:<group>=<org-id>:<role>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipRule {
    /// What it matches.
    pub matches: RuleMatch,
    /// The organization.
    pub org: OrgId,
    /// The role given there.
    pub role: Role,
}

impl MembershipRule {
    /// Whether `who` matches: a domain rule needs a verified e-mail.
    pub fn applies_to(&self, who: &ProviderIdentity) -> bool {
        match &self.matches {
            RuleMatch::EmailDomain(d) => {
                who.email_verified
                    && who.email.as_deref().is_some_and(|e| {
                        e.rsplit_once('@')
                            .is_some_and(|(_, host)| host.eq_ignore_ascii_case(d))
                    })
            }
            RuleMatch::Group(g) => who.groups.iter().any(|x| x == g),
        }
    }
}

impl fmt::Display for MembershipRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matches {
            RuleMatch::EmailDomain(d) => write!(f, "domain:{d}")?,
            RuleMatch::Group(g) => write!(f, "group:{g}")?,
        }
        write!(f, "={}:{}", self.org, self.role)
    }
}

impl FromStr for MembershipRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let form = "expected domain:<domain>=<org-id>:<role> or group:<group>=<org-id>:<role>";
        let (what, target) = s.rsplit_once('=').ok_or_else(|| format!("{s}: {form}"))?;
        let (org, role) = target
            .split_once(':')
            .ok_or_else(|| format!("{s}: {form}"))?;
        let org: OrgId = org
            .parse()
            .map_err(|_| format!("{s}: the organization {org:?} is not a UUID"))?;
        let role = Role::parse(role)
            .ok_or_else(|| format!("{s}: the role {role:?} is not owner, admin or member"))?;
        let matches = match what.split_once(':') {
            Some(("domain", d)) if !d.is_empty() => RuleMatch::EmailDomain(d.to_owned()),
            Some(("group", g)) if !g.is_empty() => RuleMatch::Group(g.to_owned()),
            _ => return Err(format!("{s}: {form}")),
        };
        Ok(MembershipRule { matches, org, role })
    }
}

/// A sign-in in flight, kept until its callback (single use).
#[derive(Debug, Clone, PartialEq)]
pub struct SignInState {
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// The PKCE code verifier.
    pub pkce_verifier: String,
    /// Where to go after signing in: a path of this server.
    pub return_to: String,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
}

/// A browser session, as a request finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSession {
    /// The user.
    pub user_id: UserId,
    /// The token every form of the session carries.
    pub csrf_token: String,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
    /// Whether the user is disabled (the session is then refused).
    pub user_disabled: bool,
}

/// The state of a device authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceStatus {
    /// Waiting for a signed-in member.
    Pending,
    /// Approved by this user: the next poll gets a key of theirs.
    Approved(UserId),
    /// Denied.
    Denied,
}

/// A device authorization as its verification page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceGrant {
    /// The code the person types.
    pub user_code: String,
    /// Its state.
    pub status: DeviceStatus,
    /// The address that asked for it.
    pub remote_addr: Option<String>,
    /// When it was asked for.
    pub created_at: OffsetDateTime,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
}

/// What one poll of the token endpoint finds (the store decides it in one transaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevicePoll {
    /// No such device code (never issued, or used already).
    Unknown,
    /// It lapsed (and is gone).
    Expired,
    /// Not decided yet; `slow_down` when polled before its interval passed (the interval is
    /// then raised by 5 s, RFC 8628 §3.5), with the interval now.
    Pending {
        /// Polled too soon.
        slow_down: bool,
        /// Seconds to wait between polls now.
        interval_secs: i64,
    },
    /// Denied (and gone).
    Denied,
    /// Approved by this user (and gone: the code is single use), with its user code.
    Approved(UserId, String),
}

/// A fresh secret: the value given out once, and its SHA-256 hex, what is stored.
#[derive(Debug, Clone)]
pub struct FreshSecret {
    /// The value (a cookie, a device code, a state).
    pub value: String,
    /// Its SHA-256, lowercase hex.
    pub hash: String,
}

/// A fresh random secret with `prefix` and 43 base62 characters (256 bits).
pub fn fresh_secret(prefix: &str) -> FreshSecret {
    let value = random_secret(prefix, 43);
    let hash = sha256_hex(&value);
    FreshSecret { value, hash }
}

/// The SHA-256 hex a presented secret is looked up by.
pub fn secret_hash(value: &str) -> String {
    sha256_hex(value)
}

/// The letters of a user code: no vowels (no words), no look-alikes (RFC 8628 §6.1).
const USER_CODE_LETTERS: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";

/// A user code, `XXXX-XXXX` over 20 consonants (20^8, 34.6 bits; guessing is
/// bounded by the codes' lifetime and the verification page being a signed-in member's).
///
/// # Panics
/// If the operating system has no randomness to give.
pub fn fresh_user_code() -> String {
    let mut out = String::with_capacity(9);
    let mut buf = [0u8; 32];
    while out.len() < 9 {
        getrandom::fill(&mut buf).expect("the OS random number generator failed");
        for b in buf {
            // 240 = 12 * 20: bytes at or above it would bias the choice.
            if b < 240 && out.len() < 9 {
                if out.len() == 4 {
                    out.push('-');
                }
                out.push(USER_CODE_LETTERS[(b % 20) as usize] as char);
            }
        }
    }
    out
}

/// A user code as typed (any case, with or without the dash, spaces around): the stored
/// form, or `None` when it cannot be one.
pub fn normalize_user_code(typed: &str) -> Option<String> {
    let letters: String = typed
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if letters.len() != 8 || !letters.bytes().all(|b| USER_CODE_LETTERS.contains(&b)) {
        return None;
    }
    Some(format!("{}-{}", &letters[..4], &letters[4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(email: &str, verified: bool, groups: &[&str]) -> ProviderIdentity {
        ProviderIdentity {
            email: Some(email.into()),
            email_verified: verified,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..ProviderIdentity::default()
        }
    }

    #[test]
    fn rules_parse_print_and_match() {
        let org = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
        let d: MembershipRule = format!("domain:Example.com={org}:member").parse().unwrap();
        assert_eq!(d.to_string(), format!("domain:Example.com={org}:member"));
        assert!(d.applies_to(&who("a@example.COM", true, &[])));
        assert!(
            !d.applies_to(&who("a@example.com", false, &[])),
            "unverified"
        );
        assert!(!d.applies_to(&who("a@example.com.evil", true, &[])));
        let g: MembershipRule = format!("group:admins={org}:admin").parse().unwrap();
        assert_eq!(g.role, Role::Admin);
        assert!(g.applies_to(&who("x@y", false, &["admins"])));
        assert!(!g.applies_to(&who("x@y", true, &["Admins"])));
        for bad in [
            "domain:x",
            "domain:=a:member",
            &format!("host:x={org}:member"),
            "group:g=not-a-uuid:member",
            &format!("group:g={org}:root"),
        ] {
            assert!(bad.parse::<MembershipRule>().is_err(), "{bad}");
        }
    }

    #[test]
    fn user_codes_have_their_form_and_read_back() {
        for _ in 0..100 {
            let c = fresh_user_code();
            assert_eq!(c.len(), 9);
            assert_eq!(normalize_user_code(&c).as_deref(), Some(c.as_str()));
            assert_eq!(
                normalize_user_code(&c.to_lowercase().replace('-', " ")).as_deref(),
                Some(c.as_str())
            );
        }
        assert_eq!(normalize_user_code("BCDF-GHJ"), None);
        assert_eq!(
            normalize_user_code("ABCD-EFGH"),
            None,
            "vowels are never issued"
        );
        assert_ne!(fresh_secret("s_").value, fresh_secret("s_").value);
    }
}
