//! The request a start pipeline runs and what it must keep out of a detail (issue 24 items 1
//! and 2): the request as sent (sealed when its echo was masked), its secrets, the LLM key and
//! a clone URL's credentials.

use serde_json::{Map, Value};

use crate::conversations::sealed_start::SealedStart;
use crate::conversations::start_request::{StartRequest, parse_start_request};
use crate::identity::redaction::url_credentials;

use super::{Failure, Run};

impl Run<'_> {
    /// The request as sent (sealed when its echo was masked, else the echo) and its secrets,
    /// each secret (and the clone URL's credentials) kept for redaction.
    pub(super) fn unsealed(&mut self) -> Result<(StartRequest, Map<String, Value>), Failure> {
        let m = self
            .svc
            .sandboxes
            .managed_config()
            .map_err(|e| Failure(e.to_string()))?;
        let sealed = match &self.task.secrets_sealed {
            Some(sealed) => m
                .sealer
                .open(sealed, &self.task.id.to_string())
                .ok()
                .and_then(|s| SealedStart::from_text(&s))
                .ok_or_else(|| Failure("the start request's secrets cannot be unsealed".into()))?,
            None => SealedStart::default(),
        };
        let raw = sealed.request.as_ref().unwrap_or(&self.task.request);
        let request: StartRequest = match parse_start_request(raw) {
            Ok(Ok(r)) => r,
            _ => return Err(Failure("the stored start request is unreadable".into())),
        };
        if let Some(k) = &self.svc.llm.api_key {
            self.secrets.push(k.clone());
        }
        self.secrets.extend(
            sealed
                .secrets
                .values()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        if let Some(userinfo) = request
            .selected_repository
            .as_deref()
            .and_then(url_credentials)
        {
            self.secrets.push(userinfo.to_owned());
            if let Some((_, password)) = userinfo.split_once(':') {
                self.secrets.push(password.to_owned());
            }
        }
        Ok((request, sealed.secrets))
    }
}
