//! The database's schema as versioned migrations. `PRAGMA user_version` holds the
//! version a database is at; migration `i` (0-based) takes it from `i` to `i + 1`.
//! An empty file (a new database, version 0) goes through all of them. Migrations
//! only ever get appended: a released one is never edited.

use rusqlite::{Connection, TransactionBehavior};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Each migration's SQL, in order; index `i` moves version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // v1: runs, their labels and per-step figures.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        started_at TEXT NOT NULL,
        started_unix_ms INTEGER NOT NULL,
        duration_s REAL NOT NULL,
        scenario_hash TEXT NOT NULL,
        requests INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        rps REAL NOT NULL,
        failed_rate REAL NOT NULL,
        p50_ms REAL,
        p95_ms REAL,
        p99_ms REAL,
        checks_passed INTEGER NOT NULL,
        checks_failed INTEGER NOT NULL,
        thresholds_ok INTEGER NOT NULL,
        exit_code INTEGER NOT NULL,
        interrupted INTEGER NOT NULL,
        result_dir TEXT NOT NULL UNIQUE,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_name ON runs (name, started_unix_ms);
    CREATE INDEX runs_by_start ON runs (started_unix_ms);
    CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX labels_by_pair ON labels (key, value);
    CREATE TABLE run_steps (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step TEXT NOT NULL,
        requests INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        rps REAL NOT NULL,
        failed_rate REAL NOT NULL,
        p50_ms REAL,
        p95_ms REAL,
        p99_ms REAL,
        PRIMARY KEY (run_id, step)
    );",
    // v2: LLM streams' figures, of the whole run (`step` empty) and per step.
    "CREATE TABLE run_llm (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        step TEXT NOT NULL,
        ttft_p50_ms REAL,
        ttft_p95_ms REAL,
        ttft_p99_ms REAL,
        itl_p50_ms REAL,
        itl_p95_ms REAL,
        itl_p99_ms REAL,
        tpot_p50_ms REAL,
        tpot_p95_ms REAL,
        output_tokens INTEGER NOT NULL,
        tokens_per_s REAL,
        tokens_per_s_per_request_p50 REAL,
        PRIMARY KEY (run_id, step)
    );",
];

/// Why a database could not be brought to the current schema.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// Made by a newer pado.
    Newer(i64),
    /// SQLite failed.
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sql(e)
    }
}

/// Bring `conn` to the last version of `migrations`, in one immediate transaction
/// (so two processes opening a new database at once migrate it once: the second
/// waits, then finds it done). Returns the version it was at.
pub(crate) fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<i64, MigrateError> {
    let target = migrations.len() as i64;
    let quick: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if quick == target {
        return Ok(quick);
    }
    if quick > target {
        return Err(MigrateError::Newer(quick));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let from: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if from > target {
        return Err(MigrateError::Newer(from));
    }
    for sql in &migrations[from as usize..] {
        tx.execute_batch(sql)?;
    }
    // PRAGMA takes no parameters; the value is our own integer.
    tx.execute_batch(&format!("PRAGMA user_version = {target}"))?;
    tx.commit()?;
    Ok(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(c: &Connection) -> i64 {
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn an_empty_database_gets_every_migration() {
        let mut c = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut c, MIGRATIONS).unwrap(), 0);
        assert_eq!(version(&c), SCHEMA_VERSION);
        // Again: nothing to do, still the same version.
        assert_eq!(migrate(&mut c, MIGRATIONS).unwrap(), SCHEMA_VERSION);
        let tables: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'labels', 'run_steps')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 3);
    }

    /// A database of an older layout (made by hand, as an older pado would have
    /// left it, with a row) moves to the next version with its rows kept.
    #[test]
    fn an_older_layout_migrates_keeping_its_rows() {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
             INSERT INTO runs (name) VALUES ('검색 부하');
             PRAGMA user_version = 1;",
        )
        .unwrap();
        let next: &[&str] = &[
            "-- v1 (already applied above)",
            "ALTER TABLE runs ADD COLUMN p95_ms REAL;
             CREATE TABLE labels (run_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);",
        ];
        assert_eq!(migrate(&mut c, next).unwrap(), 1);
        assert_eq!(version(&c), 2);
        let (name, p95): (String, Option<f64>) = c
            .query_row("SELECT name, p95_ms FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(name, "검색 부하");
        assert_eq!(p95, None);
    }

    #[test]
    fn a_failing_migration_leaves_the_database_as_it_was() {
        let mut c = Connection::open_in_memory().unwrap();
        let bad: &[&str] = &["CREATE TABLE a (x INTEGER);", "CREATE TABLE a (x INTEGER);"];
        assert!(matches!(migrate(&mut c, bad), Err(MigrateError::Sql(_))));
        assert_eq!(version(&c), 0);
        let tables: i64 = c
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            tables, 0,
            "the first migration was rolled back with the second"
        );
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch("PRAGMA user_version = 99").unwrap();
        assert!(matches!(
            migrate(&mut c, MIGRATIONS),
            Err(MigrateError::Newer(99))
        ));
    }
}
