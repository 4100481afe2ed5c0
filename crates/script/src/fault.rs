//! A script's exception in the user's words: the message, then where it was
//! thrown (`file:line:column`, the first frame of the stack in one of the
//! script's files) with that source line and a caret, then the stack.

use crate::host::{position_in, Shared};
use pado_engine::script::ScriptFault;

/// `fault` as the user reads it; the source line is read again from the file
/// (this runs once, on the error path).
pub(crate) fn describe(shared: &Shared, fault: &ScriptFault) -> String {
    let mut out = fault.message.clone();
    if let Some((file, line, col)) = first_frame(shared, &fault.stack) {
        let shown = if file == shared.main {
            shared.file.clone()
        } else {
            file.clone()
        };
        out.push_str(&format!("\n  at {shown}:{line}:{col}"));
        if let Some(text) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|src| src.lines().nth(line.saturating_sub(1)).map(str::to_string))
        {
            let caret = " ".repeat(col.saturating_sub(1));
            out.push_str(&format!("\n{line:>5} | {text}\n      | {caret}^"));
        }
    }
    if !fault.stack.is_empty() {
        out.push('\n');
        out.push_str(&fault.stack);
    }
    out
}

/// The first frame of `stack` in one of the script's own files (not pado's
/// modules): its module name, line and column.
fn first_frame(shared: &Shared, stack: &str) -> Option<(String, usize, usize)> {
    stack.lines().find_map(|l| {
        shared
            .modules
            .keys()
            .filter(|name| name.starts_with('/'))
            .filter(|name| l.contains(name.as_str()))
            .find_map(|name| position_in(l, name).map(|(line, col)| (name.clone(), line, col)))
    })
}
