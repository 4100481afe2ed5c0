//! The search index: an inverted index with BM25 scoring, and the sorted
//! term and title lists autocomplete binary-searches.
//!
//! Scoring really walks every posting of every query term, so a frequent
//! term costs more than a rare one — the effect the seed post measured
//! ("고빈도 토큰은 매칭 문서가 많아 BM25 스코어링 비용이 큼"). The walk's length is
//! returned so the caller can add the configured synthetic CPU cost per
//! posting on top.

use std::collections::HashMap;
use std::sync::Arc;

use crate::data::{Generated, Post};

/// Longest token kept; longer runs of letters are cut (bounded work per token).
const MAX_TOKEN_CHARS: usize = 64;
/// Most distinct terms of a query that are scored.
pub(crate) const MAX_QUERY_TERMS: usize = 16;
/// Weight of a title occurrence relative to a body occurrence.
const TITLE_WEIGHT: u32 = 3;
/// BM25 parameters.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Splits text into lowercase tokens on anything that is not a letter or a
/// digit. Hangul words are kept whole (no morphological analysis).
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each token of `text` (see [`tokenize`]) without
/// allocating for tokens that are already lowercase.
fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let mut lowered = String::new();
    for raw in text.split(|c: char| !is_token_char(c)) {
        if raw.is_empty() {
            continue;
        }
        let raw = match raw.char_indices().nth(MAX_TOKEN_CHARS) {
            Some((cut, _)) => &raw[..cut],
            None => raw,
        };
        let plain = raw
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || is_hangul_syllable(c));
        if !plain {
            lowered.clear();
            lowered.extend(raw.chars().flat_map(char::to_lowercase));
            if lowered != raw {
                f(&lowered);
                continue;
            }
        }
        f(raw);
    }
}

/// Hangul syllables (가..힣): letters without case, the bulk of Korean text.
fn is_hangul_syllable(c: char) -> bool {
    ('\u{AC00}'..='\u{D7A3}').contains(&c)
}

/// Letters and digits, with fast paths for ASCII and Hangul (the general
/// Unicode lookup is slow and most text here is one or the other).
fn is_token_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        is_hangul_syllable(c) || c.is_alphanumeric()
    }
}

/// FNV-1a: the term dictionary is hashed for every token indexed, and std's
/// SipHash (DoS-resistant, which a local demo does not need) made building
/// the index several times slower.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

#[derive(Clone, Copy, Debug)]
struct Posting {
    doc: u32,
    tf: u32,
}

/// One search hit.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    pub id: u64,
    pub title: Arc<str>,
    pub score: f32,
}

/// What a search found and how much work it took.
#[derive(Clone, Debug)]
pub(crate) struct SearchResult {
    pub hits: Vec<Hit>,
    pub total: usize,
    /// Postings walked (including those of deleted posts).
    pub postings: usize,
}

/// What autocomplete found and how much work it took.
#[derive(Clone, Debug)]
pub(crate) struct Suggestions {
    pub terms: Vec<String>,
    pub titles: Vec<(u64, Arc<str>)>,
    /// Candidates examined.
    pub scanned: usize,
}

/// Inverted index over title (weighted), body and tags of every post.
#[derive(Debug, Default)]
pub(crate) struct Index {
    term_ids: FnvMap<String, u32>,
    /// Per term id: its text and postings (doc ids ascending).
    terms: Vec<(String, Vec<Posting>)>,
    /// Term ids sorted by term text, for prefix search.
    sorted_terms: Vec<u32>,
    /// (lowercased title, id) sorted, for title prefix search.
    sorted_titles: Vec<(String, u64)>,
    /// Per doc id: weighted length; 0 = no such post (or deleted).
    doc_len: Vec<u32>,
    titles: Vec<Option<Arc<str>>>,
    live_docs: usize,
    total_len: u64,
}

impl Index {
    /// Builds the index over `posts` (any order) from their text.
    #[cfg(test)]
    pub(crate) fn build<'a>(posts: impl IntoIterator<Item = &'a Arc<Post>>) -> Index {
        let mut index = Index::default();
        for p in posts {
            index.add_unsorted(p);
        }
        index.resort(false);
        index
    }

    /// Adds one post (with an id larger than any indexed so far) and keeps
    /// the sorted lists sorted.
    pub(crate) fn add(&mut self, post: &Post) {
        let new_terms_from = self.terms.len();
        self.add_unsorted(post);
        for tid in new_terms_from as u32..self.terms.len() as u32 {
            let text = &self.terms[tid as usize].0;
            let at = self
                .sorted_terms
                .partition_point(|t| self.terms[*t as usize].0.as_str() < text.as_str());
            self.sorted_terms.insert(at, tid);
        }
        let key = (post.title.to_lowercase(), post.id);
        let at = self.sorted_titles.partition_point(|t| *t < key);
        self.sorted_titles.insert(at, key);
    }

    /// Builds the index over generated posts from the words they were made
    /// of, without tokenizing their text (same result as [`Index::build`]).
    pub(crate) fn from_generated(g: &Generated) -> Index {
        let mut index = Index::default();
        for w in &g.vocabulary {
            index.intern(w);
        }
        // Per-term counts for the current post, and which terms it touched:
        // plain indexing, no per-post sort.
        let mut counts: Vec<u32> = vec![0; index.terms.len()];
        let mut touched: Vec<u32> = Vec::with_capacity(128);
        let mut tags: Vec<u32> = Vec::new();
        for (post, (title, body)) in g.store.posts.values().zip(&g.words) {
            let Ok(doc) = u32::try_from(post.id) else {
                continue;
            };
            tags.clear();
            for tag in &post.tags {
                for_each_token(tag, |t| tags.push(index.intern(t)));
            }
            if counts.len() < index.terms.len() {
                counts.resize(index.terms.len(), 0);
            }
            let occurrences = title
                .iter()
                .map(|t| (*t, TITLE_WEIGHT))
                .chain(body.iter().map(|t| (*t, 1)))
                .chain(tags.iter().map(|t| (*t, 1)));
            let mut len = 0;
            for (tid, weight) in occurrences {
                let c = &mut counts[tid as usize];
                if *c == 0 {
                    touched.push(tid);
                }
                *c += weight;
                len += weight;
            }
            for tid in touched.drain(..) {
                let c = std::mem::take(&mut counts[tid as usize]);
                index.terms[tid as usize].1.push(Posting { doc, tf: c });
            }
            index.set_doc(post, doc, len);
        }
        // Posts were added in id order, so the postings are already sorted.
        index.resort(false);
        index
    }

    /// The id of a term, added to the dictionary if new.
    fn intern(&mut self, t: &str) -> u32 {
        match self.term_ids.get(t) {
            Some(tid) => *tid,
            None => {
                let tid = self.terms.len() as u32;
                self.term_ids.insert(t.to_string(), tid);
                self.terms.push((t.to_string(), Vec::new()));
                tid
            }
        }
    }

    fn add_unsorted(&mut self, post: &Post) {
        // (term id, weighted count) for this post, merged by `add_counts`.
        let mut tf: Vec<(u32, u32)> = Vec::with_capacity(64);
        for_each_token(&post.title, |t| {
            let tid = self.intern(t);
            tf.push((tid, TITLE_WEIGHT));
        });
        for_each_token(&post.body, |t| {
            let tid = self.intern(t);
            tf.push((tid, 1));
        });
        for tag in &post.tags {
            for_each_token(tag, |t| {
                let tid = self.intern(t);
                tf.push((tid, 1));
            });
        }
        self.add_counts(post, &mut tf);
    }

    /// Adds a post given its (term id, weight) occurrences, in any order.
    fn add_counts(&mut self, post: &Post, tf: &mut [(u32, u32)]) {
        let Ok(doc) = u32::try_from(post.id) else {
            return;
        };
        tf.sort_unstable_by_key(|(tid, _)| *tid);
        let mut len = 0u32;
        let mut i = 0;
        while i < tf.len() {
            let tid = tf[i].0;
            let mut count = 0;
            while i < tf.len() && tf[i].0 == tid {
                count += tf[i].1;
                i += 1;
            }
            len += count;
            self.terms[tid as usize].1.push(Posting { doc, tf: count });
        }
        self.set_doc(post, doc, len);
    }

    /// Records a post's length and title.
    fn set_doc(&mut self, post: &Post, doc: u32, len: u32) {
        let len = len.max(1);
        let slot = doc as usize;
        if self.doc_len.len() <= slot {
            self.doc_len.resize(slot + 1, 0);
            self.titles.resize(slot + 1, None);
        }
        if self.doc_len[slot] == 0 {
            self.live_docs += 1;
        }
        self.doc_len[slot] = len;
        self.titles[slot] = Some(Arc::from(post.title.as_str()));
        self.total_len += u64::from(len);
    }

    /// Sorts the dictionary and titles (and the postings unless known to be
    /// sorted already).
    fn resort(&mut self, postings_sorted: bool) {
        let mut ids: Vec<u32> = (0..self.terms.len() as u32).collect();
        ids.sort_unstable_by(|a, b| self.terms[*a as usize].0.cmp(&self.terms[*b as usize].0));
        self.sorted_terms = ids;
        let mut titles: Vec<(String, u64)> = self
            .titles
            .iter()
            .enumerate()
            .filter_map(|(id, t)| t.as_ref().map(|t| (t.to_lowercase(), id as u64)))
            .collect();
        titles.sort_unstable();
        self.sorted_titles = titles;
        if !postings_sorted {
            for (_, postings) in &mut self.terms {
                postings.sort_unstable_by_key(|p| p.doc);
            }
        }
    }

    /// Marks a post deleted: its postings stay (and are still walked, as a
    /// real index walks tombstones until a merge) but never match.
    pub(crate) fn remove(&mut self, id: u64) {
        let Ok(slot) = usize::try_from(id) else {
            return;
        };
        if slot < self.doc_len.len() && self.doc_len[slot] != 0 {
            self.total_len = self.total_len.saturating_sub(u64::from(self.doc_len[slot]));
            self.doc_len[slot] = 0;
            self.titles[slot] = None;
            self.live_docs -= 1;
        }
    }

    /// Document frequency of a term (0 when unknown).
    #[cfg(test)]
    pub(crate) fn doc_freq(&self, term: &str) -> usize {
        self.term_ids
            .get(term)
            .map_or(0, |t| self.terms[*t as usize].1.len())
    }

    /// BM25 over the query's terms (OR semantics); top `limit` hits.
    pub(crate) fn search(&self, query: &str, limit: usize) -> SearchResult {
        let mut tokens = tokenize(query);
        tokens.sort_unstable();
        tokens.dedup();
        tokens.truncate(MAX_QUERY_TERMS);
        let n = self.live_docs.max(1) as f32;
        let avg = (self.total_len as f32 / n).max(1.0);
        let mut scores = vec![0f32; self.doc_len.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut walked = 0usize;
        for t in &tokens {
            let Some(tid) = self.term_ids.get(t) else {
                continue;
            };
            let postings = &self.terms[*tid as usize].1;
            walked += postings.len();
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.0001);
            for p in postings {
                let slot = p.doc as usize;
                let dl = self.doc_len[slot];
                if dl == 0 {
                    continue;
                }
                let tf = p.tf as f32;
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl as f32 / avg));
                if scores[slot] == 0.0 {
                    touched.push(p.doc);
                }
                scores[slot] += s;
            }
        }
        let total = touched.len();
        let mut ranked: Vec<(f32, u32)> =
            touched.iter().map(|d| (scores[*d as usize], *d)).collect();
        let by_score = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1));
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, by_score);
            ranked.truncate(limit);
        }
        ranked.truncate(limit);
        ranked.sort_unstable_by(by_score);
        let hits = ranked
            .into_iter()
            .filter_map(|(score, doc)| {
                let title = self.titles.get(doc as usize)?.clone()?;
                Some(Hit {
                    id: u64::from(doc),
                    title,
                    score,
                })
            })
            .collect();
        SearchResult {
            hits,
            total,
            postings: walked,
        }
    }

    /// Terms (most frequent first) and titles (alphabetical) starting with
    /// `prefix` (lowercased), `limit` of each.
    pub(crate) fn autocomplete(&self, prefix: &str, limit: usize) -> Suggestions {
        let prefix: String = prefix.trim().chars().flat_map(char::to_lowercase).collect();
        if prefix.is_empty() {
            return Suggestions {
                terms: Vec::new(),
                titles: Vec::new(),
                scanned: 0,
            };
        }
        let start = self
            .sorted_terms
            .partition_point(|t| self.terms[*t as usize].0.as_str() < prefix.as_str());
        let mut matched: Vec<(usize, &str)> = self.sorted_terms[start..]
            .iter()
            .map(|t| &self.terms[*t as usize])
            .take_while(|(text, _)| text.starts_with(&prefix))
            .map(|(text, postings)| (postings.len(), text.as_str()))
            .collect();
        let scanned = matched.len();
        matched.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let terms = matched
            .into_iter()
            .take(limit)
            .map(|(_, t)| t.to_string())
            .collect();
        let tstart = self
            .sorted_titles
            .partition_point(|(t, _)| t.as_str() < prefix.as_str());
        let mut titles = Vec::new();
        let mut tscanned = 0;
        for (t, id) in &self.sorted_titles[tstart..] {
            if !t.starts_with(&prefix) || titles.len() >= limit {
                break;
            }
            tscanned += 1;
            if let Some(Some(title)) = self.titles.get(*id as usize) {
                titles.push((*id, title.clone()));
            }
        }
        Suggestions {
            terms,
            titles,
            scanned: scanned + tscanned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data;

    #[test]
    fn tokenizer_lowercases_and_keeps_hangul() {
        assert_eq!(
            tokenize("Search 엔진, 검색!  p95=1.4s"),
            vec!["search", "엔진", "검색", "p95", "1", "4s"]
        );
        assert!(tokenize(" ,.;").is_empty());
    }

    #[test]
    fn frequent_terms_walk_more_postings() {
        let g = data::generate(2_000, 3);
        let index = Index::from_generated(&g);
        let store = &g.store;
        let hot = index.search("검색", 10);
        assert_eq!(hot.hits.len(), 10);
        assert!(hot.total > 500, "total {}", hot.total);
        assert!(hot.hits.windows(2).all(|w| w[0].score >= w[1].score));
        let rare_term = store.posts[&1]
            .body
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .min_by_key(|w| index.doc_freq(&w.to_lowercase()))
            .unwrap()
            .to_lowercase();
        let rare = index.search(&rare_term, 10);
        assert!(rare.total >= 1);
        assert!(
            rare.postings * 5 < hot.postings,
            "{} vs {}",
            rare.postings,
            hot.postings
        );
        assert_eq!(index.search("없는단어zzz", 10).total, 0);
    }

    #[test]
    fn building_from_words_equals_building_from_text() {
        let g = data::generate(500, 11);
        let a = Index::build(g.store.posts.values());
        let b = Index::from_generated(&g);
        for q in ["검색", "search engine", "rust 파도", "wave"] {
            let (x, y) = (a.search(q, 10), b.search(q, 10));
            assert_eq!(x.total, y.total, "{q}");
            assert_eq!(x.postings, y.postings, "{q}");
            let ids = |r: &SearchResult| r.hits.iter().map(|h| h.id).collect::<Vec<_>>();
            assert_eq!(ids(&x), ids(&y), "{q}");
        }
        assert_eq!(a.sorted_titles, b.sorted_titles);
        assert_eq!(a.doc_len, b.doc_len);
    }

    #[test]
    fn add_and_remove_keep_lists_sorted() {
        let mut index = Index::build(data::generate(300, 3).store.posts.values());
        let mut s = data::Store {
            posts: Default::default(),
            next_id: 1_000,
        };
        let p = s.create(
            "Zebra 얼룩말 unique".into(),
            "quokkaword 얼룩말".into(),
            "me".into(),
            vec![],
            0,
        );
        index.add(&p);
        assert_eq!(index.search("quokkaword", 10).hits[0].id, 1_000);
        let sug = index.autocomplete("quokk", 10);
        assert_eq!(sug.terms, vec!["quokkaword"]);
        let sug = index.autocomplete("ZEB", 10);
        assert_eq!(sug.titles[0].0, 1_000);
        assert!(index
            .sorted_terms
            .windows(2)
            .all(|w| index.terms[w[0] as usize].0 < index.terms[w[1] as usize].0));
        index.remove(1_000);
        assert_eq!(index.search("quokkaword", 10).total, 0);
        assert!(index.autocomplete("zeb", 10).titles.is_empty());
    }

    #[test]
    fn autocomplete_prefers_frequent_terms() {
        let index = Index::from_generated(&data::generate(1_000, 3));
        let sug = index.autocomplete("검", 10);
        assert_eq!(sug.terms.first().map(String::as_str), Some("검색"));
        assert!(index.autocomplete("", 10).terms.is_empty());
    }
}
