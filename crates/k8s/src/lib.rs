//! pado on Kubernetes: one test split across the pods of an Indexed Job.
//!
//! `spec` is what a test is ([`spec::GeneratorSpec`]); `names` turns test names into
//! Kubernetes names; `manifests` builds the ConfigMap and Job as k8s-openapi types;
//! `generator` is the pod side (run a segment, then serve its result directory as
//! one tar); `archive` packs and defensively unpacks result directories; `flow` is
//! the coordinator (create, watch, stream logs, collect, hand to a merge, clean up);
//! `cluster` reaches the cluster as kubectl would.

pub mod archive;
pub mod cluster;
pub mod flow;
pub mod generator;
pub mod manifests;
pub mod names;
pub mod spec;

pub use flow::{Collected, FlowError, FlowOptions, MissingSegment};
pub use spec::{FileEntry, GeneratorSpec, Resources};

/// The kube client crate, for callers that build a client or a runtime around the flow.
pub use kube;
