//! `--dashboard` on `pado run` and `pado demo`: the flags checked (stage two), the
//! earlier run to compare with found before anything is sent, the live page
//! started beside the run, told when the run ended, and kept up afterwards as long
//! as the user asked (`--dashboard-linger`, else until Ctrl-C in a terminal and
//! not at all in a CI job).

use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pado_dashboard::{Baseline, Dashboard, DashboardOptions, RunInfo};

use crate::args::DashboardArgs;
use crate::exit::Failure;

/// The environment variable a token may come from instead of `--dashboard-token`.
pub(crate) const TOKEN_ENV: &str = "PADO_DASHBOARD_TOKEN";

/// How long the page stays up after the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Linger {
    /// This long, or until Ctrl-C.
    For(Duration),
    /// Until Ctrl-C.
    UntilCtrlC,
}

/// The dashboard a run was asked to serve, its flags checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DashboardSpec {
    /// Where to listen.
    pub addr: SocketAddr,
    /// `--dashboard-token`.
    pub token: Option<String>,
    /// `--open`.
    pub open: bool,
    /// `--baseline`.
    pub baseline: Option<String>,
    /// The history database `--baseline` looks in.
    pub history_dir: Option<PathBuf>,
    /// `--dashboard-linger`.
    pub linger: Linger,
}

impl DashboardSpec {
    /// The flags of `a` (`None` without `--dashboard`); `history_dir` is the
    /// run's `--history`.
    pub(crate) fn from_args(
        a: &DashboardArgs,
        history_dir: Option<&Path>,
    ) -> Result<Option<DashboardSpec>, Failure> {
        DashboardSpec::from_args_env(a, history_dir, |k| std::env::var(k).ok())
    }

    /// [`DashboardSpec::from_args`] with the environment read through `env`.
    fn from_args_env(
        a: &DashboardArgs,
        history_dir: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<DashboardSpec>, Failure> {
        let Some(addr) = a.dashboard.as_deref() else {
            return Ok(None);
        };
        let linger = match a.dashboard_linger.as_deref() {
            Some(v) => Linger::For(
                pado_base::units::parse_duration(v)
                    .map_err(|e| Failure::invalid(format!("--dashboard-linger: {e}")))?,
            ),
            // Someone at a terminal (input and messages both on it) keeps the page
            // until Ctrl-C; a job, a pipe or a test runner is never kept waiting.
            None if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() => {
                Linger::UntilCtrlC
            }
            None => Linger::For(Duration::ZERO),
        };
        // From the environment, the token stays out of the process list (which
        // every user of the machine can read).
        let (token, from) = match &a.dashboard_token {
            Some(t) => (Some(t.clone()), "--dashboard-token"),
            None => (env(TOKEN_ENV).filter(|t| !t.trim().is_empty()), TOKEN_ENV),
        };
        if let Some(t) = &token {
            pado_fleet::access::Token::new(t)
                .map_err(|e| Failure::invalid(format!("{from}: {e}")))?;
        }
        if let Some(b) = &a.baseline {
            let ok = b == "last" || b == "best" || b.parse::<i64>().is_ok_and(|n| n > 0);
            if !ok {
                return Err(Failure::invalid(format!(
                    "--baseline {b}: give `last`, `best` or a run id from `pado history`"
                )));
            }
        }
        Ok(Some(DashboardSpec {
            addr: parse_addr(addr)?,
            token,
            open: a.open,
            baseline: a.baseline.clone(),
            history_dir: history_dir.map(Path::to_path_buf),
            linger,
        }))
    }

    /// The earlier run `--baseline` names, among the recorded runs of the test
    /// `name`: an error before the run starts when there is none.
    pub(crate) fn find_baseline(&self, name: &str) -> Result<Option<Baseline>, Failure> {
        let Some(reference) = &self.baseline else {
            return Ok(None);
        };
        let db = pado_history::db_path(self.history_dir.as_deref())
            .map_err(|e| Failure::invalid(format!("--baseline {reference}: {e}")))?;
        Baseline::resolve(reference, name, &db)
            .map(Some)
            .map_err(|e| Failure::invalid(e.to_string()))
    }

    /// Serve the page of `run` and say where it is (on stderr, even with
    /// `--quiet`: the address is what the flag asked for).
    pub(crate) fn start(
        &self,
        run: Arc<dyn pado_session::LiveRun>,
        info: RunInfo,
        baseline: Option<Baseline>,
    ) -> Result<Dashboard, Failure> {
        let d = Dashboard::start(
            DashboardOptions {
                addr: Some(self.addr),
                token: self.token.clone(),
                open_browser: self.open,
                baseline,
            },
            run,
            info,
        )
        .map_err(|e| Failure::invalid(e.to_string()))?;
        eprintln!("dashboard: {}", d.url());
        if !d.addr().ip().is_loopback() {
            eprintln!(
                "dashboard: other machines can reach it at port {}; control needs the token above (without it the page is read-only)",
                d.addr().port()
            );
        }
        Ok(d)
    }

    /// After the run: keep the page up as asked (Ctrl-C ends the wait).
    pub(crate) fn linger(&self, d: &Dashboard) {
        let until = match self.linger {
            Linger::For(x) if x.is_zero() => return,
            Linger::For(x) => Some(Instant::now() + x),
            Linger::UntilCtrlC => None,
        };
        let asked = crate::signals::requests();
        eprintln!(
            "dashboard: the run has ended; its page stays up at {}{}",
            d.url(),
            if until.is_some() {
                " until --dashboard-linger is over (Ctrl-C to leave now)"
            } else {
                " (Ctrl-C to leave)"
            }
        );
        while crate::signals::requests() == asked && until.is_none_or(|u| Instant::now() < u) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `--dashboard`'s value: `ADDR:PORT`, `localhost:PORT` or a port alone
/// (loopback).
fn parse_addr(v: &str) -> Result<SocketAddr, Failure> {
    let v = v.trim();
    if let Ok(port) = v.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = v.strip_prefix("localhost:") {
        if let Ok(port) = port.parse::<u16>() {
            return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
        }
    }
    v.parse().map_err(|_| {
        Failure::invalid(format!(
            "--dashboard={v}: give ADDR:PORT, e.g. 127.0.0.1:8089 (this machine only) or 0.0.0.0:8089 (other machines too)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_as_a_user_writes_them() {
        let lo = |p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p);
        assert_eq!(parse_addr("8089").unwrap(), lo(8089));
        assert_eq!(parse_addr("localhost:8089").unwrap(), lo(8089));
        assert_eq!(parse_addr("127.0.0.1:0").unwrap(), lo(0));
        assert_eq!(
            parse_addr("0.0.0.0:8089").unwrap(),
            "0.0.0.0:8089".parse().unwrap()
        );
        assert_eq!(
            parse_addr("[::1]:8089").unwrap(),
            "[::1]:8089".parse().unwrap()
        );
        let e = parse_addr("example.com:80").unwrap_err();
        assert!(
            e.message.contains("--dashboard=example.com:80"),
            "{}",
            e.message
        );
    }

    #[test]
    fn bad_tokens_and_baselines_are_refused_before_the_run() {
        let a = DashboardArgs {
            dashboard: Some("127.0.0.1:0".into()),
            dashboard_token: Some("short".into()),
            ..Default::default()
        };
        let e = DashboardSpec::from_args(&a, None).unwrap_err();
        assert!(e.message.contains("--dashboard-token"), "{}", e.message);
        assert!(
            !e.message.contains("short"),
            "the token is never echoed: {}",
            e.message
        );
        let a = DashboardArgs {
            dashboard: Some("127.0.0.1:0".into()),
            baseline: Some("yesterday".into()),
            ..Default::default()
        };
        let e = DashboardSpec::from_args(&a, None).unwrap_err();
        assert!(e.message.contains("--baseline yesterday"), "{}", e.message);
        let none = DashboardArgs::default();
        assert_eq!(DashboardSpec::from_args(&none, None).unwrap(), None);
    }

    #[test]
    fn the_token_may_come_from_the_environment_and_the_flag_wins() {
        let on = DashboardArgs {
            dashboard: Some("127.0.0.1:0".into()),
            ..Default::default()
        };
        let env = |v: &'static str| move |k: &str| (k == TOKEN_ENV).then(|| v.to_string());
        let spec = DashboardSpec::from_args_env(&on, None, env("0123456789abcdef-env"))
            .unwrap()
            .unwrap();
        assert_eq!(spec.token.as_deref(), Some("0123456789abcdef-env"));
        let flag = DashboardArgs {
            dashboard_token: Some("0123456789abcdef-flag".into()),
            ..on.clone()
        };
        let spec = DashboardSpec::from_args_env(&flag, None, env("0123456789abcdef-env"))
            .unwrap()
            .unwrap();
        assert_eq!(spec.token.as_deref(), Some("0123456789abcdef-flag"));
        let e = DashboardSpec::from_args_env(&on, None, env("short")).unwrap_err();
        assert!(e.message.starts_with(TOKEN_ENV), "{}", e.message);
        let spec = DashboardSpec::from_args_env(&on, None, env(" "))
            .unwrap()
            .unwrap();
        assert_eq!(spec.token, None, "an empty variable is unset");
    }
}
