//! The workspace routes' reads of [`HttpAgentServerClient`] ([`AgentServerWorkspace`], issue
//! 22): a conversation's `ConversationInfo`, file downloads (streamed: the body is handed on as
//! a reader, never read whole), git changes and diffs, skills and hooks; file uploads.

use std::time::Duration;

use serde_json::Value;
use switchboard_domain::ConversationId;
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::sandboxes::agent_workspace::{
    AgentServerWorkspace, FileAnswer, JsonAnswer,
};
use switchboard_domain::sandboxes::runtime::AgentServerError;

use crate::agent_client::{
    HttpAgentServerClient, SESSION_HEADER, bad_answer, conversation_url, transport_error,
};
use crate::agent_events::encode;

/// How long a JSON call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a download may take to connect and to answer its headers.
const DOWNLOAD_START: Duration = Duration::from_secs(30);
/// How long a download may wait for its next bytes.
const DOWNLOAD_READ: Duration = Duration::from_secs(60);
/// The multipart boundary of an upload. An uploaded text without a line break (a token)
/// cannot hold it: it only ends a part after `\r\n`.
const UPLOAD_BOUNDARY: &str = "switchboard-upload-7d1c5e0f4b9a";
/// The most bytes read from a JSON answer (a git diff holds two whole files).
const JSON_BODY_LIMIT: u64 = 32 << 20;

impl AgentServerWorkspace for HttpAgentServerClient {
    fn conversation_info(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
    ) -> Result<Option<Value>, AgentServerError> {
        let url = conversation_url(base_url, conversation);
        match self.json_call(&url, key, None)? {
            (404, _) => Ok(None),
            (200, Some(v)) if v.is_object() => Ok(Some(v)),
            (status, _) => Err(bad_answer(&url, status, "")),
        }
    }

    fn download_file(
        &self,
        base_url: &str,
        key: &SessionKey,
        path: &str,
    ) -> Result<FileAnswer, AgentServerError> {
        let url = format!(
            "{}/api/file/download?path={}",
            base_url.trim_end_matches('/'),
            encode(path)
        );
        let answer = self
            .agent
            .get(&url)
            .config()
            .timeout_connect(Some(DOWNLOAD_START))
            .timeout_recv_response(Some(DOWNLOAD_START))
            .timeout_per_read(Some(DOWNLOAD_READ))
            .build()
            .header(SESSION_HEADER, key.expose())
            .call();
        let response = answer.map_err(|e| transport_error(&url, DOWNLOAD_START, e))?;
        match response.status().as_u16() {
            200 => {
                let body = response.into_body();
                let length = body.content_length();
                Ok(FileAnswer::Found {
                    body: Box::new(body.into_reader()),
                    length,
                })
            }
            404 => Ok(FileAnswer::NotFound),
            400 => Ok(FileAnswer::NotAFile),
            status => Err(bad_answer(&url, status, "")),
        }
    }

    fn git(
        &self,
        base_url: &str,
        key: &SessionKey,
        what: &str,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<JsonAnswer, AgentServerError> {
        let mut url = format!(
            "{}/api/git/{what}?path={}",
            base_url.trim_end_matches('/'),
            encode(path)
        );
        if let Some(r) = git_ref {
            url.push_str(&format!("&ref={}", encode(r)));
        }
        json_answer(&url, self.json_call(&url, key, None)?)
    }

    fn load(
        &self,
        base_url: &str,
        key: &SessionKey,
        what: &str,
        body: &Value,
    ) -> Result<JsonAnswer, AgentServerError> {
        let url = format!("{}/api/{what}", base_url.trim_end_matches('/'));
        json_answer(&url, self.json_call(&url, key, Some(body))?)
    }

    fn upload_file(
        &self,
        base_url: &str,
        key: &SessionKey,
        path: &str,
        bytes: &[u8],
    ) -> Result<(), AgentServerError> {
        let url = format!(
            "{}/api/file/upload?path={}",
            base_url.trim_end_matches('/'),
            encode(path)
        );
        let mut body = Vec::with_capacity(bytes.len() + 256);
        body.extend_from_slice(
            format!(
                "--{UPLOAD_BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{UPLOAD_BOUNDARY}--\r\n").as_bytes());
        let answer = self
            .agent
            .post(&url)
            .config()
            .timeout_global(Some(CALL_TIMEOUT))
            .build()
            .header(SESSION_HEADER, key.expose())
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={UPLOAD_BOUNDARY}"),
            )
            .send(&body[..]);
        let response = answer.map_err(|e| transport_error(&url, CALL_TIMEOUT, e))?;
        match response.status().as_u16() {
            200 => Ok(()),
            status => Err(bad_answer(&url, status, "")),
        }
    }
}

impl HttpAgentServerClient {
    /// GETs `url` (POSTs `body` as JSON when given) with the session key; answers the status
    /// and the body parsed as JSON (`None` when it is not JSON).
    fn json_call(
        &self,
        url: &str,
        key: &SessionKey,
        body: Option<&Value>,
    ) -> Result<(u16, Option<Value>), AgentServerError> {
        let answer = match body {
            None => self
                .agent
                .get(url)
                .config()
                .timeout_global(Some(CALL_TIMEOUT))
                .build()
                .header(SESSION_HEADER, key.expose())
                .call(),
            Some(b) => self
                .agent
                .post(url)
                .config()
                .timeout_global(Some(CALL_TIMEOUT))
                .build()
                .header(SESSION_HEADER, key.expose())
                .header("Content-Type", "application/json")
                .send(b.to_string().as_bytes()),
        };
        let mut response = answer.map_err(|e| transport_error(url, CALL_TIMEOUT, e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(JSON_BODY_LIMIT)
            .read_to_string()
            .map_err(|e| transport_error(url, CALL_TIMEOUT, e))?;
        Ok((status, serde_json::from_str(&text).ok()))
    }
}

/// 200 with JSON is the answer; 400 or 422 the agent server's refusal (its `detail`); anything
/// else a failure.
fn json_answer(
    url: &str,
    (status, body): (u16, Option<Value>),
) -> Result<JsonAnswer, AgentServerError> {
    match (status, body) {
        (200, Some(v)) => Ok(JsonAnswer::Ok(v)),
        (400 | 422, body) => {
            let detail = body.as_ref().and_then(|b| b.get("detail")).map_or_else(
                || "the request was refused".to_owned(),
                |d| d.as_str().map_or_else(|| d.to_string(), str::to_owned),
            );
            Ok(JsonAnswer::Refused(detail))
        }
        (status, _) => Err(bad_answer(url, status, "")),
    }
}
