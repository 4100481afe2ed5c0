//! What one distributed test is, as the manifests need it: the typed input of
//! [`crate::manifests`] and [`crate::flow`], checked once by [`GeneratorSpec::check`].

use std::time::Duration;

use time::OffsetDateTime;

use pado_base::names;

/// Port the generator serves its result on inside the pod.
pub const DEFAULT_PORT: u16 = 7070;

/// Most bytes a ConfigMap may hold (the API server refuses more than 1 MiB in all;
/// the rest is room for the object's own fields).
pub const MAX_CONFIG_BYTES: usize = 1_000_000;

/// Most generators one test may ask for (a typo guard; Indexed Jobs allow more).
pub const MAX_GENERATORS: u32 = 1000;

/// The default `sizeLimit` of each pod's results emptyDir: an hour of a busy
/// segment's result directory is tens of MB; past the limit the kubelet evicts the
/// pod rather than let one test fill its node's disk.
pub const DEFAULT_RESULTS_SIZE_LIMIT: &str = "1Gi";

/// The run's token: every generator pod requires it on its control endpoints.
pub use pado_fleet::access::Token;

/// A file the generators read: the scenario or one of its data files (the same
/// entry an agent's bundle carries).
pub use pado_fleet::bundle::{is_relative_inside, FileEntry};

/// CPU and memory per generator pod, as Kubernetes quantities (`500m`, `1`, `512Mi`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resources {
    /// CPU the scheduler reserves.
    pub cpu_request: String,
    /// CPU ceiling; `None` by default, because a throttled load generator sends late
    /// and measures its own stalls (its self-check would say so).
    pub cpu_limit: Option<String>,
    /// Memory the scheduler reserves.
    pub memory_request: String,
    /// Memory ceiling (the pod is killed past it).
    pub memory_limit: Option<String>,
}

impl Default for Resources {
    fn default() -> Self {
        Resources {
            cpu_request: "1".into(),
            cpu_limit: None,
            memory_request: "512Mi".into(),
            memory_limit: Some("1Gi".into()),
        }
    }
}

/// One test across `generators` pods.
#[derive(Clone, Debug)]
pub struct GeneratorSpec {
    /// The test's name, for people (labels and annotations keep it).
    pub test_name: String,
    /// The DNS-1123 id naming the Job and ConfigMap and labelling the pods
    /// ([`names::test_id`]).
    pub test_id: String,
    /// Namespace of every object.
    pub namespace: String,
    /// The pado image (its entrypoint is the `pado` binary).
    pub image: String,
    /// `imagePullPolicy`; `None` leaves Kubernetes' default.
    pub image_pull_policy: Option<String>,
    /// How many generators (segments, pods).
    pub generators: u32,
    /// The scenario file (its `path` is only its file name).
    pub scenario: FileEntry,
    /// Data files the scenario reads, relative to it.
    pub data_files: Vec<FileEntry>,
    /// `pado setup --out` variables handed to every segment (`--setup-vars`).
    pub setup_vars: Option<Vec<u8>>,
    /// The agreed start of every segment (`--start-at`).
    pub start_at: OffsetDateTime,
    /// The run's planned length (longest scenario end).
    pub planned: Duration,
    /// The longest graceful stop of the scenarios, after the planned end.
    pub graceful_stop: Duration,
    /// How long a generator keeps its result for the coordinator after its run
    /// before exiting anyway.
    pub serve_timeout: Duration,
    /// CPU and memory per pod.
    pub resources: Resources,
    /// More `pado run` arguments, after the ones the spec sets.
    pub extra_args: Vec<String>,
    /// Port of the generator's result server.
    pub port: u16,
    /// A Secret whose keys become the generators' environment (`{{ env.X }}` in the
    /// scenario): values from the coordinator's environment are never copied into
    /// the cluster.
    pub env_from_secret: Option<String>,
    /// The run's token, kept in a Secret of its own ([`crate::manifests::secret`])
    /// and given to the pods from it: their `/stop`, `/done`, `/result.tar`,
    /// `/live` and `/status` answer only a request that carries it, never another
    /// pod of the cluster. Never in the Job's arguments.
    pub token: Token,
    /// `sizeLimit` of the pods' results emptyDir, a Kubernetes quantity (`1Gi`):
    /// a pod whose result grows past it is evicted, and its segment is named
    /// missing with that reason.
    pub results_size_limit: String,
}

/// A spec the manifests cannot be built from.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// `--generators` out of range.
    #[error("--generators must be between 1 and {MAX_GENERATORS}, not {0}")]
    Generators(u32),
    /// The test id is not a DNS-1123 label.
    #[error("test id `{0}` is not a valid Kubernetes name (lowercase letters, digits and -, at most 48 characters)")]
    TestId(String),
    /// The namespace is not a DNS-1123 label.
    #[error("--namespace `{0}` is not a valid Kubernetes namespace name")]
    Namespace(String),
    /// A file path that would leave the scenario's directory once mounted.
    #[error("data file `{0}` is outside the scenario's directory (absolute or with ..): the generators cannot mount it")]
    Path(String),
    /// Two files at one path.
    #[error("file `{0}` is listed twice")]
    Duplicate(String),
    /// Too much for one ConfigMap.
    #[error("the scenario and its data files are {0} bytes; one ConfigMap holds at most {MAX_CONFIG_BYTES} (put large data in the image or a volume)")]
    TooLarge(usize),
    /// An empty image name.
    #[error("--image is empty")]
    Image,
    /// A size that is not a Kubernetes quantity of bytes.
    #[error("--results-size-limit `{0}` is not a size Kubernetes reads: write a number with an optional unit (Ki, Mi, Gi, Ti, or k, M, G, T), such as 1Gi or 500Mi")]
    ResultsSize(String),
}

impl GeneratorSpec {
    /// Checks what Kubernetes or the generators would refuse later, with the flag or
    /// file to fix.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.generators == 0 || self.generators > MAX_GENERATORS {
            return Err(SpecError::Generators(self.generators));
        }
        if !names::is_dns1123_label(&self.test_id) || self.test_id.len() > names::MAX_TEST_ID {
            return Err(SpecError::TestId(self.test_id.clone()));
        }
        if !names::is_dns1123_label(&self.namespace) {
            return Err(SpecError::Namespace(self.namespace.clone()));
        }
        if self.image.trim().is_empty() {
            return Err(SpecError::Image);
        }
        if !is_byte_quantity(&self.results_size_limit) {
            return Err(SpecError::ResultsSize(self.results_size_limit.clone()));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut total = self.setup_vars.as_ref().map_or(0, Vec::len);
        for f in std::iter::once(&self.scenario).chain(&self.data_files) {
            if !is_relative_inside(&f.path) {
                return Err(SpecError::Path(f.path.clone()));
            }
            if !seen.insert(f.path.as_str()) {
                return Err(SpecError::Duplicate(f.path.clone()));
            }
            total += f.bytes.len();
        }
        if total > MAX_CONFIG_BYTES {
            return Err(SpecError::TooLarge(total));
        }
        Ok(())
    }

    /// The files of the ConfigMap in order: the scenario, then the data files.
    pub fn files(&self) -> impl Iterator<Item = &FileEntry> {
        std::iter::once(&self.scenario).chain(&self.data_files)
    }
}

/// Whether `q` is a positive Kubernetes quantity of bytes as people write them:
/// digits, perhaps a fraction, then nothing or one binary (`Ki`..`Ei`) or decimal
/// (`k`..`E`) suffix. Exponents and signs, which the API also reads, are refused as
/// surely a mistake for a disk size.
pub fn is_byte_quantity(q: &str) -> bool {
    let digits_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, unit) = q.split_at(digits_end);
    let number_ok = !number.is_empty()
        && !number.starts_with('.')
        && !number.ends_with('.')
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| (b'1'..=b'9').contains(&b));
    number_ok
        && matches!(
            unit,
            "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "k" | "M" | "G" | "T" | "P" | "E"
        )
}
