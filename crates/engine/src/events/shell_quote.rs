//! `{{ env.X }}` in a `shell:` line, substituted as data and never as shell code.
//!
//! A `shell:` event is `sh -c LINE`; pasting an environment value into LINE as it is
//! would let a value such as `x; rm -rf ~` run commands (shell injection). Each value
//! is therefore quoted for the place it sits in, found by following POSIX `sh`
//! quoting through the literal text before it:
//! - outside quotes: the value in single quotes, `'` written as `'\''`
//!   (`echo {{ env.X }}` → `echo 'x; touch PWNED'`);
//! - inside `'...'`: the value's own `'` closed and reopened as `'\''`;
//! - inside `"..."`: `\`, `"`, `$` and `` ` `` escaped with a backslash.
//!
//! The command always receives the value's exact bytes as one word (or as part of
//! the quoted word it sits in). A hole right after a lone `\` is refused: the
//! backslash would escape the quote put there. Anything the quoting cannot express
//! (a value the shell should split or expand) belongs in `run: [argv]`, which needs
//! no quoting at all.

use pado_scenario::template::{parse_template, Expr, Segment};

/// Where the literal text before a hole left the shell's quoting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Quoting {
    None,
    Single,
    Double,
}

/// Follows `sh` quoting through `text` from `state`; `escaped` is a pending `\`.
fn follow(text: &str, mut state: Quoting, mut escaped: bool) -> (Quoting, bool) {
    for c in text.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        state = match (state, c) {
            (Quoting::None, '\\') | (Quoting::Double, '\\') => {
                escaped = true;
                state
            }
            (Quoting::None, '\'') => Quoting::Single,
            (Quoting::None, '"') => Quoting::Double,
            (Quoting::Single, '\'') | (Quoting::Double, '"') => Quoting::None,
            (s, _) => s,
        };
    }
    (state, escaped)
}

/// `value` written so that `sh` reads back exactly its bytes where `state` says the
/// hole is.
fn quote(value: &str, state: Quoting) -> String {
    match state {
        Quoting::None => format!("'{}'", value.replace('\'', r"'\''")),
        Quoting::Single => value.replace('\'', r"'\''"),
        Quoting::Double => {
            let mut out = String::with_capacity(value.len());
            for c in value.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

/// Renders a `shell:` line's `{{ env.NAME }}` holes, each value quoted for where it
/// sits (see the module's documentation). The error is the message for the field.
pub fn render_shell_line(line: &str) -> Result<String, String> {
    let t = parse_template(line).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(line.len());
    let (mut state, mut escaped) = (Quoting::None, false);
    for seg in &t.segments {
        match seg {
            Segment::Lit(l) => {
                (state, escaped) = follow(l, state, escaped);
                out.push_str(l);
            }
            Segment::Expr(Expr::Env(name)) => {
                if escaped {
                    return Err(format!(
                        "`{{{{ env.{name} }}}}` follows a `\\`, which would escape the quote \
                         pado puts around its value; remove the `\\`"
                    ));
                }
                let value = std::env::var(name)
                    .map_err(|_| format!("environment variable `{name}` is not set"))?;
                out.push_str(&quote(&value, state));
            }
            Segment::Expr(_) | Segment::Typed(..) => {
                return Err("only `{{ env.NAME }}` may be used here".to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh` makes of `line`: its `printf %s` output, the truth for quoting.
    fn sh_output(line: &str) -> Vec<u8> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {:?}", out);
        out.stdout
    }

    const HOSTILE: &str = "x; echo INJECTED 'a' \"b\" $HOME `id` \\ $(id) 파도 ';";

    #[test]
    fn a_value_reaches_the_command_intact_wherever_the_hole_sits() {
        std::env::set_var("PADO_SHELL_QUOTE_TEST", HOSTILE);
        for (line, want) in [
            ("printf %s {{ env.PADO_SHELL_QUOTE_TEST }}", HOSTILE.to_string()),
            ("printf %s '{{ env.PADO_SHELL_QUOTE_TEST }}'", HOSTILE.to_string()),
            ("printf %s \"{{ env.PADO_SHELL_QUOTE_TEST }}\"", HOSTILE.to_string()),
            (
                "printf %s \"[{{ env.PADO_SHELL_QUOTE_TEST }}]\"'<{{ env.PADO_SHELL_QUOTE_TEST }}>'",
                format!("[{HOSTILE}]<{HOSTILE}>"),
            ),
            (
                "printf %s pre-{{ env.PADO_SHELL_QUOTE_TEST }}-post",
                format!("pre-{HOSTILE}-post"),
            ),
        ] {
            let rendered = render_shell_line(line).unwrap();
            assert_eq!(
                String::from_utf8(sh_output(&rendered)).unwrap(),
                want,
                "{line} → {rendered}"
            );
        }
    }

    #[test]
    fn literal_text_keeps_its_shell_meaning() {
        std::env::set_var("PADO_SHELL_QUOTE_TEST_B", "v");
        // Only the value is quoted: the line's own `;` still separates commands.
        let r = render_shell_line("printf a; printf %s {{ env.PADO_SHELL_QUOTE_TEST_B }}").unwrap();
        assert_eq!(r, "printf a; printf %s 'v'");
        assert_eq!(sh_output(&r), b"av");
        // An escaped quote does not open a quoted string.
        let r = render_shell_line("printf %s \\'{{ env.PADO_SHELL_QUOTE_TEST_B }}").unwrap();
        assert_eq!(sh_output(&r), b"'v");
    }

    #[test]
    fn a_hole_after_a_backslash_and_other_holes_are_refused() {
        std::env::set_var("PADO_SHELL_QUOTE_TEST_C", "v");
        let e = render_shell_line("echo \\{{ env.PADO_SHELL_QUOTE_TEST_C }}").unwrap_err();
        assert!(e.contains("follows a `\\`"), "{e}");
        let e = render_shell_line("echo {{ vu }}").unwrap_err();
        assert!(e.contains("only `{{ env.NAME }}`"), "{e}");
        let e = render_shell_line("echo {{ env.PADO_SHELL_QUOTE_TEST_UNSET_X }}").unwrap_err();
        assert!(e.contains("is not set"), "{e}");
    }
}
