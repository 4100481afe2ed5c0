//! A script's request URLs as parsed on this worker, kept for the next
//! request to the same text: a k6 script asks for the same few URLs each
//! iteration, and parsing one (`url::Url::parse`) cost about as much as the
//! rest of the engine's work on a scripted request.

use url::Url;

/// How many parsed URLs a worker keeps: its VUs run one script, whose
/// requests name a handful of URLs; one built per VU or per iteration only
/// takes the oldest entry's place.
const KEPT: usize = 16;

/// The worker's last [`KEPT`] distinct script URLs, by their text.
#[derive(Default)]
pub(super) struct ScriptUrls {
    /// `(text, parsed)`; `None`: the text is not an absolute http(s) URL with a host.
    entries: Vec<(String, Option<Url>)>,
    /// Where the next new text goes once the list is full.
    next: usize,
}

impl ScriptUrls {
    /// `text` as a URL a script's request can go to (absolute, http or https,
    /// with a host); `None` when it is not one. Parsed once while it is kept.
    pub(super) fn get(&mut self, text: &str) -> Option<Url> {
        if let Some((_, u)) = self.entries.iter().find(|(t, _)| t == text) {
            return u.clone();
        }
        let parsed = parse(text);
        let entry = (text.to_string(), parsed.clone());
        if self.entries.len() < KEPT {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % KEPT;
        }
        parsed
    }
}

/// A script request's URL, when it is an absolute http(s) URL with a host.
fn parse(text: &str) -> Option<Url> {
    Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_url_is_the_same_as_a_fresh_parse() {
        let mut c = ScriptUrls::default();
        for text in [
            "http://127.0.0.1:8080/api/posts?page=0&size=10",
            "https://Example.COM/a/../b?q=%20x#frag",
            "http://h/파도",
        ] {
            let first = c.get(text);
            let again = c.get(text);
            assert_eq!(first, parse(text), "{text}");
            assert_eq!(again, parse(text), "{text}");
            assert!(first.is_some(), "{text}");
        }
        assert_eq!(c.entries.len(), 3);
    }

    #[test]
    fn what_is_not_a_script_url_stays_refused() {
        let mut c = ScriptUrls::default();
        for text in ["ftp://h/x", "/relative", "not a url", "http://"] {
            assert_eq!(c.get(text), None, "{text}");
            assert_eq!(c.get(text), None, "{text} (kept)");
        }
    }

    #[test]
    fn past_its_size_the_oldest_entry_goes_and_answers_stay_right() {
        let mut c = ScriptUrls::default();
        let text = |i: usize| format!("http://127.0.0.1/{i}");
        for i in 0..KEPT + 5 {
            assert_eq!(c.get(&text(i)), parse(&text(i)));
        }
        assert_eq!(c.entries.len(), KEPT);
        // The first five were replaced; every URL still parses to its own.
        assert!(!c.entries.iter().any(|(t, _)| *t == text(0)));
        assert!(c.entries.iter().any(|(t, _)| *t == text(KEPT + 4)));
        for i in 0..KEPT + 5 {
            assert_eq!(
                c.get(&text(i)).map(|u| u.path().to_string()),
                Some(format!("/{i}"))
            );
        }
    }
}
