//! What a generator pod's status says, in words for people: its segment (the
//! Job's completion index), why it is still Pending, how it ended.

use k8s_openapi::api::core::v1::Pod;

use crate::manifests::INDEX_ANNOTATION;

/// The pod's completion index, from the annotation the Job controller sets.
pub(super) fn pod_index(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

/// Why a pod is Pending, as Kubernetes says: an unscheduled pod's condition
/// (`Unschedulable: 0/3 nodes are available: 3 Insufficient cpu`), else a waiting
/// container's reason (`ImagePullBackOff: ...`).
pub fn pending_reason(pod: &Pod) -> String {
    let Some(st) = &pod.status else {
        return "Pending (no status yet)".into();
    };
    for c in st.conditions.iter().flatten() {
        if c.type_ == "PodScheduled" && c.status == "False" {
            return join_reason(c.reason.as_deref(), c.message.as_deref(), "not scheduled");
        }
    }
    for cs in st.container_statuses.iter().flatten() {
        if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            return join_reason(w.reason.as_deref(), w.message.as_deref(), "waiting");
        }
    }
    join_reason(st.reason.as_deref(), st.message.as_deref(), "Pending")
}

/// How a pod ended: evicted by the kubelet (its results emptyDir past its
/// `sizeLimit`, the node short of disk or memory) with the kubelet's message, else
/// its container's exit code and reason, or the pod's reason (`DeadlineExceeded`).
pub(super) fn ended_reason(pod: &Pod) -> String {
    let st = pod.status.as_ref();
    if st.and_then(|s| s.reason.as_deref()) == Some("Evicted") {
        return join_reason(
            Some("Evicted"),
            st.and_then(|s| s.message.as_deref()),
            "Evicted",
        );
    }
    for cs in st
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
    {
        if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
            return format!(
                "exit code {}{}",
                t.exit_code,
                t.reason
                    .as_deref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default()
            );
        }
    }
    join_reason(
        st.and_then(|s| s.reason.as_deref()),
        st.and_then(|s| s.message.as_deref()),
        st.and_then(|s| s.phase.as_deref()).unwrap_or("ended"),
    )
}

/// `reason: message` as Kubernetes gives them, or whichever there is, or `fallback`.
fn join_reason(reason: Option<&str>, message: Option<&str>, fallback: &str) -> String {
    match (reason, message) {
        (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
        (Some(r), _) => r.to_string(),
        (None, Some(m)) => m.to_string(),
        (None, None) => fallback.to_string(),
    }
}
