//! Reaching the cluster: the kube client from the kubeconfig (or the in-cluster
//! service account) as `kubectl` would find it, with an optional file and context.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Why the cluster cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable configuration.
    #[error("no Kubernetes configuration ({0}); set KUBECONFIG, pass --kubeconfig, or run inside a cluster")]
    Infer(String),
    /// The given kubeconfig cannot be read or used.
    #[error("{path}: {error}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What is wrong.
        error: String,
    },
    /// The client cannot be built (TLS settings).
    #[error("cannot build the Kubernetes client: {0}")]
    Client(kube::Error),
}

/// The clients a run uses, both from one configuration.
#[derive(Clone)]
pub struct Clients {
    /// For the API's objects (Job, ConfigMap, pods, logs): retries 429, 503 and
    /// 504 as kube does.
    pub api: Client,
    /// For the generators through the pod proxy (live feed, stop, status, result):
    /// no retries, since a generator not serving yet answers 503 through the proxy
    /// and the coordinator's loops ask again anyway.
    pub proxy: Client,
}

impl Clients {
    /// Both clients from `config`.
    pub fn from_config(config: Config) -> Result<Clients, ClusterError> {
        let mut once = config.clone();
        once.default_retry = false;
        Ok(Clients {
            api: Client::try_from(config).map_err(ClusterError::Client)?,
            proxy: Client::try_from(once).map_err(ClusterError::Client)?,
        })
    }
}

/// The clients and the namespace of the chosen context (`default` without one).
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(Clients, String), ClusterError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(p) => {
            let bad = |e: &dyn std::fmt::Display| ClusterError::Kubeconfig {
                path: p.display().to_string(),
                error: e.to_string(),
            };
            let kc = Kubeconfig::read_from(p).map_err(|e| bad(&e))?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| bad(&e))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ClusterError::Infer(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| ClusterError::Infer(e.to_string()))?,
    };
    let namespace = config.default_namespace.clone();
    Ok((Clients::from_config(config)?, namespace))
}
