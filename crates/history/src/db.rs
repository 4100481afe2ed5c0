//! The database: opening (WAL, busy timeout, migrations), recording a run in one
//! transaction, listing and resolving references.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior};

use crate::record::{Kind, LlmRecord, RunRecord, StepFigures};
use crate::schema::{migrate, MigrateError, MIGRATIONS, SCHEMA_VERSION};
use crate::{Filter, HistoryError, Run, RunRef};

/// How long a writer waits for another to finish before giving up: long enough
/// for many runs ending together (each write takes milliseconds).
const BUSY: Duration = Duration::from_secs(10);

/// An open history database.
pub struct History {
    conn: Connection,
    path: PathBuf,
    busy: Duration,
}

const RUN_COLUMNS: &str =
    "id, name, kind, started_at, started_unix_ms, duration_s, scenario_hash, \
requests, failed, rps, failed_rate, p50_ms, p95_ms, p99_ms, checks_passed, checks_failed, \
thresholds_ok, exit_code, interrupted, result_dir";

/// A count column (SQLite keeps integers signed): never below zero, whatever a
/// hand-edited row holds.
fn count(row: &Row<'_>, column: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(column)?.max(0) as u64)
}

impl History {
    /// Open (creating it and its directory when missing) the database at `path`,
    /// bringing its schema up to date.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        Self::open_waiting(path, BUSY)
    }

    /// [`History::open`] with another busy timeout.
    fn open_waiting(path: &Path, busy: Duration) -> Result<History, HistoryError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| HistoryError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let sql = |e| HistoryError::sql(path, e, busy.as_secs());
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(busy).map_err(sql)?;
        // The first statement reads the header: a file that is not a database
        // fails here, with SQLITE_NOTADB. WAL lets runs read while one records; on
        // a file system without shared memory SQLite keeps its rollback journal
        // (still safe with transactions, only less concurrent).
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql)?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(sql)?;
        match migrate(&mut conn, MIGRATIONS) {
            Ok(_) => {}
            Err(MigrateError::Newer(found)) => {
                return Err(HistoryError::NewerSchema {
                    path: path.to_path_buf(),
                    found,
                    known: SCHEMA_VERSION,
                })
            }
            Err(MigrateError::Sql(e)) => return Err(sql(e)),
        }
        Ok(History {
            conn,
            path: path.to_path_buf(),
            busy,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, e: rusqlite::Error) -> HistoryError {
        HistoryError::sql(&self.path, e, self.busy.as_secs())
    }

    /// Record a run in one transaction and return its id. A result directory
    /// already recorded keeps its id and gets the new figures and labels
    /// (recording the same directory twice is one run).
    pub fn record(&mut self, r: &RunRecord) -> Result<i64, HistoryError> {
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let (path, busy) = (self.path.clone(), self.busy.as_secs());
        let sql = |e| HistoryError::sql(&path, e, busy);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let dir = r.result_dir.to_string_lossy();
        let id: i64 = tx
            .query_row(
                "INSERT INTO runs (name, kind, started_at, started_unix_ms, duration_s, scenario_hash,
                    requests, failed, rps, failed_rate, p50_ms, p95_ms, p99_ms, checks_passed,
                    checks_failed, thresholds_ok, exit_code, interrupted, result_dir, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)
                 ON CONFLICT (result_dir) DO UPDATE SET
                    name = excluded.name, kind = excluded.kind, started_at = excluded.started_at,
                    started_unix_ms = excluded.started_unix_ms, duration_s = excluded.duration_s,
                    scenario_hash = excluded.scenario_hash, requests = excluded.requests,
                    failed = excluded.failed, rps = excluded.rps, failed_rate = excluded.failed_rate,
                    p50_ms = excluded.p50_ms, p95_ms = excluded.p95_ms, p99_ms = excluded.p99_ms,
                    checks_passed = excluded.checks_passed, checks_failed = excluded.checks_failed,
                    thresholds_ok = excluded.thresholds_ok, exit_code = excluded.exit_code,
                    interrupted = excluded.interrupted, recorded_at = excluded.recorded_at
                 RETURNING id",
                params![
                    r.name,
                    r.kind.as_str(),
                    r.started_at,
                    r.started_unix_ms,
                    r.duration_s,
                    r.scenario_hash,
                    r.requests as i64,
                    r.failed as i64,
                    r.rps,
                    r.failed_rate,
                    r.p50_ms,
                    r.p95_ms,
                    r.p99_ms,
                    r.checks_passed as i64,
                    r.checks_failed as i64,
                    r.thresholds_ok,
                    r.exit_code,
                    r.interrupted,
                    dir,
                    now,
                ],
                |row| row.get(0),
            )
            .map_err(sql)?;
        // Labels given again replace the recorded ones of the same key; a rebuild
        // (no labels) keeps what the run was recorded with.
        for (k, v) in &r.labels {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
                params![id, k, v],
            )
            .map_err(sql)?;
        }
        tx.execute("DELETE FROM run_steps WHERE run_id = ?1", params![id])
            .map_err(sql)?;
        for s in &r.steps {
            tx.execute(
                "INSERT INTO run_steps (run_id, step, requests, failed, rps, failed_rate, p50_ms, p95_ms, p99_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    id,
                    s.step,
                    s.requests as i64,
                    s.failed as i64,
                    s.rps,
                    s.failed_rate,
                    s.p50_ms,
                    s.p95_ms,
                    s.p99_ms
                ],
            )
            .map_err(sql)?;
        }
        tx.execute("DELETE FROM run_llm WHERE run_id = ?1", params![id])
            .map_err(sql)?;
        let llm = r.llm.iter().map(|l| ("", l)).chain(
            r.steps
                .iter()
                .filter_map(|s| s.llm.as_ref().map(|l| (s.step.as_str(), l))),
        );
        for (step, l) in llm {
            tx.execute(
                "INSERT INTO run_llm (run_id, step, ttft_p50_ms, ttft_p95_ms, ttft_p99_ms,
                    itl_p50_ms, itl_p95_ms, itl_p99_ms, tpot_p50_ms, tpot_p95_ms, output_tokens,
                    tokens_per_s, tokens_per_s_per_request_p50)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    id,
                    step,
                    l.figures.ttft_p50_ms,
                    l.figures.ttft_p95_ms,
                    l.figures.ttft_p99_ms,
                    l.figures.itl_p50_ms,
                    l.figures.itl_p95_ms,
                    l.figures.itl_p99_ms,
                    l.figures.tpot_p50_ms,
                    l.figures.tpot_p95_ms,
                    l.output_tokens as i64,
                    l.figures.tokens_per_s,
                    l.figures.tokens_per_s_per_request_p50,
                ],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    fn row_to_run(row: &Row<'_>) -> rusqlite::Result<Run> {
        Ok(Run {
            id: row.get(0)?,
            record: RunRecord {
                name: row.get(1)?,
                kind: Kind::parse(&row.get::<_, String>(2)?),
                started_at: row.get(3)?,
                started_unix_ms: row.get(4)?,
                duration_s: row.get(5)?,
                scenario_hash: row.get(6)?,
                requests: count(row, 7)?,
                failed: count(row, 8)?,
                rps: row.get(9)?,
                failed_rate: row.get(10)?,
                p50_ms: row.get(11)?,
                p95_ms: row.get(12)?,
                p99_ms: row.get(13)?,
                checks_passed: count(row, 14)?,
                checks_failed: count(row, 15)?,
                thresholds_ok: row.get(16)?,
                exit_code: row.get(17)?,
                interrupted: row.get(18)?,
                result_dir: PathBuf::from(row.get::<_, String>(19)?),
                labels: BTreeMap::new(),
                steps: Vec::new(),
                llm: None,
            },
        })
    }

    /// Fill a run's labels and steps.
    fn complete(&self, mut run: Run) -> Result<Run, HistoryError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT key, value FROM labels WHERE run_id = ?1 ORDER BY key")
            .map_err(|e| self.sql(e))?;
        run.record.labels = st
            .query_map(params![run.id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT step, requests, failed, rps, failed_rate, p50_ms, p95_ms, p99_ms
                 FROM run_steps WHERE run_id = ?1 ORDER BY step",
            )
            .map_err(|e| self.sql(e))?;
        run.record.steps = st
            .query_map(params![run.id], |r| {
                Ok(StepFigures {
                    step: r.get(0)?,
                    requests: count(r, 1)?,
                    failed: count(r, 2)?,
                    rps: r.get(3)?,
                    failed_rate: r.get(4)?,
                    p50_ms: r.get(5)?,
                    p95_ms: r.get(6)?,
                    p99_ms: r.get(7)?,
                    llm: None,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT step, ttft_p50_ms, ttft_p95_ms, ttft_p99_ms, itl_p50_ms, itl_p95_ms,
                    itl_p99_ms, tpot_p50_ms, tpot_p95_ms, output_tokens, tokens_per_s,
                    tokens_per_s_per_request_p50
                 FROM run_llm WHERE run_id = ?1",
            )
            .map_err(|e| self.sql(e))?;
        let llm: Vec<(String, LlmRecord)> = st
            .query_map(params![run.id], |r| {
                Ok((
                    r.get(0)?,
                    LlmRecord {
                        figures: pado_report::compare::EarlierLlm {
                            ttft_p50_ms: r.get(1)?,
                            ttft_p95_ms: r.get(2)?,
                            ttft_p99_ms: r.get(3)?,
                            itl_p50_ms: r.get(4)?,
                            itl_p95_ms: r.get(5)?,
                            itl_p99_ms: r.get(6)?,
                            tpot_p50_ms: r.get(7)?,
                            tpot_p95_ms: r.get(8)?,
                            tokens_per_s: r.get(10)?,
                            tokens_per_s_per_request_p50: r.get(11)?,
                        },
                        output_tokens: count(r, 9)?,
                    },
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        for (step, l) in llm {
            if step.is_empty() {
                run.record.llm = Some(l);
            } else if let Some(s) = run.record.steps.iter_mut().find(|s| s.step == step) {
                s.llm = Some(l);
            }
        }
        Ok(run)
    }

    /// The runs `filter` selects, most recent first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Run>, HistoryError> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE 1 = 1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(n) = &filter.name {
            args.push(n.clone().into());
            sql.push_str(&format!(" AND name = ?{}", args.len()));
        }
        if let Some(s) = filter.since_unix_ms {
            args.push(s.into());
            sql.push_str(&format!(" AND started_unix_ms >= ?{}", args.len()));
        }
        for (k, v) in &filter.labels {
            args.push(k.clone().into());
            let kn = args.len();
            args.push(v.clone().into());
            let vn = args.len();
            // A commit given short matches the recorded full hash.
            let value_match = if k == "commit" {
                format!("(l.value = ?{vn} OR (length(?{vn}) >= 4 AND substr(l.value, 1, length(?{vn})) = ?{vn}))")
            } else {
                format!("l.value = ?{vn}")
            };
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = r.id AND l.key = ?{kn} AND {value_match})"
            ));
        }
        sql.push_str(" ORDER BY started_unix_ms DESC, id DESC");
        if let Some(l) = filter.limit {
            sql.push_str(&format!(" LIMIT {l}"));
        }
        let mut st = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let runs: Vec<Run> = st
            .query_map(rusqlite::params_from_iter(args), Self::row_to_run)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        runs.into_iter().map(|r| self.complete(r)).collect()
    }

    /// The run with this id.
    pub fn get(&self, id: i64) -> Result<Option<Run>, HistoryError> {
        let run = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                params![id],
                Self::row_to_run,
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        run.map(|r| self.complete(r)).transpose()
    }

    /// The run a reference names. `best` without a name takes `context_name`, else
    /// the name of the latest run.
    pub fn resolve(&self, r: &RunRef, context_name: Option<&str>) -> Result<Run, HistoryError> {
        self.resolve_except(r, context_name, &[])
    }

    /// [`History::resolve`], with `best` chosen among the runs whose ids are not
    /// in `except`: `pado compare best last` compares the latest run with the best
    /// of the others, also when the latest is the best so far (a CI job comparing
    /// every run with the best must not fail on the best one).
    pub fn resolve_except(
        &self,
        r: &RunRef,
        context_name: Option<&str>,
        except: &[i64],
    ) -> Result<Run, HistoryError> {
        let none = |why: String| {
            HistoryError::Reference(format!("`{r}`: {why} in {}", self.path.display()))
        };
        match r {
            RunRef::Id(id) => self
                .get(*id)?
                .ok_or_else(|| none(format!("no run with id {id}"))),
            RunRef::Last(n) => {
                let runs = self.list(&Filter {
                    limit: Some(n + 1),
                    ..Filter::default()
                })?;
                let found = runs.len();
                runs.into_iter().nth(*n).ok_or_else(|| {
                    none(format!(
                        "only {found} run{} recorded",
                        if found == 1 { "" } else { "s" }
                    ))
                })
            }
            RunRef::Label(k, v) => self
                .list(&Filter {
                    labels: vec![(k.clone(), v.clone())],
                    limit: Some(1),
                    ..Filter::default()
                })?
                .pop()
                .ok_or_else(|| none(format!("no run labelled {k}={v}"))),
            RunRef::Best(name) => {
                let name = match name.clone().or_else(|| context_name.map(str::to_string)) {
                    Some(n) => n,
                    None => self
                        .list(&Filter {
                            limit: Some(1),
                            ..Filter::default()
                        })?
                        .pop()
                        .map(|r| r.record.name)
                        .ok_or_else(|| none("no runs recorded".into()))?,
                };
                // The best few, enough to pass over the excepted ones.
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT id FROM runs WHERE name = ?1 AND p95_ms IS NOT NULL
                         ORDER BY p95_ms ASC, started_unix_ms DESC LIMIT ?2",
                    )
                    .map_err(|e| self.sql(e))?;
                let ids: Vec<i64> = stmt
                    .query_map(params![name, except.len() as i64 + 1], |row| row.get(0))
                    .and_then(|rows| rows.collect())
                    .map_err(|e| self.sql(e))?;
                match ids.into_iter().find(|id| !except.contains(id)) {
                    Some(id) => self.get(id)?.ok_or_else(|| none("vanished".into())),
                    None if except.is_empty() => {
                        Err(none(format!("no run named `{name}` with a p95")))
                    }
                    None => Err(none(format!(
                        "no other run named `{name}` with a p95 than the one compared"
                    ))),
                }
            }
        }
    }

    /// The runs of `name`, oldest first (for a trend).
    pub fn runs_named(&self, name: &str, limit: Option<usize>) -> Result<Vec<Run>, HistoryError> {
        let mut runs = self.list(&Filter {
            name: Some(name.to_string()),
            limit,
            ..Filter::default()
        })?;
        runs.reverse();
        Ok(runs)
    }

    /// `PRAGMA integrity_check`'s answer (`ok` for a sound database).
    pub fn integrity_check(&self) -> Result<String, HistoryError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::write_result;

    fn record(h: &mut History, dir: &Path, labels: &[(&str, &str)]) -> i64 {
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let r = RunRecord::from_result_dir(dir, None, labels).unwrap();
        h.record(&r).unwrap()
    }

    #[test]
    fn record_list_and_resolve() {
        let t = tempfile::tempdir().unwrap();
        let mut h = History::open(&t.path().join("h/history.db")).unwrap();
        let dirs: Vec<PathBuf> = (0..4).map(|i| t.path().join(format!("r{i}"))).collect();
        write_result(
            &dirs[0],
            "검색",
            "2026-11-20T10:00:00Z",
            30.0,
            serde_json::Value::Null,
        );
        write_result(
            &dirs[1],
            "검색",
            "2026-11-21T10:00:00Z",
            20.0,
            serde_json::Value::Null,
        );
        write_result(
            &dirs[2],
            "other",
            "2026-11-22T10:00:00Z",
            5.0,
            serde_json::Value::Null,
        );
        write_result(
            &dirs[3],
            "검색",
            "2026-11-23T10:00:00Z",
            25.0,
            serde_json::Value::Null,
        );
        let a = record(
            &mut h,
            &dirs[0],
            &[("commit", "abcdef0123"), ("환경", "스테이징")],
        );
        let b = record(&mut h, &dirs[1], &[("commit", "123456")]);
        let c = record(&mut h, &dirs[2], &[]);
        let d = record(&mut h, &dirs[3], &[]);
        assert_eq!(
            h.list(&Filter::default())
                .unwrap()
                .iter()
                .map(|r| r.id)
                .collect::<Vec<_>>(),
            [d, c, b, a]
        );
        assert_eq!(h.resolve(&RunRef::Last(0), None).unwrap().id, d);
        assert_eq!(h.resolve(&RunRef::Last(1), None).unwrap().id, c);
        assert!(h
            .resolve(&RunRef::Last(4), None)
            .unwrap_err()
            .to_string()
            .contains("only 4 runs"));
        // Best p95 of the latest run's name (검색): run b, not c (another name).
        assert_eq!(h.resolve(&RunRef::Best(None), None).unwrap().id, b);
        assert_eq!(h.resolve(&RunRef::Best(None), Some("other")).unwrap().id, c);
        // `best` beside the run it would be: the best of the others.
        let best_but_b = h.resolve_except(&RunRef::Best(None), None, &[b]).unwrap();
        assert_ne!(best_but_b.id, b);
        assert_eq!(best_but_b.record.name, "검색");
        assert!(h
            .resolve_except(&RunRef::Best(None), Some("other"), &[c])
            .unwrap_err()
            .to_string()
            .contains("no other run named `other`"));
        assert_eq!(
            h.resolve(&RunRef::Label("commit".into(), "abcd".into()), None)
                .unwrap()
                .id,
            a
        );
        assert!(
            h.resolve(&RunRef::Label("commit".into(), "abc".into()), None)
                .is_err(),
            "prefixes need 4 digits"
        );
        let run = h
            .resolve(&RunRef::Label("환경".into(), "스테이징".into()), None)
            .unwrap();
        assert_eq!(
            run.record.labels.get("환경").map(String::as_str),
            Some("스테이징")
        );
        assert_eq!(run.record.name, "검색");
        assert_eq!(run.record.steps[0].step, "검색");
        // Filters.
        let named = h
            .list(&Filter {
                name: Some("검색".into()),
                limit: Some(2),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(named.iter().map(|r| r.id).collect::<Vec<_>>(), [d, b]);
        let since = h
            .list(&Filter {
                since_unix_ms: Some(1_795_341_600_000),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(since.len(), 2, "runs from 2026-11-22T10:00Z on");
        assert_eq!(
            h.runs_named("검색", None)
                .unwrap()
                .iter()
                .map(|r| r.id)
                .collect::<Vec<_>>(),
            [a, b, d]
        );
        assert!(h.resolve(&RunRef::Id(999), None).is_err());
        assert_eq!(h.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn the_same_directory_twice_is_one_run_and_keeps_its_labels() {
        let t = tempfile::tempdir().unwrap();
        let mut h = History::open(&t.path().join("history.db")).unwrap();
        let d = t.path().join("r");
        write_result(
            &d,
            "x",
            "2026-11-20T10:00:00Z",
            30.0,
            serde_json::Value::Null,
        );
        let first = record(&mut h, &d, &[("env", "prod")]);
        let again = record(&mut h, &d, &[]);
        assert_eq!(first, again);
        let all = h.list(&Filter::default()).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            all[0].record.labels.get("env").map(String::as_str),
            Some("prod")
        );
        assert_eq!(all[0].record.steps.len(), 1, "steps replaced, not doubled");
    }

    #[test]
    fn garbage_and_newer_databases_are_named() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("history.db");
        std::fs::write(
            &p,
            b"this is not an SQLite database, just some bytes that look wrong ....",
        )
        .unwrap();
        let e = History::open(&p).err().unwrap();
        assert!(matches!(e, HistoryError::Corrupt { .. }), "{e}");
        assert!(!e.to_string().contains('\n'));
        let q = t.path().join("newer.db");
        {
            let c = Connection::open(&q).unwrap();
            c.execute_batch("PRAGMA user_version = 7").unwrap();
        }
        let e = History::open(&q).err().unwrap();
        assert!(
            matches!(e, HistoryError::NewerSchema { found: 7, .. }),
            "{e}"
        );
    }

    /// A writer holding the database past the busy timeout: the error says
    /// locked, in one line, after waiting that long; once it is released, the same
    /// connection records.
    #[test]
    fn a_database_locked_too_long_is_named() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("history.db");
        let d = t.path().join("r");
        write_result(
            &d,
            "x",
            "2026-11-20T10:00:00Z",
            30.0,
            serde_json::Value::Null,
        );
        let r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
        let holder = History::open(&p).unwrap();
        let mut h = History::open_waiting(&p, Duration::from_millis(300)).unwrap();
        holder.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let t0 = std::time::Instant::now();
        let e = h.record(&r).unwrap_err();
        assert!(
            t0.elapsed() >= Duration::from_millis(250),
            "waited {:?}",
            t0.elapsed()
        );
        assert!(matches!(e, HistoryError::Locked { .. }), "{e}");
        assert!(e.to_string().contains("locked") && !e.to_string().contains('\n'));
        holder.conn.execute_batch("COMMIT").unwrap();
        h.record(&r).unwrap();
        assert_eq!(h.list(&Filter::default()).unwrap().len(), 1);
    }

    /// A database that cannot grow (SQLite's page limit stands in for a full
    /// disk: SQLITE_FULL, deterministically) is named as out of space, in one
    /// line with the history's place; the runs recorded before it stay.
    #[test]
    fn a_full_device_says_no_space_left() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("기록").join("history.db");
        let mut h = History::open(&p).unwrap();
        let d = t.path().join("r");
        write_result(
            &d,
            "x",
            "2026-11-20T10:00:00Z",
            30.0,
            serde_json::Value::Null,
        );
        record(&mut h, &d, &[]);
        let pages: i64 = h
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        h.conn
            .execute_batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let mut full = None;
        for i in 0..200 {
            let di = t.path().join(format!("r{i}"));
            write_result(
                &di,
                &"긴 이름 ".repeat(200),
                "2026-11-20T10:00:00Z",
                1.0,
                serde_json::Value::Null,
            );
            let r = RunRecord::from_result_dir(&di, None, BTreeMap::new()).unwrap();
            if let Err(e) = h.record(&r) {
                full = Some(e);
                break;
            }
        }
        let e = full.expect("the page limit is reached");
        assert!(matches!(e, HistoryError::NoSpace { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("no space left on the device holding the history"),
            "{msg}"
        );
        assert!(msg.contains("기록"), "{msg}");
        assert!(
            !msg.contains("disk I/O error") && !msg.contains('\n'),
            "{msg}"
        );
        assert!(!h.list(&Filter::default()).unwrap().is_empty());
    }

    /// An I/O error on a device with room left is not called a full disk.
    #[test]
    fn an_io_error_with_room_left_keeps_sqlites_words() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("history.db");
        let io = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_WRITE),
            None,
        );
        let e = HistoryError::sql(&p, io, 10);
        assert!(matches!(e, HistoryError::Sql { .. }), "{e}");
        assert!(!e.to_string().contains("no space"), "{e}");
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let e = HistoryError::sql(&p, full, 10);
        assert!(matches!(e, HistoryError::NoSpace { .. }), "{e}");
    }

    /// An empty file is a database at version 0: it gets the whole schema.
    #[test]
    fn an_empty_file_migrates() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("history.db");
        std::fs::write(&p, b"").unwrap();
        let h = History::open(&p).unwrap();
        let v: i64 = h
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[test]
    fn many_writers_at_once() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("history.db");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                let d = t.path().join(format!("r{i}"));
                write_result(
                    &d,
                    "동시",
                    "2026-11-20T10:00:00Z",
                    i as f64,
                    serde_json::Value::Null,
                );
                std::thread::spawn(move || {
                    // Each its own connection, as separate processes would have.
                    let mut h = History::open(&p).unwrap();
                    for _ in 0..5 {
                        let r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
                        h.record(&r).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let h = History::open(&p).unwrap();
        let mode: String = h
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(h.list(&Filter::default()).unwrap().len(), 8);
        assert_eq!(h.integrity_check().unwrap(), "ok");
    }
}
