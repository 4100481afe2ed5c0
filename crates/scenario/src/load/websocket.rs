//! WebSocket steps (`ws:`): the URL's scheme, the handshake headers, and each
//! action holding exactly one thing to do with the options that go with it.

use crate::model::*;

use super::validator::Validator;

impl Validator<'_> {
    pub(super) fn websocket(&mut self, p: &str, ws: &WsSpec, has_target: bool) {
        let up = format!("{p}.url");
        let url = ws.url.as_str();
        self.template(&up, url);
        if url.is_empty() {
            self.err(&up, "empty URL", None);
        } else if url.starts_with('/') || url.starts_with("{{") {
            if !has_target {
                self.err(
                    &up,
                    format!("`{url}` is relative but the file has no `target`"),
                    Some("add `target: http://127.0.0.1:8080` at the top (ws:// is used for http://, wss:// for https://), or use an absolute ws:// URL"),
                );
            }
        } else if url.contains("{{")
            && url
                .split("{{")
                .next()
                .unwrap_or_default()
                .matches('/')
                .count()
                < 3
        {
            self.err(
                &up,
                "the scheme, host and port of a URL cannot come from a template",
                Some("put the host in `target` and template the path and query"),
            );
        } else {
            let head = url.split("{{").next().unwrap_or_default();
            let probe = if url.contains("{{") {
                format!("{head}x")
            } else {
                url.to_string()
            };
            match url::Url::parse(&probe) {
                Ok(u) if u.scheme() == "ws" || u.scheme() == "wss" => {}
                Ok(u) => self.err(
                    &up,
                    format!("scheme `{}` is not a WebSocket scheme", u.scheme()),
                    Some("use ws:// or wss:// (or a path joined to `target`)"),
                ),
                Err(e) => self.err(
                    &up,
                    format!("`{url}` is not a URL: {e}"),
                    Some("a path starts with `/`; a full URL with ws:// or wss://"),
                ),
            }
        }
        for (k, v) in &ws.headers {
            let hp = format!("{p}.headers.{k}");
            self.header(&hp, k, v);
            self.template(&hp, v);
            let reserved = [
                "connection",
                "upgrade",
                "sec-websocket-key",
                "sec-websocket-version",
            ];
            if reserved.iter().any(|r| k.eq_ignore_ascii_case(r)) {
                self.err(
                    &hp,
                    format!("`{k}` is set by the WebSocket handshake itself"),
                    Some("remove the header"),
                );
            }
        }
        if ws.timeout.is_some_and(|t| t.get().is_zero()) {
            self.err(&format!("{p}.timeout"), "must be more than 0", None);
        }
        if ws.actions.is_empty() {
            self.err(
                &format!("{p}.actions"),
                "a WebSocket session needs actions",
                Some("e.g. `actions: [ { send: hello }, { expect: { body_contains: hello } } ]`"),
            );
        }
        for (i, a) in ws.actions.iter().enumerate() {
            self.ws_action(&format!("{p}.actions[{i}]"), a);
        }
    }

    fn ws_action(&mut self, ap: &str, a: &WsAction) {
        let kinds = [
            a.send.is_some(),
            a.expect.is_some(),
            a.hold.is_some(),
            a.close.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            1 => {}
            0 => self.err(
                ap,
                "an action needs one of `send`, `expect`, `hold` or `close`",
                Some("e.g. `{ send: hello }`, `{ expect: { body_contains: hello } }`, `{ hold: 5s }`"),
            ),
            _ => self.err(
                ap,
                "an action does one thing: give only one of `send`, `expect`, `hold`, `close`",
                Some("split it into several actions, in order"),
            ),
        }
        if let Some(s) = &a.send {
            self.template(&format!("{ap}.send"), s);
        }
        if (a.every.is_some() || a.count.is_some()) && a.send.is_none() {
            let f = if a.every.is_some() { "every" } else { "count" };
            self.err(
                &format!("{ap}.{f}"),
                format!("`{f}` goes with `send`"),
                None,
            );
        }
        if a.count.is_some() && a.every.is_none() {
            self.err(
                &format!("{ap}.count"),
                "`count` needs `every` (the time between the messages)",
                Some("e.g. `{ send: ping, every: 1s, count: 5 }`"),
            );
        }
        if a.every.is_some_and(|d| d.get().is_zero()) {
            self.err(&format!("{ap}.every"), "must be more than 0", None);
        }
        if a.count == Some(0) {
            self.err(&format!("{ap}.count"), "must be at least 1", None);
        }
        if a.close == Some(false) {
            self.err(
                &format!("{ap}.close"),
                "`close: false` does nothing",
                Some("write `close: true`, or remove the action"),
            );
        }
        if !a.extract.is_empty() && a.expect.is_none() {
            self.err(
                &format!("{ap}.extract"),
                "`extract` takes values from the message an `expect` matched",
                Some("put it beside an `expect`"),
            );
        }
        for (k, e) in &a.extract {
            self.extract(&format!("{ap}.extract"), k, e);
            if let ExtractSpec::From(ExtractFrom::Header(_) | ExtractFrom::Cookie(_)) = e {
                self.err(
                    &format!("{ap}.extract.{k}"),
                    "a WebSocket message has no headers or cookies",
                    Some("use `{ json: $.path }` or `{ regex: ... }`"),
                );
            }
        }
        if let Some(x) = &a.expect {
            self.ws_expect(&format!("{ap}.expect"), x);
        }
    }

    fn ws_expect(&mut self, p: &str, x: &WsExpect) {
        // The body checks of a response, judged on one message.
        let as_check = Check {
            body_contains: x.body_contains.clone(),
            body_matches: x.body_matches.clone(),
            json: x.json.clone(),
            json_exists: x.json_exists.clone(),
            ..Default::default()
        };
        if x.body_contains.is_none()
            && x.body_matches.is_none()
            && x.json.is_empty()
            && x.json_exists.is_empty()
        {
            // `expect: {}` waits for the next message, whatever it holds.
        } else {
            self.check(p, &as_check);
        }
        if x.timeout.is_some_and(|t| t.get().is_zero()) {
            self.err(&format!("{p}.timeout"), "must be more than 0", None);
        }
    }
}
