//! The manifests against Kubernetes' own schema (v1.33, strict: an unknown field is
//! an error) and against what the design says they must hold.

mod common;

use std::time::Duration;

use pado_base::names;
use pado_k8s::manifests::{self, with_kind};
use serde_json::{json, Value};

fn validator(kind: &str) -> jsonschema::Validator {
    let text = include_str!("schema/k8s-v1.33-strict.json");
    let mut schema: Value = serde_json::from_str(text).unwrap();
    schema["$ref"] = json!(format!("#/$defs/pado.root.{kind}"));
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(kind: &str, v: &Value) -> Vec<String> {
    validator(kind)
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn now() -> time::OffsetDateTime {
    time::macros::datetime!(2030-01-02 03:00:00 UTC)
}

#[test]
fn job_config_map_and_secret_are_valid_kubernetes_objects() {
    let spec = common::spec("pado-x-abc123");
    let job = with_kind(&manifests::job(&spec, now()));
    let cm = with_kind(&manifests::config_map(&spec));
    let secret = with_kind(&manifests::secret(&spec));
    assert_eq!(errors("Job", &job), Vec::<String>::new());
    assert_eq!(errors("ConfigMap", &cm), Vec::<String>::new());
    assert_eq!(errors("Secret", &secret), Vec::<String>::new());
    let mut typo = secret.clone();
    typo["stringdata"] = json!({"token": "x"});
    assert!(!errors("Secret", &typo).is_empty(), "the schema is strict");
}

#[test]
fn the_token_lives_in_a_secret_the_pods_read_by_reference() {
    let spec = common::spec("pado-x-abc123");
    let secret = with_kind(&manifests::secret(&spec));
    assert_eq!(secret["kind"], "Secret");
    assert_eq!(secret["metadata"]["name"], "pado-x-abc123");
    assert_eq!(secret["metadata"]["namespace"], "loadtest");
    assert_eq!(
        secret["metadata"]["labels"]["pado.dev/test-id"],
        "pado-x-abc123"
    );
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["immutable"], true);
    assert_eq!(secret["stringData"]["token"], common::TOKEN);
    let j = with_kind(&manifests::job(&spec, now()));
    // Nowhere in the Job: not in its arguments, env values or annotations.
    assert!(
        !j.to_string().contains(common::TOKEN),
        "the token leaked into the Job"
    );
    let c = &j["spec"]["template"]["spec"]["containers"][0];
    let env = c["env"].as_array().unwrap();
    let token = env
        .iter()
        .find(|e| e["name"] == manifests::TOKEN_ENV)
        .expect("the token's variable");
    assert!(token.get("value").is_none());
    assert_eq!(
        token["valueFrom"]["secretKeyRef"],
        json!({"name": "pado-x-abc123", "key": "token", "optional": false})
    );
    // The probe needs no token: a TCP connect, not an HTTP request.
    assert_eq!(c["readinessProbe"]["tcpSocket"]["port"], 7070);
    assert!(c["readinessProbe"].get("httpGet").is_none());
}

#[test]
fn the_results_volume_has_a_size_limit() {
    let mut spec = common::spec("pado-x-abc123");
    let size = |spec: &pado_k8s::GeneratorSpec| {
        let j = with_kind(&manifests::job(spec, now()));
        j["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "results")
            .unwrap()["emptyDir"]["sizeLimit"]
            .clone()
    };
    assert_eq!(size(&spec), "1Gi");
    spec.results_size_limit = "250Mi".into();
    assert_eq!(size(&spec), "250Mi");
    spec.check().unwrap();
    use pado_k8s::spec::SpecError;
    for bad in ["", "1GB", "-1Gi", "0", "1e3", "Gi", "1.Gi", "1 Gi"] {
        spec.results_size_limit = bad.into();
        assert_eq!(
            spec.check(),
            Err(SpecError::ResultsSize(bad.into())),
            "{bad:?}"
        );
    }
    for good in ["1Gi", "500Mi", "2G", "1.5Gi", "1073741824", "10k"] {
        spec.results_size_limit = good.into();
        assert_eq!(spec.check(), Ok(()), "{good:?}");
    }
}

#[test]
fn the_schema_check_catches_what_kubernetes_would_refuse() {
    let spec = common::spec("pado-x-abc123");
    let mut job = with_kind(&manifests::job(&spec, now()));
    job["spec"]["completionsMode"] = json!("Indexed"); // a typo: unknown field
    job["spec"]["parallelism"] = json!("3"); // a string, not an integer
    let e = errors("Job", &job);
    assert!(e.iter().any(|e| e.contains("completionsMode")), "{e:?}");
    assert!(e.iter().any(|e| e.contains("/spec/parallelism")), "{e:?}");
    let mut cm = with_kind(&manifests::config_map(&spec));
    cm["binaryData"]["file-2"] = json!(42);
    assert!(!errors("ConfigMap", &cm).is_empty());
}

#[test]
fn the_job_is_indexed_all_at_once_without_retries() {
    let spec = common::spec("pado-x-abc123");
    let j = with_kind(&manifests::job(&spec, now()));
    let s = &j["spec"];
    assert_eq!(j["kind"], "Job");
    assert_eq!(j["apiVersion"], "batch/v1");
    assert_eq!(s["completionMode"], "Indexed");
    assert_eq!(s["completions"], common::N);
    assert_eq!(s["parallelism"], common::N);
    assert_eq!(s["backoffLimit"], 0);
    assert_eq!(s["ttlSecondsAfterFinished"], 600);
    // 4 min 5 s until the start, 600 s run, 30 s graceful stop, 300 s serving, 120 s margin.
    let deadline = s["activeDeadlineSeconds"].as_i64().unwrap();
    assert_eq!(deadline, 246 + 600 + 30 + 300 + 120);
    let pod = &s["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["terminationGracePeriodSeconds"], 60);
    // Started later than the start time: no waiting part, never negative.
    let late = manifests::active_deadline(&spec, now() + time::Duration::hours(1));
    assert_eq!(late, Duration::from_secs(1 + 600 + 30 + 300 + 120));
}

#[test]
fn pods_run_their_segment_at_the_agreed_start() {
    let spec = common::spec("pado-x-abc123");
    let j = with_kind(&manifests::job(&spec, now()));
    let c = &j["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(&args[..2], ["k8s", "generator"]);
    assert_eq!(after("--listen"), "0.0.0.0:7070");
    assert_eq!(after("--results"), "/results/run");
    assert_eq!(after("--"), "run");
    assert_eq!(after("run"), "/scenario/checkout.yaml");
    assert_eq!(after("--segment"), "$(JOB_COMPLETION_INDEX)/3");
    assert_eq!(after("--start-at"), "2030-01-02T03:04:05Z");
    assert_eq!(after("--out"), "/results/run");
    assert_eq!(after("--setup-vars"), "/scenario/.pado-setup-vars.json");
    assert_eq!(*args.last().unwrap(), "--quiet");
    // The variable the args use is defined from the pod's index annotation.
    let env = &c["env"][0];
    assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        env["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(c["ports"][0]["containerPort"], 7070);
    assert_eq!(c["envFrom"][0]["secretRef"]["name"], "checkout-env");
    assert_eq!(c["image"], "ghcr.io/example/pado:0.1.0");
}

#[test]
fn pods_spread_over_nodes_and_are_locked_down() {
    let spec = common::spec("pado-x-abc123");
    let j = with_kind(&manifests::job(&spec, now()));
    let pod = &j["spec"]["template"];
    assert_eq!(
        pod["metadata"]["labels"]["pado.dev/test-id"],
        "pado-x-abc123"
    );
    let term = &pod["spec"]["affinity"]["podAntiAffinity"]
        ["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(term["weight"], 100);
    assert_eq!(
        term["podAffinityTerm"]["labelSelector"]["matchLabels"]["pado.dev/test-id"],
        "pado-x-abc123"
    );
    assert_eq!(
        term["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let c = &pod["spec"]["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["resources"]["requests"]["cpu"], "1");
    assert_eq!(c["resources"]["requests"]["memory"], "512Mi");
    assert_eq!(c["resources"]["limits"]["memory"], "1Gi");
    assert!(c["resources"]["limits"].get("cpu").is_none());
    let mounts = c["volumeMounts"].as_array().unwrap();
    let scenario = mounts.iter().find(|m| m["name"] == "scenario").unwrap();
    assert_eq!(scenario["mountPath"], "/scenario");
    assert_eq!(scenario["readOnly"], true);
    // pado's image holds the binary at /pado (a file): a volume mounted at or
    // under that path cannot be created by the container runtime (a real
    // cluster's runc refuses with "not a directory").
    for m in mounts {
        let path = m["mountPath"].as_str().unwrap();
        assert!(
            path != "/pado" && !path.starts_with("/pado/"),
            "{path} is at or under the image's binary /pado"
        );
    }
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let results = vols.iter().find(|v| v["name"] == "results").unwrap();
    assert_eq!(results["emptyDir"]["sizeLimit"], "1Gi");
}

#[test]
fn files_keep_their_names_and_bytes_through_the_config_map() {
    let spec = common::spec("pado-x-abc123");
    let cm = with_kind(&manifests::config_map(&spec));
    assert_eq!(cm["immutable"], true);
    assert_eq!(cm["data"]["file-0"], "name: checkout\n");
    assert_eq!(cm["data"]["file-1"], "id,이름\n1,김\n");
    // Not UTF-8: base64 in binaryData (ff 00 fe 80).
    assert_eq!(cm["binaryData"]["file-2"], "/wD+gA==");
    assert_eq!(cm["data"]["setup-vars"], r#"{"token":"t"}"#);
    assert_eq!(
        cm["metadata"]["annotations"]["pado.dev/test-name"],
        "결제 부하 테스트"
    );
    let j = with_kind(&manifests::job(&spec, now()));
    let vol = j["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "scenario")
        .unwrap()
        .clone();
    assert_eq!(vol["configMap"]["name"], "pado-x-abc123");
    let items: Vec<(String, String)> = vol["configMap"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["key"].as_str().unwrap().to_string(),
                i["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            ("file-0", "checkout.yaml"),
            ("file-1", "data/사용자.csv"),
            ("file-2", "blob.bin"),
            ("setup-vars", ".pado-setup-vars.json"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn a_hangul_test_name_gives_valid_names_everywhere() {
    let id = names::test_id("결제 부하 테스트", "k3x9qz");
    assert!(names::is_dns1123_label(&id), "{id}");
    let spec = common::spec(&id);
    spec.check().unwrap();
    let j = with_kind(&manifests::job(&spec, now()));
    assert_eq!(j["metadata"]["name"], id.as_str());
    assert_eq!(errors("Job", &j), Vec::<String>::new());
    // Pod names add `-<index>-<5 chars>` to the Job's: still a label.
    assert!(format!("{id}-999-abcde").len() <= 63);
}

#[test]
fn bad_specs_are_refused_naming_what_to_fix() {
    use pado_k8s::spec::SpecError;
    let mut s = common::spec("pado-x-abc123");
    s.generators = 0;
    assert_eq!(s.check(), Err(SpecError::Generators(0)));
    let mut s = common::spec("pado-x-abc123");
    s.data_files[0].path = "../secrets.csv".into();
    assert!(matches!(s.check(), Err(SpecError::Path(p)) if p == "../secrets.csv"));
    let mut s = common::spec("Pado_X");
    assert!(matches!(s.check(), Err(SpecError::TestId(_))));
    s.test_id = "pado-x".into();
    s.data_files[1].bytes = vec![0; 1_100_000];
    assert!(matches!(s.check(), Err(SpecError::TooLarge(_))));
}

#[test]
fn render_prints_the_three_objects_as_yaml_documents() {
    let spec = common::spec("pado-x-abc123");
    let y = manifests::render_yaml(&spec, now()).unwrap();
    let docs: Vec<Value> = y
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0]["kind"], "ConfigMap");
    assert_eq!(docs[1]["kind"], "Secret");
    assert_eq!(docs[1], with_kind(&manifests::secret(&spec)));
    assert_eq!(docs[2]["kind"], "Job");
    assert_eq!(docs[2], with_kind(&manifests::job(&spec, now())));
    // The file holds a secret, and says so above it.
    assert!(
        y.contains(&format!(
            "---\n{}apiVersion: v1\nkind: Secret",
            manifests::SECRET_NOTE
        )) || y.contains(&format!("---\n{}", manifests::SECRET_NOTE)),
        "{y}"
    );
    assert!(y.contains("결제 부하 테스트"), "Hangul kept as text");
}
