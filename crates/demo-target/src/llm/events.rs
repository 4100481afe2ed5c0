//! The answer's text in OpenAI's shapes: the events of a stream
//! (`chat.completion.chunk`, then `usage` when asked, then `data: [DONE]`) and the
//! whole `chat.completion` of a request that did not ask to stream. A stream's
//! events are written into one reused buffer from a prefix made once per request.

use std::fmt::Write as _;

/// The tokens the demo model says, in turn: Hangul and English, so that a client's
/// UTF-8 handling is tried on every answer. None needs escaping in JSON.
const VOCABULARY: [&str; 12] = [
    " 파도", "가", " 밀려", " 온다", ".", " The", " wave", " keeps", " coming", ",", " 부산",
    " 바다",
];

/// The text of token `i` (0-based) of an answer.
pub(crate) fn token(i: u64) -> &'static str {
    VOCABULARY[(i % VOCABULARY.len() as u64) as usize]
}

/// One request's answer being written.
#[derive(Debug)]
pub(crate) struct Answer {
    /// `data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":[`
    prefix: String,
    /// The event being written (reused).
    pub buf: Vec<u8>,
}

impl Answer {
    /// An answer for request number `id` of `model`, created at `created` (unix s).
    pub(crate) fn new(id: u64, model: &str, created: u64) -> Answer {
        let model = serde_json::Value::String(model.to_string()).to_string();
        let mut prefix = String::with_capacity(128);
        let _ = write!(
            prefix,
            "data: {{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{model},\"choices\":["
        );
        Answer {
            prefix,
            buf: Vec::with_capacity(256),
        }
    }

    /// The first event: the role, no token (as OpenAI's first chunk).
    pub(crate) fn role(&mut self) -> &[u8] {
        self.choice("{\"role\":\"assistant\",\"content\":\"\"}", "null")
    }

    /// The event of token `i`.
    pub(crate) fn token(&mut self, i: u64) -> &[u8] {
        self.buf.clear();
        self.buf.extend_from_slice(self.prefix.as_bytes());
        self.buf
            .extend_from_slice(b"{\"index\":0,\"delta\":{\"content\":\"");
        self.buf.extend_from_slice(token(i).as_bytes());
        self.buf
            .extend_from_slice(b"\"},\"finish_reason\":null}]}\n\n");
        &self.buf
    }

    /// The last chunk of choices: no content, `finish_reason: "length"` (every
    /// answer is `max_tokens` long).
    pub(crate) fn finish(&mut self) -> &[u8] {
        self.choice("{}", "\"length\"")
    }

    /// The `usage` event (`stream_options: {include_usage: true}`): no choices.
    pub(crate) fn usage(&mut self, prompt: u64, completion: u64) -> &[u8] {
        self.buf.clear();
        self.buf.extend_from_slice(self.prefix.as_bytes());
        let _ = write!(
            Utf8(&mut self.buf),
            "],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}}}}}\n\n",
            prompt + completion
        );
        &self.buf
    }

    fn choice(&mut self, delta: &str, finish: &str) -> &[u8] {
        self.buf.clear();
        self.buf.extend_from_slice(self.prefix.as_bytes());
        let _ = write!(
            Utf8(&mut self.buf),
            "{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        );
        &self.buf
    }
}

/// The end of a stream.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

/// `fmt::Write` into a byte buffer.
struct Utf8<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Utf8<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The whole answer of a request that did not stream (`chat.completion`).
pub(crate) fn completion(
    id: u64,
    model: &str,
    created: u64,
    prompt: u64,
    tokens: u64,
) -> serde_json::Value {
    let content: String = (0..tokens).map(token).collect();
    serde_json::json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": "length",
        }],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": tokens,
            "total_tokens": prompt + tokens,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(event: &[u8]) -> serde_json::Value {
        let text = std::str::from_utf8(event).unwrap();
        let data = text
            .strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\n\n"))
            .unwrap_or_else(|| panic!("not one event: {text:?}"));
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
    }

    #[test]
    fn every_event_is_openai_json_and_tokens_round_trip_in_utf8() {
        let mut a = Answer::new(7, "모델 \"q\"", 1_700_000_000);
        let role = json_of(a.role());
        assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(role["choices"][0]["delta"]["content"], "");
        assert_eq!(role["model"], "모델 \"q\"");
        assert_eq!(role["id"], "chatcmpl-7");
        let t = json_of(a.token(0));
        assert_eq!(t["choices"][0]["delta"]["content"], " 파도");
        assert_eq!(t["object"], "chat.completion.chunk");
        assert_eq!(json_of(a.token(13))["choices"][0]["delta"]["content"], "가");
        let f = json_of(a.finish());
        assert_eq!(f["choices"][0]["finish_reason"], "length");
        let u = json_of(a.usage(5, 9));
        assert_eq!(u["usage"]["completion_tokens"], 9);
        assert_eq!(u["usage"]["total_tokens"], 14);
        assert_eq!(u["choices"].as_array().unwrap().len(), 0);
        let c = completion(1, "m", 0, 3, 3);
        assert_eq!(c["choices"][0]["message"]["content"], " 파도가 밀려");
        assert_eq!(c["usage"]["completion_tokens"], 3);
    }
}
