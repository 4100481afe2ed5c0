//! Logging in and the bearer tokens it hands out (any non-empty user; bounded, the
//! oldest forgotten first).

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;

use super::response::{parse_json, Response};
use super::App;
use crate::http::Request;
use pado_base::lock;

/// Most tokens remembered; the oldest are forgotten first.
const MAX_TOKENS: usize = 100_000;

/// Users' tokens, bounded (oldest forgotten first).
#[derive(Debug, Default)]
pub(super) struct Tokens {
    users: HashMap<String, String>,
    order: VecDeque<String>,
}

#[derive(Deserialize)]
struct LoginBody {
    /// Any non-empty user logs in; the password is accepted as sent.
    user: String,
}

impl App {
    pub(super) fn user_of(&self, req: &Request) -> Result<String, Response> {
        let token = req
            .header("authorization")
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(Response::error(401, "missing bearer token")
                .with_header("www-authenticate", "Bearer".into()));
        };
        lock(&self.tokens).users.get(token).cloned().ok_or_else(|| {
            Response::error(401, "unknown token").with_header("www-authenticate", "Bearer".into())
        })
    }

    pub(super) async fn login(&self, req: &Request) -> Response {
        let body: LoginBody = match parse_json(&req.body) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let user = body.user.trim().to_string();
        if user.is_empty() {
            return Response::error(401, "user must not be empty");
        }
        if let Err(r) = self.query(|| ()).await {
            return r;
        }
        let mut rng = fastrand::Rng::new();
        let token = format!("{:016x}{:016x}", rng.u64(..), rng.u64(..));
        {
            let mut t = lock(&self.tokens);
            if t.order.len() >= MAX_TOKENS {
                if let Some(old) = t.order.pop_front() {
                    t.users.remove(&old);
                }
            }
            t.users.insert(token.clone(), user.clone());
            t.order.push_back(token.clone());
        }
        Response::json(200, &serde_json::json!({ "token": token, "user": user }))
    }
}
