//! pado on Kubernetes: one test split across the pods of an Indexed Job.
//!
//! `spec` is what a test is ([`spec::GeneratorSpec`]); names for Kubernetes come
//! from `pado_base::names`; `manifests` builds the ConfigMap and Job as k8s-openapi types;
//! the pod side (run a segment and serve it: live feed, stop, result as a tar) is
//! `pado_fleet::generator`, shared with agents; `flow` is
//! the coordinator (create, watch, show the whole test live, collect, clean up,
//! return the collected directories, `pado_fleet::flow::Collected`, to be merged),
//! the twin of `pado_fleet::flow::agents`; `live` reaches each pod's live feed and stop through the pod
//! proxy for the coordinator's live loop (`pado_fleet::coordinate`);
//! `cluster` reaches the cluster as kubectl would.

pub mod cluster;
pub mod flow;
pub mod live;
pub mod manifests;
pub mod spec;

pub use flow::{FlowError, FlowOptions};
pub use spec::{FileEntry, GeneratorSpec, Resources};

/// The kube client crate, for callers that build a client or a runtime around the flow.
pub use kube;
