//! pado's OCI image, built without a Docker daemon by `scripts/image.sh` from the
//! binary under test (`--binary`: no extra release build in CI), run with podman
//! against the counting test server on the host's loopback (`--network host`).
//! The server's own count is the truth; the result directory the container writes
//! through a volume shows who wrote it (the image's non-root user). Name resolution
//! (`/etc/hosts` through the image's `nsswitch.conf`) and TLS trust (a CA given by
//! `SSL_CERT_FILE`, and none without it) are checked inside the container, and the
//! image saved with `--save` is an OCI archive naming the tag.
//! Skipped with a message when podman, buildah or runc are missing, unless
//! `PADO_E2E_REQUIRE_ALL=1` (`scripts/test.sh` installs them).

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use pado_testkit::{ServerOptions, TestServer};
use serde_json::Value;

use crate::harness::{num, require_or_skip, shared_machine, text, tmp, wait_within, Tmp};

/// The tag the tests build; built again (the old one removed) by every test run, so
/// at most one such image is left in the machine's storage.
const TAG: &str = "localhost/pado:e2e-test";
/// The uid and gid of the image's user (the Dockerfile's `USER`).
const NONROOT: u32 = 65532;
/// A host name only the container's `/etc/hosts` knows (`--add-host`).
const TARGET_HOST: &str = "pado-target.test";

/// `cmd` run to its end within `limit` (a test must not hang on a container), its
/// output read from files (no pipe can fill up and stall it).
fn bounded(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    let dir = tmp("image-cmd");
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let status = wait_within(&mut child, limit)
        .unwrap_or_else(|| panic!("{what} did not end within {limit:?}"));
    Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    }
}

/// The image built once for this test process from the binary under test, or `None`
/// (skipped) when the tools are missing.
fn image() -> Option<&'static str> {
    require_or_skip("buildah", "buildah")?;
    require_or_skip("podman", "podman")?;
    require_or_skip("runc", "runc")?;
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let saved = tmp("image-save");
        let archive = saved.join("pado.oci.tar");
        // The previous test run's image (same tag), so that it is not left dangling.
        let _ = bounded(
            Command::new("podman").args(["rmi", "--force", TAG]),
            Duration::from_secs(60),
            "podman rmi",
        );
        let o = bounded(
            Command::new("bash")
                .arg(root.join("scripts/image.sh"))
                .args(["--binary", env!("CARGO_BIN_EXE_pado"), "--tag", TAG])
                .args(["--load", "podman", "--save"])
                .arg(&archive),
            Duration::from_secs(600),
            "scripts/image.sh",
        );
        if o.status.success() {
            check_oci_archive(&archive);
            Ok(())
        } else {
            Err(format!(
                "scripts/image.sh failed ({}):\n{}{}",
                o.status,
                text(&o.stdout),
                text(&o.stderr)
            ))
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }
    Some(TAG)
}

/// `--save`'s file is an OCI image layout in a tar (what `skopeo`, `podman load` and
/// `ctr import` read): its layout marker, and an index naming the tag.
fn check_oci_archive(archive: &Path) {
    let o = bounded(
        Command::new("tar")
            .arg("-xf")
            .arg(archive)
            .arg("-C")
            .arg(archive.parent().unwrap()),
        Duration::from_secs(60),
        "tar",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = archive.parent().unwrap();
    let layout: Value =
        serde_json::from_slice(&std::fs::read(dir.join("oci-layout")).unwrap()).unwrap();
    assert_eq!(layout["imageLayoutVersion"], "1.0.0");
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index:#}");
    assert_eq!(
        manifests[0]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let name = manifests[0]["annotations"]["org.opencontainers.image.ref.name"]
        .as_str()
        .unwrap_or_default();
    assert!(TAG.ends_with(name) && !name.is_empty(), "{index:#}");
}

/// podman's configuration for these runs: no default ulimits (podman's own exceed
/// the hard limits of some machines: "setrlimit RLIMIT_NOFILE: Operation not
/// permitted").
fn containers_conf(dir: &Path) -> PathBuf {
    let p = dir.join("containers.conf");
    std::fs::write(&p, "[containers]\ndefault_ulimits = []\n").unwrap();
    p
}

/// `podman run` of `image` on the host's network with `dir` mounted at `/out`
/// (writable by the image's user), `extra` podman options, and `args` for `/pado`.
fn podman_run(image: &str, dir: &Tmp, extra: &[&str], args: &[&str]) -> Output {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let _machine = shared_machine();
    bounded(
        Command::new("podman")
            .env("CONTAINERS_CONF", containers_conf(dir))
            // runc: crun refuses a host with cgroups in hybrid mode.
            .args(["--runtime", "runc", "run", "--rm", "--network", "host"])
            .arg("--volume")
            .arg(format!("{}:/out", dir.display()))
            .args(extra)
            .arg(image)
            .args(args),
        Duration::from_secs(180),
        "podman run",
    )
}

fn summary(dir: &Path, o: &Output) -> Value {
    let p = dir.join("summary.json");
    let t = std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\nstdout:\n{}\nstderr:\n{}",
            p.display(),
            text(&o.stdout),
            text(&o.stderr)
        )
    });
    serde_json::from_str(&t).unwrap()
}

#[test]
fn the_image_counts_what_the_server_received() {
    let Some(image) = image() else { return };
    let srv = TestServer::start();
    let dir = tmp("image-count");
    // A name only the container's /etc/hosts resolves, and a Hangul directory name.
    let url = format!("http://{TARGET_HOST}:{}/", srv.addr().port());
    let o = podman_run(
        image,
        &dir,
        &["--add-host", &format!("{TARGET_HOST}:127.0.0.1")],
        &[
            "run",
            "--url",
            &url,
            "--vus",
            "4",
            "--duration",
            "2s",
            "--out",
            "/out/결과",
            "--quiet",
        ],
    );
    let out = dir.join("결과");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = summary(&out, &o);
    let st = srv.stats();
    assert!(st.requests > 20, "{st:?}");
    assert_eq!(num(&s, "requests") as u64, st.requests, "{st:?}");
    assert_eq!(num(&s, "failed"), 0.0);
    assert_eq!(num(&s, "status.200") as u64, st.requests);
    // Written by the image's user, not root.
    let meta = std::fs::metadata(out.join("summary.json")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (NONROOT, NONROOT));
}

#[test]
fn the_image_trusts_a_ca_from_ssl_cert_file_and_none_without() {
    let Some(image) = image() else { return };
    let srv = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let ca = tmp("image-ca");
    std::fs::write(ca.join("ca.pem"), srv.cert_pem().unwrap()).unwrap();
    std::fs::set_permissions(&ca, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mount = format!("{}:/ca:ro", ca.display());
    let url = format!("https://127.0.0.1:{}/", srv.addr().port());
    let args = |out: &'static str| {
        [
            "run",
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "--out",
            out,
            "--quiet",
        ]
        .map(String::from)
    };

    // Without it the server's self-signed certificate is trusted by nothing in the
    // image: every request fails its handshake and none reaches the server.
    let dir = tmp("image-untrusted");
    let a = args("/out/run");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = podman_run(image, &dir, &["--volume", &mount], &a);
    let s = summary(&dir.join("run"), &o);
    assert_eq!(srv.stats().requests, 0, "{}", text(&o.stderr));
    assert!(num(&s, "requests") > 0.0, "{s:#}");
    assert_eq!(num(&s, "failed"), num(&s, "requests"), "{s:#}");

    // With SSL_CERT_FILE naming it, the same run succeeds and is counted.
    let dir = tmp("image-trusted");
    let o = podman_run(
        image,
        &dir,
        &["--volume", &mount, "--env", "SSL_CERT_FILE=/ca/ca.pem"],
        &a,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = summary(&dir.join("run"), &o);
    let st = srv.stats();
    assert!(st.requests > 5, "{st:?}");
    assert_eq!(num(&s, "requests") as u64, st.requests);
    assert_eq!(num(&s, "failed"), 0.0);
}
