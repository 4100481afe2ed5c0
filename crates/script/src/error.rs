//! What can be wrong with a script before it runs, in the user's words: every
//! error names the file (and the line and column when there is one).

use std::path::PathBuf;

/// Why a script cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file (or a module it imports) cannot be read.
    #[error("{file}: cannot read it: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// JavaScript that does not parse: where, what, and the line as written.
    #[error("{at}: {message}\n{excerpt}")]
    Syntax {
        /// `file:line:column`.
        at: String,
        /// The parser's message (`SyntaxError: unexpected token ...`).
        message: String,
        /// The source line with a caret under the column.
        excerpt: String,
    },
    /// An import pado cannot satisfy (a k6 extension, the browser module, a
    /// missing file, a remote module not in the local cache).
    #[error("{at}: cannot import `{specifier}`: {why}")]
    Import {
        /// `file:line`.
        at: String,
        /// The module as written in the import.
        specifier: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// The script's top-level code (its init stage) threw.
    #[error("{file}: the script's init code threw: {message}{stack}")]
    Init {
        /// The script.
        file: String,
        /// The exception's message.
        message: String,
        /// Its JavaScript stack (with a leading newline), if any.
        stack: String,
    },
    /// `export const options` says something pado cannot run.
    #[error("{file}: options.{field}: {why}")]
    Options {
        /// The script.
        file: String,
        /// The option's path (`scenarios.login.executor`).
        field: String,
        /// What is wrong, and what to do instead.
        why: String,
    },
}
