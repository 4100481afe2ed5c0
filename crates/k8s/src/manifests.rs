//! The Kubernetes objects of one test, built as k8s-openapi types from a
//! [`GeneratorSpec`]: a ConfigMap with the scenario and its data files, and an
//! Indexed Job whose pod `i` runs segment `i/N` of the test under the generator
//! wrapper (`pado k8s generator`), which keeps the result for the coordinator.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort,
    EmptyDirVolumeSource, EnvFromSource, EnvVar, EnvVarSource, KeyToPath, ObjectFieldSelector,
    PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, Secret, SecretEnvSource, SecretKeySelector,
    SecurityContext, TCPSocketAction, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use time::OffsetDateTime;

use crate::spec::GeneratorSpec;

/// Label every object and pod of a test carries, valued with its test id.
pub const LABEL_TEST_ID: &str = "pado.dev/test-id";
/// Annotation with the test's name as written (any UTF-8).
pub const ANNOTATION_TEST_NAME: &str = "pado.dev/test-name";
/// The pod annotation the Job controller sets to the pod's completion index.
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Where the scenario and its data files are mounted (read-only).
pub const SCENARIO_DIR: &str = "/scenario";
/// The emptyDir the generator writes its result directory into.
pub const RESULTS_VOLUME_DIR: &str = "/results";
/// The segment's result directory inside the pod.
pub const RUN_OUT: &str = "/results/run";
/// The setup variables' file name in the ConfigMap volume (beside the scenario;
/// a name a scenario's own data file is unlikely to have).
pub const SETUP_VARS_FILE: &str = ".pado-setup-vars.json";
/// The environment variable the generator reads its token from (set from the
/// run's Secret; `pado k8s generator` refuses to start without it).
pub const TOKEN_ENV: &str = "PADO_GENERATOR_TOKEN";
/// The key of the token in the run's Secret.
pub const TOKEN_KEY: &str = "token";
/// The user id the generator runs as (distroless' `nonroot`).
pub const RUN_AS: i64 = 65532;
/// How long a finished Job is kept before Kubernetes deletes it, should the
/// coordinator be gone.
pub const TTL_AFTER_FINISHED_S: i32 = 600;
/// Slack on the Job's deadline beyond start delay, run, graceful stop and serving.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(120);

/// The labels of the test's objects and pods.
pub fn labels(spec: &GeneratorSpec) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "pado".to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            "load-generator".to_string(),
        ),
        (LABEL_TEST_ID.to_string(), spec.test_id.clone()),
    ])
}

/// The label selector that finds the test's pods (`pado.dev/test-id=<id>`).
pub fn pod_selector(spec: &GeneratorSpec) -> String {
    format!("{LABEL_TEST_ID}={}", spec.test_id)
}

fn meta(spec: &GeneratorSpec) -> ObjectMeta {
    ObjectMeta {
        name: Some(spec.test_id.clone()),
        namespace: Some(spec.namespace.clone()),
        labels: Some(labels(spec)),
        annotations: Some(BTreeMap::from([(
            ANNOTATION_TEST_NAME.to_string(),
            spec.test_name.clone(),
        )])),
        ..Default::default()
    }
}

/// The ConfigMap key of the `i`-th file: keys must match `[-._a-zA-Z0-9]+`, file
/// names need not (Hangul, subdirectories), so keys are numbered and the volume's
/// items map each to its path.
fn file_key(i: usize) -> String {
    format!("file-{i}")
}

/// The ConfigMap: every file under a numbered key, UTF-8 files in `data` (readable
/// with kubectl), others in `binaryData`; the setup variables under their own key.
/// Immutable: nothing changes it during a run.
pub fn config_map(spec: &GeneratorSpec) -> ConfigMap {
    let mut data = BTreeMap::new();
    let mut binary = BTreeMap::new();
    let mut put = |key: String, bytes: &[u8]| match std::str::from_utf8(bytes) {
        Ok(s) => {
            data.insert(key, s.to_string());
        }
        Err(_) => {
            binary.insert(key, ByteString(bytes.to_vec()));
        }
    };
    for (i, f) in spec.files().enumerate() {
        put(file_key(i), &f.bytes);
    }
    if let Some(v) = &spec.setup_vars {
        put("setup-vars".into(), v);
    }
    ConfigMap {
        metadata: meta(spec),
        data: (!data.is_empty()).then_some(data),
        binary_data: (!binary.is_empty()).then_some(binary),
        immutable: Some(true),
    }
}

/// The run's Secret, named as the test: its token under [`TOKEN_KEY`], which the
/// pods get as [`TOKEN_ENV`] and require on every request, and which the
/// coordinator sends through the pod proxy. In a Secret, not the Job: whoever may
/// read Jobs and pods in the namespace need not be able to read Secrets.
/// Immutable: nothing changes it during a run.
pub fn secret(spec: &GeneratorSpec) -> Secret {
    Secret {
        metadata: meta(spec),
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([(
            TOKEN_KEY.to_string(),
            spec.token.expose().to_string(),
        )])),
        immutable: Some(true),
        ..Default::default()
    }
}

/// The arguments of the generator container: the wrapper, then `pado run` of
/// segment `$(JOB_COMPLETION_INDEX)/N` (Kubernetes expands `$(VAR)` from the
/// container's env) starting at the agreed instant, writing to [`RUN_OUT`].
pub fn generator_args(spec: &GeneratorSpec) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "k8s".into(),
        "generator".into(),
        "--listen".into(),
        format!("0.0.0.0:{}", spec.port),
        "--results".into(),
        RUN_OUT.into(),
        "--serve-timeout".into(),
        format!("{}s", spec.serve_timeout.as_secs()),
        "--".into(),
        "run".into(),
        format!("{SCENARIO_DIR}/{}", spec.scenario.path),
        "--segment".into(),
        format!("$(JOB_COMPLETION_INDEX)/{}", spec.generators),
        "--start-at".into(),
        pado_base::stamp::rfc3339(spec.start_at),
        "--out".into(),
        RUN_OUT.into(),
    ];
    if spec.setup_vars.is_some() {
        a.push("--setup-vars".into());
        a.push(format!("{SCENARIO_DIR}/{SETUP_VARS_FILE}"));
    }
    a.extend(spec.extra_args.iter().cloned());
    a
}

/// The Job's `activeDeadlineSeconds` when created at `now`: the wait for the
/// start, the planned run, its graceful stop, the time the generator keeps its result
/// and a margin, so a stuck pod cannot run (and cost) forever.
pub fn active_deadline(spec: &GeneratorSpec, now: OffsetDateTime) -> Duration {
    let wait = (spec.start_at - now).max(time::Duration::ZERO);
    Duration::from_secs(wait.whole_seconds().max(0) as u64 + 1)
        + spec.planned
        + spec.graceful_stop
        + spec.serve_timeout
        + DEADLINE_MARGIN
}

fn quantity(q: &str) -> Quantity {
    Quantity(q.to_string())
}

fn resources(spec: &GeneratorSpec) -> ResourceRequirements {
    let r = &spec.resources;
    let requests = BTreeMap::from([
        ("cpu".to_string(), quantity(&r.cpu_request)),
        ("memory".to_string(), quantity(&r.memory_request)),
    ]);
    let mut limits = BTreeMap::new();
    if let Some(c) = &r.cpu_limit {
        limits.insert("cpu".to_string(), quantity(c));
    }
    if let Some(m) = &r.memory_limit {
        limits.insert("memory".to_string(), quantity(m));
    }
    ResourceRequirements {
        requests: Some(requests),
        limits: (!limits.is_empty()).then_some(limits),
        ..Default::default()
    }
}

fn container(spec: &GeneratorSpec) -> Container {
    Container {
        name: "pado".into(),
        image: Some(spec.image.clone()),
        image_pull_policy: spec.image_pull_policy.clone(),
        args: Some(generator_args(spec)),
        working_dir: Some(SCENARIO_DIR.into()),
        env: Some(vec![
            EnvVar {
                // The Job controller sets it too; declared here so
                // `$(JOB_COMPLETION_INDEX)` in the args is guaranteed to expand, from
                // the pod's own annotation.
                name: "JOB_COMPLETION_INDEX".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                        api_version: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            EnvVar {
                name: TOKEN_ENV.into(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: spec.test_id.clone(),
                        key: TOKEN_KEY.into(),
                        optional: Some(false),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ]),
        env_from: spec.env_from_secret.as_ref().map(|name| {
            vec![EnvFromSource {
                secret_ref: Some(SecretEnvSource {
                    name: name.clone(),
                    optional: Some(false),
                }),
                ..Default::default()
            }]
        }),
        ports: Some(vec![ContainerPort {
            name: Some("results".into()),
            container_port: i32::from(spec.port),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        // A TCP probe: every HTTP endpoint needs the token, which a probe's
        // headers would have to spell out in the Job.
        readiness_probe: Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(spec.port)),
                host: None,
            }),
            period_seconds: Some(5),
            ..Default::default()
        }),
        resources: Some(resources(spec)),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS),
            run_as_group: Some(RUN_AS),
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "scenario".into(),
                mount_path: SCENARIO_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "results".into(),
                mount_path: RESULTS_VOLUME_DIR.into(),
                ..Default::default()
            },
            VolumeMount {
                name: "tmp".into(),
                mount_path: "/tmp".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    }
}

fn volumes(spec: &GeneratorSpec) -> Vec<Volume> {
    let mut items: Vec<KeyToPath> = spec
        .files()
        .enumerate()
        .map(|(i, f)| KeyToPath {
            key: file_key(i),
            path: f.path.clone(),
            mode: None,
        })
        .collect();
    if spec.setup_vars.is_some() {
        items.push(KeyToPath {
            key: "setup-vars".into(),
            path: SETUP_VARS_FILE.into(),
            mode: None,
        });
    }
    vec![
        Volume {
            name: "scenario".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: spec.test_id.clone(),
                items: Some(items),
                default_mode: Some(0o444),
                optional: Some(false),
            }),
            ..Default::default()
        },
        Volume {
            name: "results".into(),
            // Past it the kubelet evicts the pod (its segment is named missing):
            // one test never fills its node's disk.
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(quantity(&spec.results_size_limit)),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "tmp".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(quantity("64Mi")),
                ..Default::default()
            }),
            ..Default::default()
        },
    ]
}

/// Prefer nodes without another generator of this test: generators sharing a node
/// share its CPU and network and measure each other. Preferred, not required, so a
/// test with more generators than nodes still runs.
fn anti_affinity(spec: &GeneratorSpec) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                LABEL_TEST_ID.to_string(),
                                spec.test_id.clone(),
                            )])),
                            match_expressions: None,
                        }),
                        topology_key: "kubernetes.io/hostname".into(),
                        ..Default::default()
                    },
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    }
}

/// The Indexed Job: N completions, all at once, no retries (a re-run segment
/// would send its share twice), pods never restarted, a deadline, and removal
/// after it finishes.
pub fn job(spec: &GeneratorSpec, now: OffsetDateTime) -> Job {
    let n = i32::try_from(spec.generators).unwrap_or(i32::MAX);
    let grace = spec.graceful_stop.as_secs() as i64 + 30;
    Job {
        metadata: meta(spec),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit: Some(0),
            ttl_seconds_after_finished: Some(TTL_AFTER_FINISHED_S),
            active_deadline_seconds: Some(active_deadline(spec, now).as_secs() as i64),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(spec)),
                    annotations: Some(BTreeMap::from([(
                        ANNOTATION_TEST_NAME.to_string(),
                        spec.test_name.clone(),
                    )])),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    containers: vec![container(spec)],
                    volumes: Some(volumes(spec)),
                    affinity: Some(anti_affinity(spec)),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    // Time for a stopped run's graceful stop and for the coordinator to
                    // fetch what it wrote (see docs/kubernetes.md, Ctrl-C).
                    termination_grace_period_seconds: Some(grace),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(RUN_AS),
                        run_as_group: Some(RUN_AS),
                        fs_group: Some(RUN_AS),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            localhost_profile: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// The comment above the rendered Secret: the file holds the run's token.
pub const SECRET_NOTE: &str = "# This Secret holds the generators' token, freshly generated: keep this file\n# as you keep other secrets, and render again for each run.\n";

/// The manifests as multi-document YAML (ConfigMap, Secret, then Job), as
/// `pado k8s render` prints them for `kubectl apply -f -`. The Secret carries the
/// spec's token in clear (`stringData`), with a comment saying so.
pub fn render_yaml(
    spec: &GeneratorSpec,
    now: OffsetDateTime,
) -> Result<String, serde_yaml_ng::Error> {
    let cm = serde_yaml_ng::to_string(&with_kind(&config_map(spec)))?;
    let secret = serde_yaml_ng::to_string(&with_kind(&secret(spec)))?;
    let job = serde_yaml_ng::to_string(&with_kind(&job(spec, now)))?;
    Ok(format!("---\n{cm}---\n{SECRET_NOTE}{secret}---\n{job}"))
}

/// An object as JSON with its `apiVersion` and `kind` (k8s-openapi's `Serialize`
/// writes them for top-level resources; checked here so the output never lacks them).
pub fn with_kind<K>(obj: &K) -> serde_json::Value
where
    K: k8s_openapi::Resource + serde::Serialize,
{
    let mut v = serde_json::to_value(obj).unwrap_or(serde_json::Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), K::API_VERSION.into());
        m.insert("kind".into(), K::KIND.into());
    }
    v
}
