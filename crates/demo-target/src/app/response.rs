//! The response a handler returns, before it is written, and its constructors.

use std::sync::Arc;

use serde::Deserialize;

use crate::http::reason;

/// The `Content-Type` of every API answer.
pub(super) const JSON: &str = "application/json";

/// A response about to be written.
#[derive(Debug)]
pub(crate) struct Response {
    pub(super) status: u16,
    pub(super) content_type: &'static str,
    pub(super) body: Arc<[u8]>,
    pub(super) headers: Vec<(&'static str, String)>,
    /// A restart to start once this response is written (`POST /admin/faults`
    /// with `restart_ms`).
    pub(super) restart: Option<std::time::Duration>,
}

impl Response {
    pub(super) fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::bytes(status, JSON, serde_json::to_vec(value).unwrap_or_default())
    }

    pub(super) fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
            restart: None,
        }
    }

    pub(super) fn cached(body: Arc<[u8]>) -> Response {
        Response {
            status: 200,
            content_type: JSON,
            body,
            headers: Vec::new(),
            restart: None,
        }
    }

    pub(super) fn error(status: u16, message: &str) -> Response {
        Response::json(
            status,
            &serde_json::json!({ "status": status, "error": reason(status), "message": message }),
        )
    }

    pub(super) fn empty(status: u16) -> Response {
        Response {
            status,
            content_type: JSON,
            body: Arc::from(Vec::new()),
            headers: Vec::new(),
            restart: None,
        }
    }

    pub(super) fn with_header(mut self, name: &'static str, value: String) -> Response {
        self.headers.push((name, value));
        self
    }
}

/// The request body as `T`, or the 400 that says why not.
pub(super) fn parse_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Response> {
    serde_json::from_slice(body)
        .map_err(|e| Response::error(400, &format!("invalid JSON body: {e}")))
}
