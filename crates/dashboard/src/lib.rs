//! The live dashboard of a run: a page served by pado itself (no CDN: the page and
//! its scripts are compiled in, [`assets`]), and the JSON API it and CI scripts
//! speak (`docs/dashboard.md`): every closed second from second 0, the run's state
//! (thresholds judged live, failures, changes of the load, generators), a stream of
//! both, control of the load, an earlier run to compare with, and the result files
//! once the run has ended.
//!
//! Start reading at [`Dashboard::start`]: it binds the address, starts the thread
//! that keeps every closed second (`feed` into the [`store`]) and the HTTP server
//! (`server`, `routes`, `stream`, `control`), which judges every request's head
//! before reading a byte of its body ([`access`]).
//!
//! Safety: loopback by default; a control call needs the dashboard's token
//! (`Authorization: Bearer`), compared in constant time; a browser request from
//! another origin, or naming another host (DNS rebinding), is refused; the page
//! shows only the figures and names pado writes to the result directory, which
//! never hold a secret's value.

pub mod access;
mod assets;
pub mod baseline;
mod control;
mod feed;
mod files;
mod hint;
pub mod info;
mod routes;
pub mod second;
mod server;
mod state;
pub mod store;
mod stream;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use pado_fleet::access::Token;
use pado_session::LiveRun;

pub use baseline::Baseline;
pub use info::RunInfo;

/// How the dashboard is served.
#[derive(Clone, Debug, Default)]
pub struct DashboardOptions {
    /// Where to listen (`None`: 127.0.0.1 on a free port). Any address but a
    /// loopback one lets other machines reach the page.
    pub addr: Option<SocketAddr>,
    /// The token control calls must carry (`None`: one is generated and shown in
    /// [`Dashboard::url`]). At least 16 visible ASCII characters.
    pub token: Option<String>,
    /// Open the page in the user's browser (`xdg-open`, `open`); a failure to is
    /// not an error.
    pub open_browser: bool,
    /// An earlier run of the same test drawn beside this one.
    pub baseline: Option<Baseline>,
}

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// The address could not be listened on.
    #[error("--dashboard {addr}: cannot listen there: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The token given is not one.
    #[error("--dashboard-token: {0}")]
    Token(#[from] pado_fleet::access::TokenError),
    /// The earlier run to compare with could not be found or read.
    #[error("--baseline {reference}: {why}")]
    Baseline {
        /// What the user gave.
        reference: String,
        /// Why it could not be used.
        why: String,
    },
    /// A thread could not be started.
    #[error("the dashboard could not start: {0}")]
    Start(std::io::Error),
}

/// A running dashboard (see the module's documentation). Dropping it stops the
/// server.
pub struct Dashboard {
    shared: Arc<server::Shared>,
    url: String,
    _server: pado_h1server::ServerThread,
}

impl Dashboard {
    /// Serve the dashboard of `run`, described by `info`. Call it before the run's
    /// second 0 closes (right after the run started): the page keeps every second
    /// from the one it first sees.
    pub fn start(
        opts: DashboardOptions,
        run: Arc<dyn LiveRun>,
        info: RunInfo,
    ) -> Result<Dashboard, DashboardError> {
        let token = match &opts.token {
            Some(t) => Token::new(t)?,
            None => Token::generate()?,
        };
        let want = opts
            .addr
            .unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0));
        let listener = std::net::TcpListener::bind(want)
            .map_err(|source| DashboardError::Bind { addr: want, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| DashboardError::Bind { addr: want, source })?;
        let shared = Arc::new(server::Shared::new(run, info, token, opts.baseline, addr));
        feed::start(shared.clone()).map_err(DashboardError::Start)?;
        hint::start(shared.clone()).map_err(DashboardError::Start)?;
        let server = server::serve(listener, shared.clone()).map_err(DashboardError::Start)?;
        let url = format!(
            "http://{}/#token={}",
            shown_addr(addr),
            shared.token.expose()
        );
        if opts.open_browser {
            open_browser(&url);
        }
        Ok(Dashboard {
            shared,
            url,
            _server: server,
        })
    }

    /// The page's address, with the token in its fragment (`#token=…`: a fragment
    /// never leaves the browser, so it is in no server's log).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The run has ended and its result directory is written: the page shows the
    /// final summary and offers the files for download.
    pub fn finished(&self, result_dir: &Path) {
        self.shared.finished(result_dir);
    }
}

/// The address as a URL shows it: a wildcard bind is reached on loopback from here.
fn shown_addr(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        let ip = match addr.ip() {
            IpAddr::V4(_) => "127.0.0.1".to_string(),
            IpAddr::V6(_) => "[::1]".to_string(),
        };
        return format!("{ip}:{}", addr.port());
    }
    addr.to_string()
}

/// Ask the desktop to open `url`; nothing happens where there is none.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
