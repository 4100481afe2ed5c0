//! A spec shared by the integration tests: Hangul test name and data file, a binary
//! file, setup variables.

#![allow(dead_code, unreachable_pub)]

pub mod mock;

use std::time::Duration;

use pado_k8s::{FileEntry, GeneratorSpec, Resources};

pub const N: u32 = 3;

/// The run's token in these specs.
pub const TOKEN: &str = "5ec2e7-70ken-0f-7he-run-a1b2c3d4e5f6";

pub fn spec(test_id: &str) -> GeneratorSpec {
    GeneratorSpec {
        test_name: "결제 부하 테스트".into(),
        test_id: test_id.into(),
        namespace: "loadtest".into(),
        image: "ghcr.io/example/pado:0.1.0".into(),
        image_pull_policy: None,
        generators: N,
        scenario: FileEntry {
            path: "checkout.yaml".into(),
            bytes: b"name: checkout\n".to_vec(),
        },
        data_files: vec![
            FileEntry {
                path: "data/사용자.csv".into(),
                bytes: "id,이름\n1,김\n".as_bytes().to_vec(),
            },
            FileEntry {
                path: "blob.bin".into(),
                bytes: vec![0xff, 0x00, 0xfe, 0x80],
            },
        ],
        setup_vars: Some(br#"{"token":"t"}"#.to_vec()),
        start_at: time::macros::datetime!(2030-01-02 03:04:05 UTC),
        planned: Duration::from_secs(600),
        graceful_stop: Duration::from_secs(30),
        serve_timeout: Duration::from_secs(300),
        resources: Resources::default(),
        extra_args: vec!["--quiet".into()],
        port: 7070,
        env_from_secret: Some("checkout-env".into()),
        token: pado_k8s::spec::Token::new(TOKEN).unwrap(),
        results_size_limit: "1Gi".into(),
    }
}
