//! The optional parts of pado (cargo features) this binary was built with. A lean
//! build (`cargo build --no-default-features`, what `scripts/demo.sh` builds for
//! `pado demo`) leaves the heavy parts a first run does not need out, to build in
//! about 70% of the CPU time. Their commands stay in `--help`; run, they say what is missing
//! and the command that builds it in, not clap's "unrecognized subcommand".

use crate::args::K8sCommand;
use crate::exit::Failure;

/// `pado --version`: the version, and for a lean build the parts it lacks, so a
/// user holding two binaries can tell which one this is.
#[cfg(feature = "k8s")]
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `pado --version`: the version, and for a lean build the parts it lacks, so a
/// user holding two binaries can tell which one this is.
#[cfg(not(feature = "k8s"))]
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (lean build, without `pado k8s`; `cargo install --path .` builds every part)"
);

/// A part of pado a build may leave out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    /// The cargo feature that builds it in.
    pub feature: &'static str,
    /// Its command, as the user types it.
    pub command: &'static str,
    /// What it is for, in the user's words.
    pub what: &'static str,
}

/// `pado k8s`: kube-rs, k8s-openapi and hyper, the largest part of a cold build.
// A build with it uses it only in the tests.
#[cfg_attr(feature = "k8s", allow(dead_code))]
pub(crate) const K8S: Part = Part {
    feature: "k8s",
    command: "pado k8s",
    what: "tests on Kubernetes",
};

impl Part {
    /// The error of a command whose part this binary was built without: what is
    /// missing, why, and how to get a pado that has it (invalid usage, exit 2).
    // Only a lean build calls it outside the tests.
    #[cfg_attr(feature = "k8s", allow(dead_code))]
    pub(crate) fn left_out(&self) -> Failure {
        Failure::invalid(format!(
            "`{}` ({}) is not in this pado: it was built without the `{}` feature, as \
             scripts/demo.sh builds it for the demo. Build every part with \
             `cargo install --path .` (or `cargo build --release`, then target/release/pado) \
             in pado's source directory; it reuses what the lean build compiled",
            self.command, self.what, self.feature
        ))
    }
}

/// `pado k8s ...`, or in a build without it the message that says so.
pub(crate) fn k8s(what: &K8sCommand) -> Result<i32, Failure> {
    #[cfg(feature = "k8s")]
    return crate::k8s_cmd::command(what);
    #[cfg(not(feature = "k8s"))]
    {
        let _ = what;
        Err(K8S.left_out())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pado k8s render` of a scenario that does not exist: a build with `pado k8s`
    /// gets as far as reading the file, a lean one stops at the message.
    #[test]
    fn pado_k8s_runs_exactly_when_it_is_built_in() {
        let cli = <crate::args::Cli as clap::Parser>::try_parse_from([
            "pado",
            "k8s",
            "render",
            "no-such-scenario-파도.yaml",
            "-n",
            "2",
        ])
        .expect("the command parses in every build");
        let crate::args::Command::K8s { what } = &cli.command else {
            panic!("not `pado k8s`: {:?}", cli.command);
        };
        let f = k8s(what).expect_err("the scenario does not exist");
        let left_out = f.message.contains("is not in this pado");
        assert_eq!(left_out, cfg!(not(feature = "k8s")), "{}", f.message);
        assert_eq!(
            f.message.contains("no-such-scenario-파도.yaml"),
            cfg!(feature = "k8s"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_left_out_part_names_its_command_feature_and_the_full_build() {
        let f = K8S.left_out();
        assert_eq!(f.code, crate::exit::INVALID);
        for needed in ["`pado k8s`", "`k8s` feature", "cargo install --path ."] {
            assert!(f.message.contains(needed), "{needed} in {}", f.message);
        }
    }

    #[test]
    fn the_version_says_whether_this_is_a_lean_build() {
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")));
        assert_eq!(VERSION.contains("lean build"), cfg!(not(feature = "k8s")));
    }
}
