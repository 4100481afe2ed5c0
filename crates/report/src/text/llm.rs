//! LLM streams per `sse: {llm: true}` step, in the words LLM serving is judged by:
//! requests, output tokens and tokens per second, time to first token, the gaps
//! between tokens and the time per output token.

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
        "  {:<nw$} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "llm", "requests", "tokens", "ttft50", "ttft95", "itl50", "itl99", "tpot50", "tok/s50"
    );
    for (name, l) in &steps {
        let _ = writeln!(
            out,
            "  {} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            cell(name, nw),
            thousands(l.requests),
            thousands(l.output_tokens),
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
}
