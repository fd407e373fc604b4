//! Device authorization for `openhands login` (issue 34; RFC 8628 as openhands 1.16.0's
//! `openhands_cli/auth/device_flow.py` sends and reads it): the CLI asks for a code, a
//! signed-in member approves it on the verification page, and the CLI's next poll gets a new
//! API key of that member (named after the code, revocable on the account page).
//!
//! Codes are single use and lapse after [`DEVICE_CODE_TTL`]; polling faster than the interval
//! is answered `slow_down` with a longer one; at most [`MAX_PENDING_DEVICE_GRANTS`] wait at
//! once on the whole server.

use std::sync::Arc;

use time::Duration;

use crate::error::{DomainError, StorageError};
use crate::identity::api_keys::IssuedKey;
use crate::identity::sign_in::{
    DeviceGrant, DevicePoll, WebSession, fresh_secret, fresh_user_code, normalize_user_code,
    secret_hash,
};
use crate::ports::{NewDeviceGrant, SignInStore};
use crate::services::ApiKeyService;
use crate::time_input::now_micros;

/// How long a device code lives (RFC 8628 `expires_in`).
pub const DEVICE_CODE_TTL: Duration = Duration::minutes(10);

/// The seconds a client waits between polls at first (RFC 8628 `interval`).
pub const DEVICE_POLL_INTERVAL_SECS: i64 = 5;

/// The most device authorizations waiting at once on the server.
pub const MAX_PENDING_DEVICE_GRANTS: i64 = 1000;

/// What `POST /oauth/device/authorize` answers (with the verification URIs the HTTP layer
/// adds).
#[derive(Debug, Clone)]
pub struct DeviceStart {
    /// The device code (the CLI's secret; only its hash is stored).
    pub device_code: String,
    /// The code the person types.
    pub user_code: String,
    /// Seconds it lives.
    pub expires_in: i64,
    /// Seconds between polls.
    pub interval: i64,
}

/// Why a poll got no key (RFC 8628 §3.5's `error` values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceRefusal {
    /// Not approved yet.
    #[error("authorization_pending")]
    AuthorizationPending,
    /// Polled too soon: wait this many seconds between polls.
    #[error("slow_down")]
    SlowDown(i64),
    /// The code lapsed.
    #[error("expired_token")]
    ExpiredToken,
    /// A member denied it.
    #[error("access_denied")]
    AccessDenied,
    /// No such code (never issued, or used already).
    #[error("invalid_grant")]
    InvalidGrant,
}

impl DeviceRefusal {
    /// The `error_description` shown to the person.
    pub fn description(&self) -> &'static str {
        match self {
            DeviceRefusal::AuthorizationPending => {
                "Waiting for a signed-in member to approve the code"
            }
            DeviceRefusal::SlowDown(_) => "Polling too fast: wait the interval between polls",
            DeviceRefusal::ExpiredToken => "The device code expired: run the login again",
            DeviceRefusal::AccessDenied => "The code was denied",
            DeviceRefusal::InvalidGrant => "Unknown or used device code",
        }
    }
}

/// Device codes: issued, decided on the verification page, exchanged for a key.
#[derive(Clone)]
pub struct DeviceAuthService {
    store: Arc<dyn SignInStore>,
    api_keys: ApiKeyService,
}

impl DeviceAuthService {
    /// The service over the sign-in store, issuing keys through `api_keys`.
    pub fn new(store: Arc<dyn SignInStore>, api_keys: ApiKeyService) -> Self {
        DeviceAuthService { store, api_keys }
    }

    /// With another key service (its limit per member).
    pub(crate) fn with_api_keys(mut self, api_keys: ApiKeyService) -> Self {
        self.api_keys = api_keys;
        self
    }

    /// A new device code and user code.
    ///
    /// # Errors
    /// [`DomainError::TooManyRequests`] when [`MAX_PENDING_DEVICE_GRANTS`] wait already;
    /// storage.
    pub fn start(&self, remote_addr: Option<&str>) -> Result<DeviceStart, DomainError> {
        let now = now_micros();
        if self.store.count_pending_device_grants(now)? >= MAX_PENDING_DEVICE_GRANTS {
            return Err(DomainError::TooManyRequests(
                "Too many device logins in flight; retry in a few minutes".into(),
            ));
        }
        let device_code = fresh_secret("sbd_");
        // A taken user code (one in 20^8 per code in flight) is drawn again.
        for _ in 0..5 {
            let user_code = fresh_user_code();
            let grant = NewDeviceGrant {
                device_code_hash: &device_code.hash,
                user_code: &user_code,
                interval_secs: DEVICE_POLL_INTERVAL_SECS,
                remote_addr,
                created_at: now,
                expires_at: now + DEVICE_CODE_TTL,
            };
            match self.store.insert_device_grant(&grant) {
                Ok(()) => {
                    return Ok(DeviceStart {
                        device_code: device_code.value,
                        user_code,
                        expires_in: DEVICE_CODE_TTL.whole_seconds(),
                        interval: DEVICE_POLL_INTERVAL_SECS,
                    });
                }
                Err(StorageError::UniqueViolation(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(DomainError::Conflict("no free user code; retry".into()))
    }

    /// One poll: the key of the member who approved, once; else why not.
    ///
    /// # Errors
    /// `Ok(Err(refusal))` for the RFC's answers; `Err` for storage or the key limit.
    pub fn poll(&self, device_code: &str) -> Result<Result<IssuedKey, DeviceRefusal>, DomainError> {
        Ok(
            match self
                .store
                .poll_device_grant(&secret_hash(device_code), now_micros())?
            {
                DevicePoll::Unknown => Err(DeviceRefusal::InvalidGrant),
                DevicePoll::Expired => Err(DeviceRefusal::ExpiredToken),
                DevicePoll::Denied => Err(DeviceRefusal::AccessDenied),
                DevicePoll::Pending {
                    slow_down: true,
                    interval_secs,
                } => Err(DeviceRefusal::SlowDown(interval_secs)),
                DevicePoll::Pending { .. } => Err(DeviceRefusal::AuthorizationPending),
                DevicePoll::Approved(user, code) => Ok(self.api_keys.issue_within_limit(
                    user,
                    None,
                    format!("openhands login ({code})"),
                    None,
                )?),
            },
        )
    }

    /// The authorization a typed user code names, still waiting or decided, not lapsed.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for a malformed, unknown or lapsed code; storage.
    pub fn lookup(&self, typed: &str) -> Result<DeviceGrant, DomainError> {
        let gone = || DomainError::NotFound("No such code, or it expired".into());
        let code = normalize_user_code(typed).ok_or_else(gone)?;
        self.store
            .device_grant(&code, now_micros())?
            .ok_or_else(gone)
    }

    /// A signed-in member approves (their key goes to the device's next poll) or denies a
    /// waiting code.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for a code not waiting (unknown, lapsed, decided); storage.
    pub fn decide(
        &self,
        session: &WebSession,
        typed: &str,
        approve: bool,
    ) -> Result<(), DomainError> {
        let gone = || DomainError::NotFound("No such code waiting, or it expired".into());
        let code = normalize_user_code(typed).ok_or_else(gone)?;
        if self
            .store
            .decide_device_grant(&code, session.user_id, approve, now_micros())?
        {
            Ok(())
        } else {
            Err(gone())
        }
    }
}
