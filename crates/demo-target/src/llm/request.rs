//! An OpenAI-compatible chat (or completions) request as the demo target reads it:
//! the prompt's text, whether to stream, whether to add the `usage` event, how many
//! tokens to generate; and the rough token count of a prompt.

use serde::Deserialize;

/// Tokens generated when the request names no `max_tokens` (OpenAI's servers
/// default to the model's context; a demo answers shortly).
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 128;
/// Most tokens one request may ask for: bounds the route's work.
pub(crate) const MAX_TOKENS: u64 = 4_096;

/// The fields of a request body the demo target uses; any other field
/// (`temperature`, `top_p`, tools...) is accepted and ignored, as a server with
/// fixed sampling would.
#[derive(Debug, Deserialize)]
struct Body {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    /// The completions API's prompt: a string or a list of strings.
    #[serde(default)]
    prompt: Option<serde_json::Value>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Message {
    /// A string, or a list of parts of which the `text` ones count.
    #[serde(default)]
    content: serde_json::Value,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

/// A request the demo target's LLM will answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    /// The `model` echoed in every answer (`pado-demo-llm` when none was named).
    pub model: String,
    /// The prompt's tokens, by [`prompt_tokens`].
    pub prompt_tokens: u64,
    /// Answer as Server-Sent Events.
    pub stream: bool,
    /// Send a last event with `usage` (`stream_options: {include_usage: true}`).
    pub include_usage: bool,
    /// Tokens to generate: every request generates exactly this many (as a
    /// benchmark's `ignore_eos` does), so the test knows the answer's length.
    pub max_tokens: u64,
}

/// Reads a request body; the error is the message of a 400.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, String> {
    let b: Body = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let mut text = String::new();
    match (&b.messages, &b.prompt) {
        (Some(messages), _) => {
            if messages.is_empty() {
                return Err("messages must not be empty".into());
            }
            for m in messages {
                collect_text(&m.content, &mut text);
            }
        }
        (None, Some(prompt)) => collect_text(prompt, &mut text),
        (None, None) => return Err("the request needs messages (or a prompt)".into()),
    }
    let max_tokens = b
        .max_completion_tokens
        .or(b.max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens == 0 || max_tokens > MAX_TOKENS {
        return Err(format!(
            "max_tokens must be between 1 and {MAX_TOKENS}, got {max_tokens}"
        ));
    }
    Ok(ChatRequest {
        model: b
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "pado-demo-llm".into()),
        prompt_tokens: prompt_tokens(&text),
        stream: b.stream,
        include_usage: b.stream_options.is_some_and(|o| o.include_usage),
        max_tokens,
    })
}

/// Appends the text of a message's content (a string, a list of parts, or a
/// list of strings) to `out`, each text after a line feed when `out` already
/// holds one: the texts are joined, so a single message is counted as written.
fn collect_text(v: &serde_json::Value, out: &mut String) {
    let push = |t: &str, out: &mut String| {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(t);
    };
    match v {
        serde_json::Value::String(s) => push(s, out),
        serde_json::Value::Array(parts) => {
            for p in parts {
                match p {
                    serde_json::Value::Object(o) => {
                        if let Some(serde_json::Value::String(t)) = o.get("text") {
                            push(t, out);
                        }
                    }
                    other => collect_text(other, out),
                }
            }
        }
        _ => {}
    }
}

/// A rough token count, the demo's tokenizer: pado's own rule
/// ([`pado_base::tokens::count`]: about four characters of ASCII text per token,
/// one per other character), at least 1, so the prompt tokens a load test says it
/// sent (`llm_input_tokens`) are those the demo target reports in `usage`. Real
/// tokenizers differ; what matters here is that a longer prompt costs more
/// prefill.
pub(crate) fn prompt_tokens(text: &str) -> u64 {
    pado_base::tokens::count(text).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_request_is_read_with_its_stream_options_and_length() {
        let r = parse(
            r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},
                "max_tokens":7,"temperature":0.2,
                "messages":[{"role":"system","content":"abcdefgh"},
                            {"role":"user","content":[{"type":"text","text":"부산"}]}]}"#
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            r,
            ChatRequest {
                model: "m".into(),
                // "abcdefgh", "\n" between the texts: 9 ASCII → 3, "부산" 2.
                prompt_tokens: 3 + 2,
                stream: true,
                include_usage: true,
                max_tokens: 7,
            }
        );
        let r = parse(br#"{"prompt":"hi","max_completion_tokens":3,"max_tokens":9}"#).unwrap();
        assert_eq!((r.stream, r.include_usage, r.max_tokens), (false, false, 3));
        assert_eq!(r.model, "pado-demo-llm");
    }

    #[test]
    fn bad_requests_say_why() {
        assert!(parse(b"{").unwrap_err().contains("invalid JSON"));
        assert!(parse(b"{}").unwrap_err().contains("messages"));
        assert!(parse(br#"{"messages":[]}"#).unwrap_err().contains("empty"));
        let e = parse(br#"{"messages":[{"content":"x"}],"max_tokens":0}"#).unwrap_err();
        assert!(e.contains("max_tokens"), "{e}");
        let e = parse(br#"{"messages":[{"content":"x"}],"max_tokens":100000}"#).unwrap_err();
        assert!(e.contains("4096"), "{e}");
        assert!(parse(br#"{"messages":"x"}"#).is_err());
    }

    #[test]
    fn longer_prompts_are_more_tokens() {
        assert_eq!(prompt_tokens(""), 1);
        assert_eq!(prompt_tokens("abcd"), 1);
        assert_eq!(prompt_tokens("abcde"), 2);
        assert_eq!(prompt_tokens("파도가 온다"), 5 + 1);
        assert_eq!(prompt_tokens(&"a".repeat(4_000)), 1_000);
    }
}
