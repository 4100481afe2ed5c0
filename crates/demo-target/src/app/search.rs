//! `GET /api/search` and `GET /api/autocomplete`: the inverted index, behind the
//! search cache.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::response::Response;
use super::App;
use crate::http::Request;
use crate::index::{tokenize, MAX_QUERY_TERMS};

/// Results per search / autocomplete.
const TOP: usize = 10;

impl App {
    pub(super) async fn search(self: &Arc<Self>, req: &Request) -> Response {
        let Some(q) = req.query_param("q") else {
            return Response::error(400, "missing query parameter q");
        };
        let mut terms = tokenize(q);
        terms.sort_unstable();
        terms.dedup();
        terms.truncate(MAX_QUERY_TERMS);
        let key = terms.join(" ");
        let cache = self.cache_enabled();
        if let Some(body) = self.searches.get(&key, cache) {
            return Response::cached(body);
        }
        let index = self.index.clone();
        let posting_cost = self.opts.posting_cost;
        let query = key.clone();
        let Some(result) = self
            .cpu
            .run(move || {
                let r = pado_base::lock::read(&index).search(&query, TOP);
                let cost = posting_cost.saturating_mul(r.postings.min(u32::MAX as usize) as u32);
                (r, cost)
            })
            .await
        else {
            return Response::error(503, "shutting down");
        };
        self.searches_run.fetch_add(1, Ordering::Relaxed);
        self.postings_walked
            .fetch_add(result.postings as u64, Ordering::Relaxed);
        let results: Vec<serde_json::Value> = result
            .hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "id": h.id,
                    "title": &*h.title,
                    "score": (f64::from(h.score) * 1e4).round() / 1e4,
                })
            })
            .collect();
        let body: Arc<[u8]> = serde_json::to_vec(&serde_json::json!({
            "query": q,
            "terms": terms,
            "total": result.total,
            "postings": result.postings,
            "results": results,
        }))
        .unwrap_or_default()
        .into();
        self.searches.put(key, body.clone(), cache);
        Response::cached(body)
    }

    pub(super) async fn autocomplete(self: &Arc<Self>, req: &Request) -> Response {
        let Some(prefix) = req.query_param("prefix") else {
            return Response::error(400, "missing query parameter prefix");
        };
        let prefix: String = prefix.chars().take(64).collect();
        let index = self.index.clone();
        let posting_cost = self.opts.posting_cost;
        let p = prefix.clone();
        let Some(s) = self
            .cpu
            .run(move || {
                let s = pado_base::lock::read(&index).autocomplete(&p, TOP);
                let cost = posting_cost.saturating_mul(s.scanned.min(u32::MAX as usize) as u32);
                (s, cost)
            })
            .await
        else {
            return Response::error(503, "shutting down");
        };
        let titles: Vec<serde_json::Value> = s
            .titles
            .iter()
            .map(|(id, t)| serde_json::json!({ "id": id, "title": &**t }))
            .collect();
        Response::json(
            200,
            &serde_json::json!({ "prefix": prefix, "suggestions": s.terms, "titles": titles }),
        )
    }
}
