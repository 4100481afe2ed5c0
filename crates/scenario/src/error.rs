//! Scenario errors that name the file, the line and the field, with a hint: the user
//! should be able to fix the file without reading pado's source.

use std::fmt;

/// One problem in a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file (or `<command line>`).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The field path, e.g. `scenarios.browse.stages[1].duration`.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": ")?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// Why a scenario could not be loaded: every problem found, not just the first.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The file was read but is not a valid scenario.
    #[error("{}", render(.0))]
    Invalid(Vec<Diagnostic>),
}

fn render(d: &[Diagnostic]) -> String {
    let mut s = String::new();
    for (i, x) in d.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&x.to_string());
    }
    if d.len() > 1 {
        s.push_str(&format!("\n{} problems found", d.len()));
    }
    s
}

impl ScenarioError {
    /// The diagnostics, if any.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ScenarioError::Invalid(d) => d,
            ScenarioError::Read { .. } => &[],
        }
    }
}
