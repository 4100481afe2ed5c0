//! Where the history database lives: `--history DIR`, else `PADO_HOME`, else the
//! XDG data directory (`$XDG_DATA_HOME/pado`, `~/.local/share/pado`).

use std::path::{Path, PathBuf};

use crate::HistoryError;

/// The database's file name inside its directory.
pub const DB_FILE: &str = "history.db";

/// The database file: `DIR/history.db` for an explicit directory (`--history`),
/// else under `PADO_HOME`, `XDG_DATA_HOME/pado` or `HOME/.local/share/pado`
/// (empty variables count as unset, as the XDG specification says).
pub fn db_path(dir: Option<&Path>) -> Result<PathBuf, HistoryError> {
    db_path_from(dir, |k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn db_path_from(
    dir: Option<&Path>,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, HistoryError> {
    if let Some(d) = dir {
        return Ok(d.join(DB_FILE));
    }
    if let Some(h) = env("PADO_HOME") {
        return Ok(PathBuf::from(h).join(DB_FILE));
    }
    if let Some(x) = env("XDG_DATA_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Ok(PathBuf::from(x).join("pado").join(DB_FILE));
    }
    if let Some(h) = env("HOME") {
        return Ok(PathBuf::from(h).join(".local/share/pado").join(DB_FILE));
    }
    Err(HistoryError::NoLocation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(
        pairs: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Option<std::ffi::OsString> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn order_of_precedence() {
        let all = [("PADO_HOME", "/p"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(
            db_path_from(Some(Path::new("/d")), env(&all)).unwrap(),
            Path::new("/d/history.db")
        );
        assert_eq!(
            db_path_from(None, env(&all)).unwrap(),
            Path::new("/p/history.db")
        );
        assert_eq!(
            db_path_from(None, env(&all[1..])).unwrap(),
            Path::new("/x/pado/history.db")
        );
        assert_eq!(
            db_path_from(None, env(&all[2..])).unwrap(),
            Path::new("/h/.local/share/pado/history.db")
        );
        // A relative XDG_DATA_HOME is invalid by the specification: ignored.
        assert_eq!(
            db_path_from(None, env(&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")])).unwrap(),
            Path::new("/h/.local/share/pado/history.db")
        );
        assert!(matches!(
            db_path_from(None, env(&[])),
            Err(HistoryError::NoLocation)
        ));
    }
}
