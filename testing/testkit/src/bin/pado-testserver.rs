//! `pado-testserver`: the test server as a process, for demos and for tests
//! that drive pado from outside Rust.
//!
//! It only ever listens on 127.0.0.1 and always stops by itself (after
//! `--exit-after` seconds), so a forgotten instance cannot linger.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use pado_testkit::{ServerOptions, TestServer};

const USAGE: &str = "\
usage: pado-testserver [options]
  --port N              port on 127.0.0.1 (default 0: any free port)
  --host H              only loopback is allowed (127.0.0.1 / localhost)
  --tls                 serve HTTPS with a fresh self-signed certificate
  --cert-out FILE       with --tls: write the certificate (PEM) there
  --exit-after SECS     stop after this long (default 600)
  --stats FILE          write the final stats as JSON on exit
  --stall-period-ms N   /stall cycle length (default 5000)
  --stall-ms N          /stall window length (default 1000)
  --record-limit N      requests to keep records of (default 200000)";

struct Args {
    port: u16,
    opts: ServerOptions,
    exit_after: Duration,
    stats: Option<String>,
    cert_out: Option<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut out = Args {
        port: 0,
        opts: ServerOptions::default(),
        exit_after: Duration::from_secs(600),
        stats: None,
        cert_out: None,
    };
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args.next().ok_or_else(|| format!("{flag} needs a value")),
            }
        };
        let num = |v: String| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--port" => {
                let v = value()?;
                out.port = v.parse().map_err(|_| format!("--port: bad port: {v}"))?;
            }
            "--host" => {
                let v = value()?;
                if !matches!(v.as_str(), "127.0.0.1" | "localhost") {
                    return Err(format!(
                        "--host {v}: refused, the test server only listens on 127.0.0.1"
                    ));
                }
            }
            "--tls" => out.opts.tls = true,
            "--cert-out" => out.cert_out = Some(value()?),
            "--exit-after" => out.exit_after = Duration::from_secs(num(value()?)?),
            "--stats" => out.stats = Some(value()?),
            "--stall-period-ms" => out.opts.stall_period = Duration::from_millis(num(value()?)?),
            "--stall-ms" => out.opts.stall_len = Duration::from_millis(num(value()?)?),
            "--record-limit" => {
                out.opts.record_limit = usize::try_from(num(value()?)?).unwrap_or(usize::MAX)
            }
            _ => return Err(format!("unknown argument: {arg}")),
        }
    }
    if out.cert_out.is_some() && !out.opts.tls {
        return Err("--cert-out needs --tls".to_string());
    }
    Ok(Some(out))
}

/// SIGINT and SIGTERM, registered at once (not on first poll), so that a
/// signal arriving any time after start-up stops the server cleanly.
#[cfg(unix)]
struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

#[cfg(unix)]
impl Signals {
    /// Must run inside the runtime's context.
    fn register() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    async fn wait(mut self, exit_after: Duration) {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.int) => {}
            _ = recv(&mut self.term) => {}
            _ = tokio::time::sleep(exit_after) => {}
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn register() -> Signals {
        Signals
    }

    async fn wait(self, exit_after: Duration) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = tokio::time::sleep(exit_after) => {}
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pado-testserver: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The signal handlers go in before the server exists, so a signal sent
    // right after the "listening" line cannot kill the process uncleanly.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pado-testserver: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let signals = {
        let _context = runtime.enter();
        Signals::register()
    };
    let server = match TestServer::try_start_on(args.port, args.opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "pado-testserver: cannot listen on 127.0.0.1:{}: {e}",
                args.port
            );
            return ExitCode::FAILURE;
        }
    };
    if let (Some(path), Some(pem)) = (&args.cert_out, server.cert_pem()) {
        if let Err(e) = std::fs::write(path, pem) {
            eprintln!("pado-testserver: cannot write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "listening on {}", server.base_url());
        let _ = stdout.flush();
    }
    runtime.block_on(signals.wait(args.exit_after));
    let stats = server.shutdown_with_stats();
    if let Some(path) = &args.stats {
        if let Err(e) = std::fs::write(path, stats.to_json() + "\n") {
            eprintln!("pado-testserver: cannot write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags() {
        let a = parse(&[
            "--port",
            "8080",
            "--tls",
            "--exit-after=5",
            "--stall-ms",
            "200",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.port, 8080);
        assert!(a.opts.tls);
        assert_eq!(a.exit_after, Duration::from_secs(5));
        assert_eq!(a.opts.stall_len, Duration::from_millis(200));
        assert!(parse(&["--host", "0.0.0.0"]).is_err());
        assert!(parse(&["--host", "localhost"]).is_ok());
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--port", "99999"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--help"]).unwrap().is_none());
    }
}
