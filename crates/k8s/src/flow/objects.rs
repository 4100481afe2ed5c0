//! The test's objects in the cluster (the Job, its token's Secret and the
//! ConfigMap of its files): created in an order that lets the Job's TTL take the
//! rest with it, deleted on every way out; and what the collect loop asks of a
//! generator pod through the API server (its status, its result, its log).

use std::time::Duration;

use futures_util::AsyncReadExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use kube::Client;

use super::FlowError;
use crate::cluster::Clients;
use crate::live::{PodLink, PodSteering, Shared};
use crate::manifests;
use crate::spec::GeneratorSpec;
use pado_fleet::access::TOKEN_HEADER;
use pado_fleet::archive;
use pado_fleet::flow::Say;

/// The test's API handles.
pub(super) struct Objects {
    /// For the pod proxy (no retries).
    proxy: Client,
    namespace: String,
    name: String,
    /// The run's token, sent to the pods as `X-Pado-Token`.
    token: pado_fleet::access::Token,
    jobs: Api<Job>,
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
    pub(super) pods: Api<Pod>,
}

impl Objects {
    pub(super) fn new(clients: Clients, spec: &GeneratorSpec) -> Objects {
        let client = clients.api;
        Objects {
            jobs: Api::namespaced(client.clone(), &spec.namespace),
            config_maps: Api::namespaced(client.clone(), &spec.namespace),
            secrets: Api::namespaced(client.clone(), &spec.namespace),
            pods: Api::namespaced(client, &spec.namespace),
            token: spec.token.clone(),
            proxy: clients.proxy,
            namespace: spec.namespace.clone(),
            name: spec.test_id.clone(),
        }
    }

    /// The Job first, then the Secret and the ConfigMap owned by it: should the
    /// coordinator vanish, the Job's TTL deletes them with it. Pods wait for the
    /// token's Secret and the volume's ConfigMap, so the order costs nothing.
    pub(super) async fn create(&self, spec: &GeneratorSpec, say: &Say) -> Result<(), FlowError> {
        let pp = PostParams {
            field_manager: Some("pado".into()),
            ..Default::default()
        };
        let job = manifests::job(spec, time::OffsetDateTime::now_utc());
        let created = self
            .jobs
            .create(&pp, &job)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("Job {}/{}", self.namespace, self.name),
                source,
            })?;
        let owner = created.metadata.uid.map(|uid| {
            vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: self.name.clone(),
                uid,
                controller: None,
                block_owner_deletion: None,
            }]
        });
        let mut secret = manifests::secret(spec);
        secret.metadata.owner_references = owner.clone();
        self.secrets
            .create(&pp, &secret)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("Secret {}/{}", self.namespace, self.name),
                source,
            })?;
        let mut cm = manifests::config_map(spec);
        cm.metadata.owner_references = owner;
        self.config_maps
            .create(&pp, &cm)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("ConfigMap {}/{}", self.namespace, self.name),
                source,
            })?;
        say(&format!(
            "created Job, Secret and ConfigMap {}/{}: {} generators starting at {}",
            self.namespace,
            self.name,
            spec.generators,
            pado_base::stamp::rfc3339(spec.start_at)
        ));
        Ok(())
    }

    /// Deletes the Job (its pods with it, in the background) so generators stop.
    pub(super) async fn delete_job(&self) -> Result<(), kube::Error> {
        gone(&self.jobs, &self.name, &DeleteParams::background()).await
    }

    /// Deletes the three objects; what is already gone is fine, what cannot be
    /// deleted is said with the command that would.
    pub(super) async fn cleanup(&self, say: &Say) {
        let (ns, name) = (&self.namespace, &self.name);
        let dp = DeleteParams::default();
        let results = [
            ("Job", "job", self.delete_job().await),
            (
                "ConfigMap",
                "configmap",
                gone(&self.config_maps, name, &dp).await,
            ),
            ("Secret", "secret", gone(&self.secrets, name, &dp).await),
        ];
        for (kind, cmd, r) in results {
            if let Err(e) = r {
                say(&format!(
                    "warning: could not delete {kind} {ns}/{name} ({e}); delete it with `kubectl -n {ns} delete {cmd} {name}`"
                ));
            }
        }
        say(&format!("deleted Job, Secret and ConfigMap {ns}/{name}"));
    }

    /// Segment `index`'s pod as the live loop reaches it (feed and stop).
    pub(super) fn link(&self, port: u16, index: usize, shared: Shared) -> PodLink {
        PodLink::new(
            self.proxy.clone(),
            &self.namespace,
            port,
            index,
            shared,
            self.token.clone(),
        )
    }

    /// Let `steering` reach this run's pods (their `/control`).
    pub(super) fn steer(&self, steering: &PodSteering, port: u16, shared: Shared) {
        steering.attach(
            self.proxy.clone(),
            &self.namespace,
            port,
            self.token.clone(),
            shared,
        );
    }

    fn proxy_path(&self, pod: &str, port: u16, what: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{pod}:{port}/proxy/{what}",
            self.namespace
        )
    }

    /// The generator's `/status` through the pod proxy: `Some(exit code)` once its run
    /// is over, `None` while running or not answering yet.
    pub(super) async fn status(&self, pod: &str, port: u16) -> Option<i32> {
        let req = http::Request::get(self.proxy_path(pod, port, "status"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
            .ok()?;
        let text = tokio::time::timeout(crate::live::REQUEST_TIMEOUT, self.proxy.request_text(req))
            .await
            .ok()?
            .ok()?;
        match pado_fleet::status::Status::parse(text.as_bytes()).ok()? {
            pado_fleet::status::Status::Done { exit_code, .. } => Some(exit_code),
            _ => None,
        }
    }

    /// Fetches the segment's tar into `dest`, then tells the generator it may exit.
    pub(super) async fn fetch(
        &self,
        pod: &str,
        port: u16,
        dest: &std::path::Path,
        max: u64,
    ) -> Result<archive::Unpacked, String> {
        let req = http::Request::get(self.proxy_path(pod, port, "result.tar"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let stream = self
            .proxy
            .request_stream(req)
            .await
            .map_err(|e| format!("fetching its result failed: {e}"))?;
        let mut bytes = Vec::new();
        stream
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("fetching its result failed: {e}"))?;
        if bytes.len() as u64 > max {
            return Err(format!("its result is larger than {max} bytes"));
        }
        let got = archive::unpack(&bytes[..], dest, max)
            .map_err(|e| format!("its result could not be unpacked: {e}"))?;
        if let Ok(req) = http::Request::post(self.proxy_path(pod, port, "done"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
        {
            // The generator exits after its timeout anyway.
            let _ =
                tokio::time::timeout(crate::live::REQUEST_TIMEOUT, self.proxy.request_text(req))
                    .await;
        }
        Ok(got)
    }

    /// Says the last lines of a pod's log, prefixed with its segment: what a
    /// failed generator said before it failed.
    pub(super) async fn say_log_tail(&self, pod: &str, prefix: &str, lines: i64, say: &Say) {
        if lines <= 0 {
            return;
        }
        let lp = LogParams {
            container: Some("pado".into()),
            tail_lines: Some(lines),
            ..Default::default()
        };
        match tokio::time::timeout(Duration::from_secs(10), self.pods.logs(pod, &lp)).await {
            Ok(Ok(text)) if !text.trim().is_empty() => {
                say(&format!("{prefix} the last lines of pod {pod}'s log:"));
                for line in text.lines() {
                    // The pod's output is its text: no escape sequence reaches the terminal.
                    say(&format!(
                        "{prefix} {}",
                        pado_base::text::terminal_safe(line)
                    ));
                }
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => say(&format!("{prefix} its log could not be read: {e}")),
            Err(_) => say(&format!("{prefix} its log could not be read in 10 s")),
        }
    }
}

/// Deletes object `name`; one already gone is fine.
async fn gone<K>(api: &Api<K>, name: &str, dp: &DeleteParams) -> Result<(), kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
