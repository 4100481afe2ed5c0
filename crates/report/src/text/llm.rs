//! LLM streams per `sse: {llm: true}` step, in the words LLM serving is judged by:
//! requests, output tokens and tokens per second, the prompts' input tokens (when
//! pado sized them, `sse.prompt`), time to first token, the gaps between tokens and
//! the time per output token.

use std::fmt::Write as _;

use pado_base::units::{ms, rate, thousands};

use super::{cell, TextOptions};
use crate::summary::Summary;

/// One line per LLM step, then the run's throughput; nothing without any.
pub(super) fn llm(out: &mut String, s: &Summary, _o: TextOptions) {
    let Some(all) = s.sse.as_ref().and_then(|e| e.llm.as_ref()) else {
        return;
    };
    let steps: Vec<_> = s
        .steps
        .iter()
        .filter_map(|(n, st)| st.sse.as_ref().and_then(|e| e.llm.as_ref()).map(|l| (n, l)))
        .collect();
    let nw = steps
        .iter()
        .map(|(n, _)| pado_base::text::columns(n))
        .max()
        .unwrap_or(4)
        .clamp(9, 40);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<nw$} {:>8} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "llm",
        "requests",
        "tokens",
        "input50",
        "ttft50",
        "ttft95",
        "itl50",
        "itl99",
        "tpot50",
        "tok/s50"
    );
    for (name, l) in &steps {
        let _ = writeln!(
            out,
            "  {} {:>8} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            cell(name, nw),
            thousands(l.requests),
            thousands(l.output_tokens),
            l.input_tokens_per_request
                .as_ref()
                .map_or_else(|| "-".to_string(), |i| tokens(i.p50)),
            ms(l.ttft_ms.p50),
            ms(l.ttft_ms.p95),
            ms(l.itl_ms.p50),
            ms(l.itl_ms.p99),
            ms(l.tpot_ms.p50),
            format!("{:.1}", l.tokens_per_s_per_request.p50),
        );
    }
    let _ = writeln!(
        out,
        "  output tokens: {} ({} tokens/s over the run)",
        thousands(all.output_tokens),
        rate(all.output_tokens_per_s)
    );
    if let Some(i) = &all.input_tokens_per_request {
        let _ = writeln!(
            out,
            "  input tokens per request (the prompts pado sized): {} median, {} mean, {} max",
            tokens(i.p50),
            tokens(i.mean),
            tokens(i.max)
        );
    }
}

/// A count of tokens read from a histogram (held to 3 significant digits, so a
/// fraction is noise): whole, with thousands separators.
fn tokens(v: f64) -> String {
    thousands(v.round().max(0.0) as u64)
}
