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

/// The client and the namespace of the chosen context (`default` without one).
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(Client, String), ClusterError> {
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
    let client = Client::try_from(config).map_err(ClusterError::Client)?;
    Ok((client, namespace))
}
