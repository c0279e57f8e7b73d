//! An in-process Kubernetes API server for tests.
//!
//! It serves the real HTTP protocol kube-rs speaks, on 127.0.0.1, for the resources the
//! controllers use: core v1 Nodes and Pods (with the policy/v1 eviction subresource), and the
//! machineconfiguration.openshift.io/v1 MachineConfigs, MachineConfigPools and
//! ControllerConfigs, and this project's rollout.mco.dev/v1alpha1 RolloutPolicies (with their
//! status subresource). Objects live in memory as JSON.
//!
//! What it keeps faithful, because kube-rs or the controllers depend on it:
//! - errors are `Status` objects with the API server's codes and reasons (404 NotFound,
//!   409 AlreadyExists, 409 Conflict, 422 Invalid, 429 TooManyRequests, 415, 405);
//! - every write bumps a global `metadata.resourceVersion`; a write that changes nothing is
//!   not stored and sends no event; `metadata.generation` starts at 1 and grows when anything
//!   but metadata and status changes;
//! - PUT with a stale resourceVersion, and a patch that carries a stale one, fail with 409
//!   Conflict; custom resources refuse a PUT without one (422);
//! - the status subresource: writes to the main resource keep the stored status, writes to
//!   `/status` change nothing but the status;
//! - lists carry the current resourceVersion; watches (`?watch=true&resourceVersion=N`)
//!   stream every change after N as chunked JSON lines, or synthetic ADDED events for
//!   everything when N is 0, end after `timeoutSeconds`, and end with a BOOKMARK when asked;
//! - lists in pages (`limit`, `continue`, `remainingItemCount` when unfiltered), each a
//!   snapshot at the first page's resourceVersion; a continue token from before a
//!   compaction or a restart gets `410 Expired`, and the list must start again;
//! - label selectors (`k=v`, `k==v`, `k!=v`, `k`, `!k`) and field selectors on any dotted
//!   path (`spec.nodeName=n`, `metadata.name!=x`);
//! - graceful pod deletion, as kube-apiserver and the kubelet do it: a DELETE of a pod, and
//!   an accepted eviction, do not remove it but mark it terminating
//!   (`metadata.deletionTimestamp` = now + grace period, `metadata.deletionGracePeriodSeconds`,
//!   generation + 1, a MODIFIED event). The grace period is the request's
//!   `gracePeriodSeconds` (the DELETE body, or the Eviction's `deleteOptions`), else the pod's
//!   `spec.terminationGracePeriodSeconds`, else 30 (the real server's default for that field);
//!   it is 0 for a pod not bound to a node or already Succeeded or Failed, and 0 deletes at
//!   once. Deleting a terminating pod again only ever shortens its grace period, and no write
//!   removes or moves a deletionTimestamp once set. A stand-in
//!   for the kubelet ([`Kubelet`]) removes a terminating pod (a DELETED event) when its grace
//!   period is over; tests can speed its clock up, or hold pods terminating until they call
//!   [`Store::finish_terminating`];
//! - batch/v1 Jobs as the Job strategy creates them (the pod template's containers and
//!   `restartPolicy` checked, status cleared, the defaults and the generated selector and
//!   template labels filled in); no Job controller runs them: tests write their status;
//! - evictions: 429 while [`Store::block_eviction`] plays a PodDisruptionBudget refusing,
//!   except for pods a budget does not cover (already terminating, or Pending, Succeeded or
//!   Failed, as the real eviction handler lets those through); evicting a terminating pod is
//!   accepted (201) and changes nothing but a shorter grace period. policy/v1
//!   PodDisruptionBudgets are stored and checked as the handler checks them (one budget per
//!   pod, 429 with a `DisruptionBudget` cause while it allows no disruption, one disruption
//!   taken and the pod recorded in `disruptedPods` otherwise); no disruption controller
//!   recomputes their status: tests write it.
//!
//! - deletion of everything but pods as the registry does it ([`garbage`]): a DELETE's
//!   `propagationPolicy` sets the garbage collector's finalizer (`foregroundDeletion`,
//!   `orphan`), an object left with finalizers is only marked (`deletionTimestamp`, a
//!   MODIFIED event) and goes when a write removes the last one, and a write can neither
//!   add a finalizer to an object being deleted nor start a deletion (422); a stand-in for kube-controller-manager's
//!   garbage collector finishes foreground and orphaning deletions and collects the
//!   dependents of owners deleted here ([`Store::set_garbage_collector`] turns it off);
//!
//! - custom resources are defaulted and checked against their CRDs in `manifests/` (types,
//!   required fields, enums, lengths, list sizes and map-list keys, the CEL rules the CRDs
//!   use: [`super::schema`]) on every write, refused with 422 Invalid naming each cause.
//!
//! - an API it does not serve (a custom resource whose CRD is "not installed": the
//!   `operator.openshift.io` MachineConfigurations by default, any other through
//!   [`Store::uninstall`]) is answered as kube-apiserver answers when no handler claims the
//!   path (its aggregator and CRD handler pass it on to Go's `http.NotFound`): 404,
//!   `Content-Type: text/plain; charset=utf-8`, `X-Content-Type-Options: nosniff`, the body
//!   `404 page not found\n`, for every verb; so is any other path outside the built-in groups'
//!   API versions. A built-in group version's unknown resource gets the `Status`
//!   `the server could not find the requested resource` (its go-restful service's 404).
//!   [`Store::install`] serves the kind again and stores its CRD, Established.
//!
//! Faults on command ([`super::faults`]): a restart ([`Store::restart`]: connections cut,
//! watches ended, the objects kept; back with a new watch cache, and reads refused `403` for
//! an instant), compaction ([`Store::compact`]: a watch resumed from an
//! older version gets a `410 Expired` ERROR event), and refusals of chosen requests (429 with
//! `Retry-After`, 500, 503, a cut connection).
//!
//! Simplified: strategic merge patches (refused on custom resources, as the real server
//! does) are applied as JSON merge patches, and server-side apply is refused with 415 (the
//! controllers do not use it). Created pods keep the status they are given (the real server
//! resets it to Pending; tests seed pods as the kubelet left them), a pod without a phase
//! counts as running, and finalizers do not hold pods (their deletion is the graceful one
//! above). Note that kube-rs's `Api::evict` sends its delete options as `delete_options`, a
//! field the real Eviction does not have: like the real server, this one ignores it.
// Handlers return the Status error object by value: it is built once per failed request in a
// test server, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

#[path = "garbage.rs"]
mod garbage;

use super::admission;
use super::patch::{json_patch, merge_patch};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

type Body = BoxBody<Bytes, std::io::Error>;

/// A resource the server knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group ("" for core).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Plural name (the store key; unique here).
    pub plural: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Whether it has a status subresource.
    pub status: bool,
}

impl ResourceDef {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Defined by a CustomResourceDefinition rather than built into the server.
    fn is_custom(&self) -> bool {
        !builtin_group(self.group)
    }
}

/// A group kube-apiserver serves itself (through go-restful), not through a CRD.
fn builtin_group(group: &str) -> bool {
    const BUILT_IN: &[&str] = &["", "apps", "batch", "policy", "autoscaling"];
    BUILT_IN.contains(&group) || group.ends_with(".k8s.io")
}

/// The kinds served until a test uninstalls them, and those not served until it installs them.
fn unserved_at_start() -> BTreeSet<&'static str> {
    ["machineconfigurations"].into_iter().collect()
}

const MCO: &str = "machineconfiguration.openshift.io";

/// Every resource served.
pub const RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        group: "",
        version: "v1",
        plural: "nodes",
        kind: "Node",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "pods",
        kind: "Pod",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        kind: "Lease",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "namespaces",
        kind: "Namespace",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        kind: "ServiceAccount",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "services",
        kind: "Service",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "secrets",
        kind: "Secret",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingwebhookconfigurations",
        kind: "ValidatingWebhookConfiguration",
        namespaced: false,
        status: false,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "configmaps",
        kind: "ConfigMap",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "batch",
        version: "v1",
        plural: "jobs",
        kind: "Job",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "policy",
        version: "v1",
        plural: "poddisruptionbudgets",
        kind: "PodDisruptionBudget",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "apps",
        version: "v1",
        plural: "deployments",
        kind: "Deployment",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "apps",
        version: "v1",
        plural: "daemonsets",
        kind: "DaemonSet",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        kind: "ClusterRole",
        namespaced: false,
        status: false,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        kind: "ClusterRoleBinding",
        namespaced: false,
        status: false,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        kind: "Role",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        kind: "RoleBinding",
        namespaced: true,
        status: false,
    },
    ResourceDef {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicies",
        kind: "ValidatingAdmissionPolicy",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicybindings",
        kind: "ValidatingAdmissionPolicyBinding",
        namespaced: false,
        status: false,
    },
    ResourceDef {
        group: "apiextensions.k8s.io",
        version: "v1",
        plural: "customresourcedefinitions",
        kind: "CustomResourceDefinition",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "clusteroperators",
        kind: "ClusterOperator",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "infrastructures",
        kind: "Infrastructure",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "networks",
        kind: "Network",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "dnses",
        kind: "DNS",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "proxies",
        kind: "Proxy",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "machineconfigs",
        kind: "MachineConfig",
        namespaced: false,
        status: false,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "machineconfigpools",
        kind: "MachineConfigPool",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "controllerconfigs",
        kind: "ControllerConfig",
        namespaced: false,
        status: true,
    },
    // Not served unless a test installs it (see [`Store::install`]), as on a cluster built
    // from manifests/, which do not install its CRD.
    ResourceDef {
        group: "operator.openshift.io",
        version: "v1",
        plural: "machineconfigurations",
        kind: "MachineConfiguration",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "kubeletconfigs",
        kind: "KubeletConfig",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "containerruntimeconfigs",
        kind: "ContainerRuntimeConfig",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "machineconfignodes",
        kind: "MachineConfigNode",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "machineosconfigs",
        kind: "MachineOSConfig",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "machineosbuilds",
        kind: "MachineOSBuild",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: MCO,
        version: "v1",
        plural: "pinnedimagesets",
        kind: "PinnedImageSet",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "rollout.mco.dev",
        version: "v1alpha1",
        plural: "rolloutpolicies",
        kind: "RolloutPolicy",
        namespaced: false,
        status: true,
    },
    // config.openshift.io Node is left out: its plural would share the store with core nodes.
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "featuregates",
        kind: "FeatureGate",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "apiservers",
        kind: "APIServer",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "images",
        kind: "Image",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "clusterversions",
        kind: "ClusterVersion",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "clusterimagepolicies",
        kind: "ClusterImagePolicy",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "imagepolicies",
        kind: "ImagePolicy",
        namespaced: true,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "imagedigestmirrorsets",
        kind: "ImageDigestMirrorSet",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "config.openshift.io",
        version: "v1",
        plural: "imagetagmirrorsets",
        kind: "ImageTagMirrorSet",
        namespaced: false,
        status: true,
    },
    ResourceDef {
        group: "operator.openshift.io",
        version: "v1alpha1",
        plural: "imagecontentsourcepolicies",
        kind: "ImageContentSourcePolicy",
        namespaced: false,
        status: true,
    },
];

/// A Job as kube-apiserver's Job strategy creates it: the pod template must name containers
/// and a `restartPolicy` of `Never` or `OnFailure` (else 422 Invalid, naming the field), the
/// status is cleared, and the defaults are filled in: `parallelism` 1, `backoffLimit` 6,
/// `completionMode` NonIndexed, `suspend` false, and the generated selector with its labels
/// on the template (`batch.kubernetes.io/controller-uid`, `batch.kubernetes.io/job-name` and
/// their legacy forms).
fn prepare_job(obj: &mut Value, name: &str, uid: &str) -> Result<(), ApiError> {
    let invalid = |field: &str, what: String| {
        ApiError::new(
            422,
            "Invalid",
            format!("Job.batch {name:?} is invalid: {field}: {what}"),
        )
    };
    let pod = &obj["spec"]["template"]["spec"];
    if pod["containers"].as_array().is_none_or(Vec::is_empty) {
        return Err(invalid(
            "spec.template.spec.containers",
            "Required value".into(),
        ));
    }
    match pod["restartPolicy"].as_str() {
        Some("Never") | Some("OnFailure") => {}
        other => {
            return Err(invalid(
                "spec.template.spec.restartPolicy",
                match other {
                    None => "Required value: valid values: \"OnFailure\", \"Never\"".into(),
                    Some(p) => format!(
                        "Unsupported value: {p:?}: supported values: \"OnFailure\", \"Never\""
                    ),
                },
            ))
        }
    }
    let spec = &mut obj["spec"];
    for (k, v) in [
        ("parallelism", json!(1)),
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
    ] {
        if spec[k].is_null() {
            spec[k] = v;
        }
    }
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    });
    if spec["selector"].is_null() {
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    }
    let template_meta = &mut spec["template"]["metadata"];
    if !template_meta.is_object() {
        *template_meta = json!({});
    }
    let tl = &mut template_meta["labels"];
    if !tl.is_object() {
        *tl = json!({});
    }
    if let (Some(m), Some(add)) = (tl.as_object_mut(), labels.as_object()) {
        for (k, v) in add {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    obj["status"] = json!({});
    Ok(())
}

/// The resource named by its plural.
pub fn resource(plural: &str) -> Option<&'static ResourceDef> {
    RESOURCES.iter().find(|r| r.plural == plural)
}

/// One stored change, as watches see it.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// The resource's plural.
    pub plural: &'static str,
    /// ADDED, MODIFIED or DELETED.
    pub type_: &'static str,
    /// The object after the change (before it, for DELETED, with the new resourceVersion).
    pub object: Value,
}

/// An API error, rendered as a `Status` object.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP code.
    pub code: u16,
    /// Machine-readable reason.
    pub reason: String,
    /// Message.
    pub message: String,
    name: String,
    def: Option<ResourceDef>,
    /// Answered as Go's `http.NotFound` answers, in plain text, not as a `Status`.
    plain: bool,
    /// `details.causes`.
    causes: Vec<Value>,
    /// `Retry-After` (seconds), with `details.retryAfterSeconds`.
    retry_after: Option<u64>,
    /// No answer: the connection is cut.
    reset: bool,
}

impl ApiError {
    fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            name: String::new(),
            def: None,
            plain: false,
            causes: Vec::new(),
            retry_after: None,
            reset: false,
        }
    }

    /// The answer to a request a fault refuses.
    fn refused(r: super::faults::Refusal) -> Self {
        use super::faults::Refusal;
        match r {
            Refusal::TooManyRequests(secs) => ApiError {
                retry_after: Some(secs),
                ..ApiError::new(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                )
            },
            Refusal::Internal => {
                ApiError::new(500, "InternalError", "Internal error occurred: injected")
            }
            Refusal::Unavailable => ApiError::new(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            Refusal::Forbidden => ApiError::new(
                403,
                "Forbidden",
                "forbidden: the authorizer has not loaded the cluster's roles yet",
            ),
            Refusal::Reset | Refusal::ResetAfterDoing => ApiError {
                reset: true,
                ..ApiError::new(0, "", "")
            },
        }
    }

    fn caused_by(mut self, type_: &str, message: String) -> Self {
        self.causes
            .push(json!({"reason": type_, "message": message}));
        self
    }

    /// kube-apiserver's answer when no handler claims the path: an API it does not serve.
    fn page_not_found() -> Self {
        ApiError {
            plain: true,
            ..ApiError::new(404, "", "404 page not found")
        }
    }

    fn about(mut self, def: &ResourceDef, name: &str) -> Self {
        self.def = Some(*def);
        self.name = name.to_string();
        self
    }

    fn not_found(def: &ResourceDef, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", def.qualified()),
        )
        .about(def, name)
    }

    fn conflict(def: &ResourceDef, name: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
                def.qualified()
            ),
        )
        .about(def, name)
    }

    /// A continue token from before a compaction (or one never given out).
    fn continue_expired() -> Self {
        ApiError::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        )
    }

    fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut details = json!({});
        if !self.name.is_empty() {
            details["name"] = json!(self.name);
        }
        if let Some(d) = &self.def {
            details["group"] = json!(d.group);
            details["kind"] = json!(d.plural);
        }
        if !self.causes.is_empty() {
            details["causes"] = json!(self.causes);
        }
        if let Some(secs) = self.retry_after {
            details["retryAfterSeconds"] = json!(secs);
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        })
    }
}

/// The eviction handler's budget check for a running pod: the one PodDisruptionBudget whose
/// selector matches it (more than one is refused; a `null` selector matches nothing, `{}`
/// every pod), refused with 429 and the budget's cause while it allows no disruption or its
/// status is behind its spec, and otherwise the budget with one disruption taken and the pod
/// among its `disruptedPods`, to store. An unready pod goes without taking one while the
/// budget is healthy, as the default `IfHealthyBudget` policy lets it.
fn budget_check(inner: &Inner, pod: &Value) -> Result<Option<(Key, Value)>, ApiError> {
    let namespace = meta(pod, "namespace").unwrap_or_default();
    let name = meta(pod, "name").unwrap_or_default();
    let labels: BTreeMap<String, String> =
        serde_json::from_value(pod["metadata"]["labels"].clone()).unwrap_or_default();
    let budgets: Vec<(&Key, &Value)> =
        inner
            .objects
            .get("poddisruptionbudgets")
            .into_iter()
            .flatten()
            .filter(|((ns, _), _)| *ns == namespace)
            .filter(|(_, b)| {
                let selector = serde_json::from_value::<
                    Option<mco_render::api::selector::LabelSelector>,
                >(b["spec"]["selector"].clone());
                match selector {
                    Ok(Some(s)) => s.compile().is_ok_and(|c| c.matches(&labels)),
                    _ => false,
                }
            })
            .collect();
    let (key, budget) = match budgets.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        _ => {
            return Err(ApiError::new(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    let budget_name = key.1.as_str();
    let status = &budget["status"];
    let int = |k: &str| status[k].as_i64().unwrap_or(0);
    let ready = pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    if !ready && int("currentHealthy") >= int("desiredHealthy") && int("desiredHealthy") > 0 {
        return Ok(None);
    }
    let refused = |cause: String| {
        ApiError::new(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
        )
        .caused_by("DisruptionBudget", cause)
    };
    let generation = budget["metadata"]["generation"].as_i64().unwrap_or(0);
    if int("observedGeneration") < generation {
        return Err(refused(format!(
            "The disruption budget {budget_name} is still being processed by the server."
        )));
    }
    if int("disruptionsAllowed") < 0 {
        return Err(ApiError::new(
            403,
            "Forbidden",
            format!("poddisruptionbudgets.policy \"{budget_name}\" is forbidden: pdb disruptions allowed is negative"),
        ));
    }
    if int("disruptionsAllowed") == 0 {
        return Err(refused(format!(
            "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
            int("desiredHealthy"),
            int("currentHealthy")
        )));
    }
    let mut budget = budget.clone();
    budget["status"]["disruptionsAllowed"] = json!(int("disruptionsAllowed") - 1);
    if !budget["status"]["disruptedPods"].is_object() {
        budget["status"]["disruptedPods"] = json!({});
    }
    budget["status"]["disruptedPods"][name.as_str()] =
        json!(mco_k8s::controller::pool_sync::now_rfc3339());
    Ok(Some((key.clone(), budget)))
}

type Observer = Box<dyn FnMut(&Event) + Send>;
type Key = (String, String);

/// How the stand-in for the kubelet ends pods that are terminating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kubelet {
    /// A terminating pod is removed when its grace period is over (its containers ignore
    /// SIGTERM to the end, the slowest case), on a clock running this many times faster
    /// than real time: 1 is real time, 1000 makes the default 30 s last 30 ms.
    Speedup(u32),
    /// Terminating pods stay until the test calls [`Store::finish_terminating`].
    Held,
}

impl Default for Kubelet {
    fn default() -> Self {
        Kubelet::Speedup(1)
    }
}

/// A pod's graceful termination under way.
#[derive(Debug, Clone)]
struct Termination {
    uid: String,
    since: Instant,
    grace: Duration,
}

impl Termination {
    fn ends(&self, speedup: u32) -> Instant {
        self.since + self.grace / speedup.max(1)
    }
}

/// The grace period of a pod whose spec names none (the API server's default for
/// `spec.terminationGracePeriodSeconds`).
pub const DEFAULT_GRACE_SECONDS: i64 = 30;

#[derive(Default)]
struct Inner {
    rv: u64,
    next_uid: u64,
    objects: BTreeMap<&'static str, BTreeMap<Key, Value>>,
    history: Vec<Event>,
    observers: Vec<Observer>,
    blocked_evictions: BTreeMap<Key, u32>,
    evictions: Vec<Key>,
    requests: BTreeMap<String, u64>,
    agent_requests: BTreeMap<(String, String), u64>,
    /// The object names each client's requests named (see [`Store::requests_named`]).
    agent_names: BTreeMap<(String, String), BTreeSet<Option<String>>>,
    /// The namespace and object name each client's requests named (see
    /// [`Store::requests_scoped`]).
    agent_targets: BTreeMap<(String, String), BTreeSet<Named>>,
    /// Every request, in order (see [`Store::request_log`]).
    request_log: Vec<Logged>,
    kubelet: Kubelet,
    terminating: BTreeMap<Key, Termination>,
    /// The garbage collector's state ([`garbage`]).
    gc: garbage::State,
    /// Paged lists not yet read to the end: by continue token, the list's resourceVersion
    /// and the items still to come (each list is a snapshot, as etcd serves one).
    pages: BTreeMap<String, (u64, Vec<Value>)>,
    /// Continue tokens given out so far.
    next_page: u64,
}

impl Inner {
    /// The stored object of `plural` at `key`.
    fn object(&self, plural: &str, key: &Key) -> Option<Value> {
        self.objects.get(plural).and_then(|m| m.get(key)).cloned()
    }
}

/// The server's objects. Tests may read and write it directly.
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Event>,
    watch_cap: Mutex<Option<Duration>>,
    open_watches: Arc<std::sync::atomic::AtomicUsize>,
    kubelet_wake: Notify,
    gc_wake: Notify,
    /// Where each Service (namespace, name, port) is reached, for webhook calls.
    routes: Mutex<BTreeMap<(String, String, u16), SocketAddr>>,
    admission_calls: Mutex<Vec<admission::Call>>,
    /// The kinds (plurals) whose CRD is not installed: not served.
    unserved: Mutex<BTreeSet<&'static str>>,
    /// Faults played on command ([`super::faults`]).
    pub faults: super::faults::Faults,
}

fn meta(obj: &Value, key: &str) -> Option<String> {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn set_meta(obj: &mut Value, key: &str, v: Value) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"][key] = v;
}

/// 409 Conflict unless `obj` matches the DeleteOptions `preconditions` (uid, resourceVersion).
fn check_preconditions(
    def: &ResourceDef,
    name: &str,
    obj: &Value,
    preconditions: Option<&Value>,
) -> Result<(), ApiError> {
    if let Some(p) = preconditions {
        for k in ["uid", "resourceVersion"] {
            if let Some(want) = p.get(k).and_then(Value::as_str) {
                if meta(obj, k).as_deref() != Some(want) {
                    return Err(ApiError::conflict(def, name));
                }
            }
        }
    }
    Ok(())
}

/// Everything but metadata and status: what a generation counts.
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

/// The object a write of `candidate` over the stored `old` would store (`status_only`: a
/// write to the status subresource): the parts a client cannot change kept, the generation
/// bumped when the spec changed. 409 Conflict for a stale resourceVersion.
/// 422 Invalid when a custom resource fails its CRD's schema ([`super::schema`]), naming
/// every cause as the API server does.
fn schema_valid(def: &ResourceDef, name: &str, obj: &Value) -> Result<(), ApiError> {
    let mut causes = super::schema::violations(def, obj);
    causes.extend(super::builtin::violations(def, obj));
    let list = match causes.as_slice() {
        [] => return Ok(()),
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{}.{} {name:?} is invalid: {list}", def.kind, def.group),
    )
    .about(def, name))
}

fn updated(
    def: &ResourceDef,
    name: &str,
    old: &Value,
    candidate: Value,
    status_only: bool,
) -> Result<Value, ApiError> {
    if !candidate.is_object() {
        return Err(ApiError::bad_request("the body must be an object"));
    }
    let old_rv = meta(old, "resourceVersion").unwrap_or_default();
    if let Some(rv) = meta(&candidate, "resourceVersion").filter(|v| !v.is_empty()) {
        if rv != old_rv {
            return Err(ApiError::conflict(def, name));
        }
    }
    if let Some(n) = meta(&candidate, "name") {
        if n != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
    }
    let mut new = if status_only {
        let mut n = old.clone();
        match candidate.get("status") {
            Some(s) => n["status"] = s.clone(),
            None => {
                if let Some(m) = n.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        n
    } else {
        let mut n = candidate;
        if def.status {
            match old.get("status") {
                Some(s) => n["status"] = s.clone(),
                None => {
                    if let Some(m) = n.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        n
    };
    new["apiVersion"] = json!(def.api_version());
    new["kind"] = json!(def.kind);
    super::schema::apply_defaults(def, &mut new);
    for k in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "generation",
    ] {
        match old["metadata"].get(k) {
            Some(v) => set_meta(&mut new, k, v.clone()),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    // A deletion under way cannot be undone or moved by a write, nor started by one: only
    // DELETE marks an object (metadata validation's immutable field).
    for k in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
        match old["metadata"].get(k) {
            Some(v) => set_meta(&mut new, k, v.clone()),
            None => {
                if let Some(v) = new["metadata"].get(k).filter(|v| !v.is_null()) {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "{}.{} {name:?} is invalid: metadata.{k}: Invalid value: {v}: field is immutable",
                            def.kind, def.group
                        ),
                    )
                    .about(def, name));
                }
            }
        }
    }
    if spec_part(&new) != spec_part(old) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
        set_meta(&mut new, "generation", json!(g + 1));
    }
    set_meta(&mut new, "resourceVersion", json!(old_rv));
    schema_valid(def, name, &new)?;
    Ok(new)
}

impl Store {
    fn new() -> Self {
        Store {
            inner: Mutex::new(Inner::default()),
            events: broadcast::channel(1 << 16).0,
            watch_cap: Mutex::new(None),
            open_watches: Arc::default(),
            kubelet_wake: Notify::new(),
            gc_wake: Notify::new(),
            routes: Mutex::default(),
            admission_calls: Mutex::default(),
            unserved: Mutex::new(unserved_at_start()),
            faults: super::faults::Faults::default(),
        }
    }

    /// Compacts the history up to now, as etcd's compaction does: a watch resumed from an
    /// older version gets `410 Gone` and must list again. Open watches go on.
    pub fn compact(&self) {
        let mut inner = self.lock();
        let rv = inner.rv;
        inner.history.retain(|e| e.rv > rv);
        self.faults.compact_to(rv);
    }

    /// Takes the server away for `down` (connections cut, watches ended, the objects kept),
    /// as a kube-apiserver restart does, then serves again on the same address. As the real
    /// one, it comes back with a new watch cache, which starts at the current version: a
    /// watch resumed from an older one is answered 200 and ended by an ERROR event carrying
    /// a `410 Expired` Status (the cacher's "too old resource version"), and must list again.
    /// For the first instant back its RBAC authorizer has no roles yet: LISTs and WATCHes are
    /// refused `403` for [`super::faults::FORBIDDEN_AFTER_RESTART`].
    pub async fn restart(&self, down: Duration) {
        self.faults.set_down(true);
        tokio::time::sleep(down).await;
        let rv = self.lock().rv;
        self.faults.compact_to(rv);
        self.faults
            .forbid_reads_for(super::faults::FORBIDDEN_AFTER_RESTART);
        self.faults.set_down(false);
    }

    /// Whether the kind `plural` is served (its CRD installed, or built in).
    pub fn serves(&self, plural: &str) -> bool {
        !self
            .unserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(plural)
    }

    /// Stops serving the custom resource `plural`, as if its CRD were not installed (its CRD
    /// object, if stored, is deleted; its objects stay, as etcd keeps them).
    pub fn uninstall(&self, plural: &str) {
        let def = resource(plural).unwrap_or_else(|| panic!("{plural} is not a known kind"));
        assert!(
            def.is_custom(),
            "{plural} is built in: it cannot be uninstalled"
        );
        self.unserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(def.plural);
        if let Some(crds) = resource("customresourcedefinitions") {
            let name = format!("{}.{}", def.plural, def.group);
            if self.get(crds.plural, "", &name).is_some() {
                let _ = self.delete(crds, "", &name, None);
            }
        }
    }

    /// Serves the custom resource `plural` (again), storing its CRD as Established (a watch
    /// of CRDs sees it ADDED), as kube-apiserver does once a CRD is installed.
    pub fn install(&self, plural: &str) {
        let def = resource(plural).unwrap_or_else(|| panic!("{plural} is not a known kind"));
        self.unserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(def.plural);
        let Some(crds) = resource("customresourcedefinitions") else {
            return;
        };
        let name = format!("{}.{}", def.plural, def.group);
        if self.get(crds.plural, "", &name).is_some() {
            return;
        }
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": def.group,
                     "names": {"plural": def.plural, "kind": def.kind},
                     "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
                     "versions": [{"name": def.version, "served": true, "storage": true}]},
            "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": "True"}]},
        });
        self.create(crds, "", crd)
            .unwrap_or_else(|e| panic!("storing the CRD {name}: {e:?}"));
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f` on every change, in order, while the change is being stored (so it sees
    /// every intermediate state exactly once).
    pub fn observe(&self, f: impl FnMut(&Event) + Send + 'static) {
        self.lock().observers.push(Box::new(f));
    }

    /// Routes the Service `namespace/name` on `port` to `addr`, as its endpoints would: where
    /// webhook calls to it go.
    pub fn route_service(&self, namespace: &str, name: &str, port: u16, addr: SocketAddr) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((namespace.into(), name.into(), port), addr);
    }

    /// Every admission webhook call so far, in order.
    pub fn admission_calls(&self) -> Vec<admission::Call> {
        self.admission_calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs the validating webhooks that apply to `req` (see [`admission`]): the warnings to
    /// return, or the refusal.
    async fn admit(&self, req: admission::Request<'_>) -> Result<Vec<String>, ApiError> {
        let configurations = self.list("validatingwebhookconfigurations");
        if configurations.is_empty() {
            return Ok(Vec::new());
        }
        let routes = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let route = |ns: &str, name: &str, port: u16| {
            routes
                .get(&(ns.to_string(), name.to_string(), port))
                .copied()
        };
        let mut log = Vec::new();
        let out = admission::admit(&configurations, &route, &req, &mut log).await;
        self.admission_calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(log);
        out.map_err(|r| ApiError::new(r.code, r.reason, r.message))
    }

    /// Ends every watch after at most `cap` (to exercise clients' re-watching).
    pub fn cap_watch_duration(&self, cap: Duration) {
        *self.watch_cap.lock().unwrap_or_else(|e| e.into_inner()) = Some(cap);
    }

    /// Makes the next `times` evictions of a pod fail with 429, as a PodDisruptionBudget would.
    pub fn block_eviction(&self, namespace: &str, name: &str, times: u32) {
        self.lock()
            .blocked_evictions
            .insert((namespace.into(), name.into()), times);
    }

    /// Pods evicted so far (namespace, name), in order: the evictions that began a pod's
    /// termination (or deleted it), not repeats for a pod already terminating.
    pub fn evictions(&self) -> Vec<(String, String)> {
        self.lock().evictions.clone()
    }

    /// Requests served so far, by `METHOD resource[/subresource]` (LIST and WATCH for
    /// collection reads).
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        self.lock().requests.clone()
    }

    /// Requests served so far by client: (User-Agent, empty when none was sent; what
    /// [`Store::request_counts`] counts).
    pub fn request_counts_by_agent(&self) -> BTreeMap<(String, String), u64> {
        self.lock().agent_requests.clone()
    }

    /// Every request so far, in the order they came (refused ones too).
    pub fn request_log(&self) -> Vec<Logged> {
        self.lock().request_log.clone()
    }

    /// The requests served so far (by all clients, or by the one with User-Agent `agent`),
    /// keyed as [`Store::request_counts`] keys them, with the object name each one named:
    /// the name in its path, or for a list or watch the `metadata.name` its field selector
    /// requires (as the API server's request info takes it for authorization, where a rule's
    /// `resourceNames` apply). `None`: no name (a create, a list of everything).
    pub fn requests_named(
        &self,
        agent: Option<&str>,
    ) -> BTreeMap<String, BTreeSet<Option<String>>> {
        let mut out: BTreeMap<String, BTreeSet<Option<String>>> = BTreeMap::new();
        for ((a, what), names) in &self.lock().agent_names {
            if agent.is_none_or(|want| want == a) {
                out.entry(what.clone())
                    .or_default()
                    .extend(names.iter().cloned());
            }
        }
        out
    }

    /// As [`Store::requests_named`], with the namespace each request named beside the object
    /// name: `None` for a cluster-scoped kind or a list or watch across every namespace (as
    /// the API server's request info has it for authorization, where a RoleBinding grants only
    /// in its namespace).
    pub fn requests_scoped(&self, agent: Option<&str>) -> BTreeMap<String, BTreeSet<Named>> {
        let mut out: BTreeMap<String, BTreeSet<Named>> = BTreeMap::new();
        for ((a, what), targets) in &self.lock().agent_targets {
            if agent.is_none_or(|want| want == a) {
                out.entry(what.clone())
                    .or_default()
                    .extend(targets.iter().cloned());
            }
        }
        out
    }

    /// Sets how terminating pods end (from now on, for the pods terminating already too).
    pub fn set_kubelet(&self, kubelet: Kubelet) {
        self.lock().kubelet = kubelet;
        self.kubelet_wake.notify_one();
    }

    /// Pods terminating now (namespace, name): those with a deletionTimestamp.
    pub fn terminating(&self) -> Vec<(String, String)> {
        self.lock()
            .objects
            .get("pods")
            .map(|m| {
                m.iter()
                    .filter(|(_, p)| meta(p, "deletionTimestamp").is_some())
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Ends every terminating pod now, as the kubelet does when their containers have
    /// exited: each is removed with a DELETED event. Returns them (namespace, name).
    pub fn finish_terminating(&self) -> Vec<(String, String)> {
        let gone = self.terminating();
        let mut inner = self.lock();
        for key in &gone {
            self.end_termination(&mut inner, key, None);
        }
        gone
    }

    /// Removes the terminating pod at `key` (only the one of `uid`, when given).
    fn end_termination(&self, inner: &mut Inner, key: &Key, uid: Option<&str>) {
        inner.terminating.remove(key);
        let Some(pods) = resource("pods") else { return };
        let Some(pod) = inner.object("pods", key) else {
            return;
        };
        if meta(&pod, "deletionTimestamp").is_none()
            || uid.is_some_and(|u| meta(&pod, "uid").as_deref() != Some(u))
        {
            return;
        }
        self.commit(inner, pods, key.clone(), pod, "DELETED");
    }

    /// The kubelet's round: removes the pods whose grace period is over, and says when the
    /// next one's ends (`None`: none is due while the kubelet holds them, or none terminates).
    fn reap(&self) -> Option<Instant> {
        let mut inner = self.lock();
        let Kubelet::Speedup(speedup) = inner.kubelet else {
            return None;
        };
        let now = Instant::now();
        let due: Vec<(Key, String)> = inner
            .terminating
            .iter()
            .filter(|(_, t)| t.ends(speedup) <= now)
            .map(|(k, t)| (k.clone(), t.uid.clone()))
            .collect();
        for (key, uid) in due {
            self.end_termination(&mut inner, &key, Some(&uid));
        }
        inner.terminating.values().map(|t| t.ends(speedup)).min()
    }

    /// Runs the kubelet until the task is dropped.
    async fn run_kubelet(self: Arc<Self>) {
        loop {
            let next = self.reap();
            let woken = self.kubelet_wake.notified();
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = woken => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Watches being served now.
    pub fn open_watches(&self) -> usize {
        self.open_watches.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    /// One object.
    pub fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        self.lock()
            .object(plural, &(namespace.to_string(), name.to_string()))
    }

    /// Every object of a resource, by namespace then name.
    pub fn list(&self, plural: &str) -> Vec<Value> {
        self.lock()
            .objects
            .get(plural)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    fn commit(
        &self,
        inner: &mut Inner,
        def: &ResourceDef,
        key: Key,
        mut obj: Value,
        type_: &'static str,
    ) -> Value {
        inner.rv += 1;
        let rv = inner.rv;
        set_meta(&mut obj, "resourceVersion", json!(rv.to_string()));
        let store = inner.objects.entry(def.plural).or_default();
        if type_ == "DELETED" {
            store.remove(&key);
        } else {
            store.insert(key, obj.clone());
        }
        if inner.gc.note(type_, &obj) {
            self.gc_wake.notify_one();
        }
        let ev = Event {
            rv,
            plural: def.plural,
            type_,
            object: obj.clone(),
        };
        for o in inner.observers.iter_mut() {
            o(&ev);
        }
        inner.history.push(ev.clone());
        let _ = self.events.send(ev);
        obj
    }

    /// Creates an object (409 AlreadyExists when the name is taken).
    pub fn create(
        &self,
        def: &ResourceDef,
        namespace: &str,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body must be an object"));
        }
        if let Some(k) = obj.get("kind").and_then(Value::as_str) {
            if k != def.kind {
                return Err(ApiError::bad_request(format!(
                    "the kind {k:?} does not match {:?}",
                    def.kind
                )));
            }
        }
        let mut inner = self.lock();
        let name = match meta(&obj, "name").filter(|n| !n.is_empty()) {
            Some(n) => n,
            None => match meta(&obj, "generateName").filter(|n| !n.is_empty()) {
                Some(prefix) => format!("{prefix}{:05x}", inner.next_uid + 1),
                None => {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                            def.kind
                        ),
                    )
                    .about(def, ""))
                }
            },
        };
        let ns = if def.namespaced {
            match meta(&obj, "namespace").filter(|n| !n.is_empty()) {
                Some(n) if n != namespace => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => namespace.to_string(),
            }
        } else {
            String::new()
        };
        let key = (ns.clone(), name.clone());
        if inner
            .objects
            .get(def.plural)
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::new(
                409,
                "AlreadyExists",
                format!("{} {name:?} already exists", def.qualified()),
            )
            .about(def, &name));
        }
        inner.next_uid += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", inner.next_uid);
        obj["apiVersion"] = json!(def.api_version());
        obj["kind"] = json!(def.kind);
        set_meta(&mut obj, "name", json!(name));
        if def.namespaced {
            set_meta(&mut obj, "namespace", json!(ns));
        } else if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        set_meta(&mut obj, "uid", json!(uid));
        set_meta(
            &mut obj,
            "creationTimestamp",
            json!(mco_k8s::controller::pool_sync::now_rfc3339()),
        );
        set_meta(&mut obj, "generation", json!(1));
        if def.is_custom() && def.status {
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        if def.plural == "jobs" {
            prepare_job(&mut obj, &name, &uid).map_err(|e| e.about(def, &name))?;
        }
        super::schema::apply_defaults(def, &mut obj);
        schema_valid(def, &name, &obj)?;
        Ok(self.commit(&mut inner, def, key, obj, "ADDED"))
    }

    /// Writes an object through `f`, which gets the stored object and returns the intended
    /// one. `status_only` is a write to the status subresource.
    pub fn write(
        &self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        status_only: bool,
        f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        let key = (namespace.to_string(), name.to_string());
        let old = inner
            .object(def.plural, &key)
            .ok_or_else(|| ApiError::not_found(def, name))?;
        let candidate = f(&old)?;
        let new = updated(def, name, &old, candidate, status_only)?;
        if new == old {
            return Ok(old);
        }
        // An object being deleted takes no new finalizer, and goes with its last one.
        if meta(&old, "deletionTimestamp").is_some() && def.plural != "pods" {
            let before = garbage::finalizers(&old);
            let after = garbage::finalizers(&new);
            let added: Vec<&String> = after.iter().filter(|f| !before.contains(f)).collect();
            if !added.is_empty() {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!(
                        "{}.{} {name:?} is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        def.kind,
                        def.group,
                        added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
                    ),
                )
                .about(def, name));
            }
            if after.is_empty() {
                return Ok(self.commit(&mut inner, def, key, new, "DELETED"));
            }
        }
        Ok(self.commit(&mut inner, def, key, new, "MODIFIED"))
    }

    /// [`Store::write`] as a client's request: the validating webhooks review the object
    /// that would be stored (with the stored one as `oldObject`) before it is. The write is
    /// retried from the review when the object changed meanwhile, as the real server's
    /// guaranteed update retries. Returns the stored object and the webhooks' warnings.
    async fn write_admitted(
        &self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        sub: Option<&str>,
        caller: &Caller,
        f: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let status_only = sub.is_some();
        loop {
            let old = self
                .get(def.plural, namespace, name)
                .ok_or_else(|| ApiError::not_found(def, name))?;
            let candidate = f(&old)?;
            let new = updated(def, name, &old, candidate.clone(), status_only)?;
            let warnings = self
                .admit(admission::Request {
                    def,
                    sub,
                    operation: admission::Operation::Update,
                    object: &new,
                    old: Some(&old),
                    user: &caller.user,
                    dry_run: caller.dry_run,
                })
                .await?;
            if caller.dry_run {
                return Ok((new, warnings));
            }
            let moved = std::cell::Cell::new(false);
            let out = self.write(def, namespace, name, status_only, |cur| {
                if meta(cur, "resourceVersion") != meta(&old, "resourceVersion") {
                    moved.set(true);
                    return Err(ApiError::conflict(def, name));
                }
                Ok(candidate.clone())
            });
            if moved.get() {
                // Again from the object now stored: a conditional request then fails with
                // 409, an unconditional patch applies to it and is reviewed anew.
                continue;
            }
            return out.map(|v| (v, warnings));
        }
    }

    /// Deletes an object as kube-apiserver's registry does. `options` is the request's
    /// DeleteOptions: its `preconditions` (uid, resourceVersion) are checked, and its
    /// `propagationPolicy` (or `orphanDependents`) sets the garbage collector's finalizer
    /// (`foregroundDeletion`, `orphan`; batch/v1 Jobs orphan their dependents by default).
    /// An object left with finalizers is only marked (`deletionTimestamp` now,
    /// `deletionGracePeriodSeconds` 0, generation + 1, a MODIFIED event) until the last one
    /// is removed; one without is removed at once.
    pub fn delete(
        &self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        options: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        self.delete_locked(&mut inner, def, namespace, name, options)
    }

    fn delete_locked(
        &self,
        inner: &mut Inner,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
        options: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let old = inner
            .object(def.plural, &key)
            .ok_or_else(|| ApiError::not_found(def, name))?;
        check_preconditions(
            def,
            name,
            &old,
            options.and_then(|o| o.get("preconditions")),
        )?;
        let finalizers = garbage::deletion_finalizers(def, &old, options)?;
        if finalizers.is_empty() {
            return Ok(self.commit(inner, def, key, old, "DELETED"));
        }
        let mut marked = old.clone();
        if meta(&old, "deletionTimestamp").is_none() {
            set_meta(
                &mut marked,
                "deletionTimestamp",
                json!(mco_k8s::controller::pool_sync::now_rfc3339()),
            );
            set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
            if let Some(g) = old["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
                set_meta(&mut marked, "generation", json!(g + 1));
            }
        }
        set_meta(&mut marked, "finalizers", json!(finalizers));
        if marked == old {
            return Ok(old);
        }
        Ok(self.commit(inner, def, key, marked, "MODIFIED"))
    }

    /// Deletes a pod as the API server does (see the module documentation): marks it
    /// terminating for its grace period, or removes it when that is 0. `options` is the
    /// request's DeleteOptions (`gracePeriodSeconds`, `preconditions`).
    pub fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        options: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        self.delete_pod_locked(&mut inner, namespace, name, options)
    }

    fn delete_pod_locked(
        &self,
        inner: &mut Inner,
        namespace: &str,
        name: &str,
        options: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let def = resource("pods").ok_or_else(|| ApiError::bad_request("no pods"))?;
        let key = (namespace.to_string(), name.to_string());
        let old = inner
            .object("pods", &key)
            .ok_or_else(|| ApiError::not_found(def, name))?;
        check_preconditions(
            def,
            name,
            &old,
            options.and_then(|o| o.get("preconditions")),
        )?;
        let requested = options
            .and_then(|o| o.get("gracePeriodSeconds"))
            .and_then(Value::as_i64);
        let mut grace = requested
            .or_else(|| old["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(DEFAULT_GRACE_SECONDS);
        let unbound = old["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
        let finished = matches!(
            old["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        if unbound || finished {
            grace = 0;
        }
        if grace < 0 {
            grace = 1;
        }
        if grace == 0 {
            inner.terminating.remove(&key);
            return Ok(self.commit(inner, def, key, old, "DELETED"));
        }
        let grace_secs = grace.unsigned_abs();
        let now = Instant::now();
        let already = meta(&old, "deletionTimestamp").is_some();
        if already {
            // Only a deadline earlier than the current one changes anything.
            let current = inner.terminating.get(&key).map(|t| t.since + t.grace);
            if current.is_some_and(|end| now + Duration::from_secs(grace_secs) >= end) {
                return Ok(old);
            }
        }
        let mut pod = old.clone();
        let ends = std::time::SystemTime::now() + Duration::from_secs(grace_secs);
        set_meta(
            &mut pod,
            "deletionTimestamp",
            json!(mco_k8s::controller::pool_sync::rfc3339(ends)),
        );
        set_meta(&mut pod, "deletionGracePeriodSeconds", json!(grace));
        if !already {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
            set_meta(&mut pod, "generation", json!(g + 1));
        }
        inner.terminating.insert(
            key.clone(),
            Termination {
                uid: meta(&old, "uid").unwrap_or_default(),
                since: now,
                grace: Duration::from_secs(grace_secs),
            },
        );
        let out = self.commit(inner, def, key, pod, "MODIFIED");
        self.kubelet_wake.notify_one();
        Ok(out)
    }

    /// Evicts a pod: the budget check [`Store::block_eviction`] plays, then a graceful delete
    /// with the Eviction's `deleteOptions`.
    fn evict(&self, namespace: &str, name: &str, eviction: &Value) -> Result<(), ApiError> {
        let pods = resource("pods").ok_or_else(|| ApiError::bad_request("no pods"))?;
        let mut inner = self.lock();
        let key = (namespace.to_string(), name.to_string());
        let pod = inner
            .object("pods", &key)
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        let terminating = meta(&pod, "deletionTimestamp").is_some();
        // As the real handler: no budget covers a pod that is going or not running.
        let uncovered = terminating
            || matches!(
                pod["status"]["phase"].as_str(),
                Some("Pending" | "Succeeded" | "Failed")
            );
        if !uncovered {
            if let Some(n) = inner.blocked_evictions.get_mut(&key) {
                if *n > 0 {
                    *n -= 1;
                    return Err(ApiError::new(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    )
                    .about(pods, name));
                }
            }
            if let Some((budget_key, budget)) = budget_check(&inner, &pod)? {
                let pdbs = resource("poddisruptionbudgets")
                    .ok_or_else(|| ApiError::bad_request("no poddisruptionbudgets"))?;
                self.commit(&mut inner, pdbs, budget_key, budget, "MODIFIED");
            }
        }
        if !terminating {
            inner.evictions.push(key);
        }
        let options = eviction.get("deleteOptions").filter(|o| o.is_object());
        self.delete_pod_locked(&mut inner, namespace, name, options)
            .map(|_| ())
    }

    /// The changes a watch from `from` replays, and the live feed after them.
    fn watch_from(&self, plural: &str, from: u64) -> (Vec<Event>, broadcast::Receiver<Event>, u64) {
        let inner = self.lock();
        let rx = self.events.subscribe();
        let replay = if from == 0 {
            let def_plural = resource(plural).map(|d| d.plural).unwrap_or("");
            inner
                .objects
                .get(plural)
                .map(|m| {
                    m.values()
                        .map(|o| Event {
                            rv: meta(o, "resourceVersion")
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(0),
                            plural: def_plural,
                            type_: "ADDED",
                            object: o.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            inner
                .history
                .iter()
                .filter(|e| e.rv > from && e.plural == plural)
                .cloned()
                .collect()
        };
        (replay, rx, inner.rv)
    }
}

/// Selectors from a request's query.
#[derive(Debug, Default, Clone)]
struct Selectors {
    labels: Vec<(String, String, String)>,
    fields: Vec<(String, String, String)>,
}

fn parse_selector(s: &str, labels: bool) -> Result<Vec<(String, String, String)>, ApiError> {
    let mut out = Vec::new();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let parsed = if let Some((k, v)) = term.split_once("!=") {
            (k, "!=", v)
        } else if let Some((k, v)) = term.split_once("==") {
            (k, "=", v)
        } else if let Some((k, v)) = term.split_once('=') {
            (k, "=", v)
        } else if !labels {
            return Err(ApiError::bad_request(format!(
                "invalid field selector term {term:?}"
            )));
        } else if let Some(k) = term.strip_prefix('!') {
            (k, "!", "")
        } else {
            (term, "exists", "")
        };
        out.push((
            parsed.0.trim().to_string(),
            parsed.1.to_string(),
            parsed.2.trim().to_string(),
        ));
    }
    Ok(out)
}

impl Selectors {
    fn matches(&self, obj: &Value) -> bool {
        let labels = obj["metadata"]["labels"].as_object();
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        let label_ok = self.labels.iter().all(|(k, op, v)| match op.as_str() {
            "=" => label(k) == Some(v.as_str()),
            "!=" => label(k) != Some(v.as_str()),
            "!" => label(k).is_none(),
            _ => label(k).is_some(),
        });
        let field = |path: &str| {
            let mut cur = obj;
            for p in path.split('.') {
                cur = cur.get(p)?;
            }
            Some(match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
        };
        let field_ok = self.fields.iter().all(|(k, op, v)| {
            let got = field(k).unwrap_or_default();
            if op == "!=" {
                got != *v
            } else {
                got == *v
            }
        });
        label_ok && field_ok
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query(req: &Request<Incoming>) -> BTreeMap<String, String> {
    req.uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

fn full(code: StatusCode, v: &Value) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(v.to_string()))
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = code;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Adds the admission webhooks' warnings as the API server sends them: one
/// `Warning: 299 - "<text>"` header each.
fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let text = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = hyper::header::HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            r.headers_mut().append(hyper::header::WARNING, v);
        }
    }
    r
}

fn error(e: &ApiError) -> Response<Body> {
    if e.plain {
        let mut r = Response::new(
            Full::new(Bytes::from(format!("{}\n", e.message)))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        );
        *r.status_mut() = StatusCode::from_u16(e.code).unwrap_or(StatusCode::NOT_FOUND);
        let h = r.headers_mut();
        h.insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        h.insert(
            "x-content-type-options",
            hyper::header::HeaderValue::from_static("nosniff"),
        );
        return r;
    }
    let mut r = full(
        StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.to_status(),
    );
    if let Some(secs) = e.retry_after {
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from(secs),
        );
    }
    r
}

/// The request's target, parsed from its path.
struct Target {
    def: &'static ResourceDef,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Version,
    ApiVersions,
    Groups,
    Resources(String, String),
    Resource(Target),
}

/// Routes `path`; `serves` says whether a kind is served (its CRD installed).
fn route(path: &str, serves: &dyn Fn(&str) -> bool) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Ok(Route::Version),
        ["api"] => return Ok(Route::ApiVersions),
        ["apis"] => return Ok(Route::Groups),
        ["api", v] => return Ok(Route::Resources(String::new(), v.to_string())),
        ["apis", g, v] => return Ok(Route::Resources(g.to_string(), v.to_string())),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::page_not_found()),
    };
    // A built-in group version is a go-restful service: its 404 is a Status. Any other path
    // reaches the end of the delegation chain (aggregator, CRD handler): `http.NotFound`.
    let restful = builtin_group(group)
        && RESOURCES
            .iter()
            .any(|d| d.group == group && d.version == version);
    let not_found = || {
        if restful {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        } else {
            ApiError::page_not_found()
        }
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(not_found()),
    };
    let def = RESOURCES
        .iter()
        .find(|d| d.group == group && d.version == version && d.plural == plural)
        .filter(|d| serves(d.plural))
        .ok_or_else(not_found)?;
    if namespace.is_some() && !def.namespaced {
        return Err(not_found());
    }
    if def.namespaced && namespace.is_none() && name.is_some() {
        return Err(not_found());
    }
    Ok(Route::Resource(Target {
        def,
        namespace,
        name,
        sub,
    }))
}

fn discovery(group: &str, version: &str, serves: &dyn Fn(&str) -> bool) -> Result<Value, ApiError> {
    let defs: Vec<&ResourceDef> = RESOURCES
        .iter()
        .filter(|d| d.group == group && d.version == version && serves(d.plural))
        .collect();
    if defs.is_empty() {
        // No go-restful service, no CRD: the end of the delegation chain.
        return Err(ApiError::page_not_found());
    }
    let verbs = json!(["create", "delete", "get", "list", "patch", "update", "watch"]);
    let mut resources = Vec::new();
    for d in &defs {
        resources.push(json!({"name": d.plural, "singularName": d.kind.to_lowercase(), "namespaced": d.namespaced, "kind": d.kind, "verbs": verbs}));
        if d.status {
            resources.push(json!({"name": format!("{}/status", d.plural), "singularName": "", "namespaced": d.namespaced, "kind": d.kind, "verbs": ["get", "patch", "update"]}));
        }
        if d.plural == "pods" {
            resources.push(json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}));
        }
    }
    Ok(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": defs[0].api_version(),
        "resources": resources,
    }))
}

fn groups(serves: &dyn Fn(&str) -> bool) -> Value {
    let mut names: Vec<&str> = RESOURCES
        .iter()
        .filter(|d| d.is_custom() && serves(d.plural))
        .map(|d| d.group)
        .collect();
    names.sort_unstable();
    names.dedup();
    let groups: Vec<Value> = names
        .iter()
        .map(|g| {
            let gv = json!({"groupVersion": format!("{g}/v1"), "version": "v1"});
            json!({"name": g, "versions": [gv], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn for_list(def: &ResourceDef, mut obj: Value) -> Value {
    if !def.is_custom() {
        if let Some(m) = obj.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
        }
    }
    obj
}

fn watch_line(type_: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": type_, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

fn watch(
    store: &Arc<Store>,
    t: &Target,
    q: &BTreeMap<String, String>,
    sel: Selectors,
    agent: &str,
) -> Result<Response<Body>, ApiError> {
    let from: u64 = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => 0,
        Some(v) => v
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {v:?}")))?,
    };
    let mut timeout = Duration::from_secs(
        q.get("timeoutSeconds")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1800),
    );
    if let Some(cap) = *store.watch_cap.lock().unwrap_or_else(|e| e.into_inner()) {
        timeout = timeout.min(cap);
    }
    let bookmarks = q.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let def = t.def;
    let ns = t.namespace.clone();
    let wanted = move |e: &Event| {
        e.plural == def.plural
            && ns
                .as_deref()
                .is_none_or(|n| meta(&e.object, "namespace").as_deref() == Some(n))
            && sel.matches(&e.object)
    };
    let compacted = store.faults.compacted();
    let expired = from != 0 && from < compacted;
    if expired {
        store.faults.count_expired(agent, t.def.plural);
    }
    let (replay, mut live, mut last_rv) = store.watch_from(def.plural, from);
    let mut cut = store.faults.on_end_watches();
    let lagging = store.clone();
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    let open = OpenWatch::new(store.open_watches.clone());
    tokio::spawn(async move {
        let _open = open;
        if expired {
            // As etcd answers a watch from a compacted version: one ERROR event, then the end.
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "reason": "Expired", "code": 410,
                "message": format!("too old resource version: {from} ({compacted})")});
            let _ = tx.send(watch_line("ERROR", &status)).await;
            return;
        }
        for e in replay.iter().filter(|e| wanted(e)) {
            if tx.send(watch_line(e.type_, &e.object)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    if bookmarks {
                        let b = json!({"kind": def.kind, "apiVersion": def.api_version(),
                            "metadata": {"resourceVersion": last_rv.to_string()}});
                        let _ = tx.send(watch_line("BOOKMARK", &b)).await;
                    }
                    return;
                }
                _ = tx.closed() => return,
                _ = cut.recv() => return,
                got = live.recv() => match got {
                    Ok(e) => {
                        if e.rv <= last_rv {
                            continue;
                        }
                        last_rv = e.rv;
                        if !wanted(&e) {
                            continue;
                        }
                        if let Some(lag) = lagging.faults.watch_lag(def.plural) {
                            tokio::time::sleep(lag).await;
                        }
                        if tx.send(watch_line(e.type_, &e.object)).await.is_err() {
                            return;
                        }
                    }
                    // Fell behind or shutting down: end the watch; the client resumes from
                    // the last version it saw.
                    Err(_) => return,
                },
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}

/// What a request named, as authorization sees it: (namespace, object name); `None` where it
/// named none (see [`Store::requests_scoped`]).
pub type Named = (Option<String>, Option<String>);

/// The namespace in an API path (`.../namespaces/NS/PLURAL...`), if it names one.
fn path_namespace(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    parts
        .windows(3)
        .find(|w| w[0] == "namespaces" && !w[2].is_empty())
        .map(|w| w[1].to_string())
}

/// A request as [`Store::request_log`] records it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// When it came.
    pub at: std::time::Instant,
    /// The client's User-Agent (empty when none was sent).
    pub agent: String,
    /// `METHOD resource[/subresource]`, as [`Store::request_counts`] keys it.
    pub what: String,
    /// The object it named (see [`Store::requests_named`]).
    pub name: Option<String>,
    /// Its body (empty for reads).
    pub body: String,
}

/// Counts a watch as open while it lives.
struct OpenWatch(Arc<std::sync::atomic::AtomicUsize>);

impl OpenWatch {
    fn new(n: Arc<std::sync::atomic::AtomicUsize>) -> Self {
        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OpenWatch(n)
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body does not decode: {e}")))
}

/// A request answered by cutting the connection (the server is away, or a fault says so).
#[derive(Debug)]
struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection cut")
    }
}

impl std::error::Error for Cut {}

async fn handle(store: Arc<Store>, req: Request<Incoming>) -> Result<Response<Body>, Cut> {
    if store.faults.down() {
        return Err(Cut);
    }
    let mut cut_after = false;
    match serve(&store, req, &mut cut_after).await {
        Ok(_) | Err(_) if cut_after => Err(Cut),
        Ok(r) => Ok(r),
        Err(e) if e.reset => Err(Cut),
        Err(e) => Ok(error(&e)),
    }
}

/// Serves `req`; `cut_after` is set when a fault says the answer is to be cut off.
async fn serve(
    store: &Arc<Store>,
    req: Request<Incoming>,
    cut_after: &mut bool,
) -> Result<Response<Body>, ApiError> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let q = query(&req);
    let agent = req
        .headers()
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // Authentication: a bearer token is taken as the user's name (tests name their users);
    // a request without one acts as the cluster's admin, as kubectl with an admin kubeconfig.
    let user = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or(ADMIN)
        .to_string();
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the body: {e}")))?
        .to_bytes();
    let routed = route(&path, &|p| store.serves(p));
    if routed.is_err() {
        // Requests for resources the server does not serve count too (by path), as the
        // real server's request metrics count them; a watch as a WATCH.
        let watching = q.get("watch").is_some_and(|w| w == "true" || w == "1");
        let what = match watching {
            true => format!("WATCH {path}"),
            false => format!("{method} {path}"),
        };
        let mut inner = store.lock();
        *inner.requests.entry(what.clone()).or_default() += 1;
        inner
            .agent_names
            .entry((agent.clone(), what.clone()))
            .or_default()
            .insert(None);
        inner
            .agent_targets
            .entry((agent.clone(), what.clone()))
            .or_default()
            .insert((path_namespace(&path), None));
        *inner
            .agent_requests
            .entry((agent.clone(), what))
            .or_default() += 1;
    }
    let t = match routed? {
        Route::Version => {
            return Ok(full(
                StatusCode::OK,
                &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-mco-test",
                        "platform": "linux/amd64"}),
            ))
        }
        Route::ApiVersions => {
            return Ok(full(
                StatusCode::OK,
                &json!({"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": []}),
            ))
        }
        Route::Groups => return Ok(full(StatusCode::OK, &groups(&|p| store.serves(p)))),
        Route::Resources(g, v) => {
            let found = discovery(&g, &v, &|p| store.serves(p))?;
            return Ok(full(StatusCode::OK, &found));
        }
        Route::Resource(t) => t,
    };
    let def = t.def;
    {
        let mut inner = store.lock();
        let what = match &t.sub {
            Some(s) => format!("{method} {}/{s}", def.plural),
            None if t.name.is_none() && q.get("watch").is_some_and(|w| w == "true" || w == "1") => {
                format!("WATCH {}", def.plural)
            }
            None if t.name.is_none() && method == Method::GET => format!("LIST {}", def.plural),
            None => format!("{method} {}", def.plural),
        };
        // The name authorization sees: the path's, or a list's or watch's exact
        // `metadata.name` field selector.
        let name = t.name.clone().or_else(|| {
            parse_selector(q.get("fieldSelector").map_or("", |s| s), false)
                .ok()?
                .into_iter()
                .find(|(k, op, _)| k == "metadata.name" && op == "=")
                .map(|(_, _, v)| v)
        });
        *inner.requests.entry(what.clone()).or_default() += 1;
        inner.request_log.push(Logged {
            at: std::time::Instant::now(),
            agent: agent.clone(),
            what: what.clone(),
            name: name.clone(),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        inner
            .agent_targets
            .entry((agent.clone(), what.clone()))
            .or_default()
            .insert((t.namespace.clone(), name.clone()));
        inner
            .agent_names
            .entry((agent.clone(), what.clone()))
            .or_default()
            .insert(name);
        let verb = what.split(' ').next().unwrap_or("").to_string();
        *inner
            .agent_requests
            .entry((agent.clone(), what))
            .or_default() += 1;
        drop(inner);
        match store.faults.take(&verb, def.plural, &agent) {
            Some(super::faults::Refusal::ResetAfterDoing) => *cut_after = true,
            Some(r) => return Err(ApiError::refused(r)),
            None => {}
        }
    }
    let ns = t.namespace.clone().unwrap_or_default();
    // `dryRun=All`: admission runs, nothing is stored (`kubectl apply --dry-run=server`).
    let caller = Caller {
        user,
        dry_run: q.get("dryRun").is_some_and(|v| v == "All"),
    };
    match (&method, &t.name, t.sub.as_deref()) {
        (&Method::GET, None, None) => {
            let sel = Selectors {
                labels: parse_selector(q.get("labelSelector").map_or("", |s| s), true)?,
                fields: parse_selector(q.get("fieldSelector").map_or("", |s| s), false)?,
            };
            if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
                return watch(store, &t, &q, sel, &agent);
            }
            let limit = match q.get("limit").map(|l| l.parse::<i64>()) {
                None => 0,
                Some(Ok(l)) => l.max(0),
                Some(Err(_)) => {
                    return Err(ApiError::bad_request(format!(
                        "limit: Invalid value: {:?}",
                        q.get("limit").map_or("", |l| l)
                    )))
                }
            };
            let mut inner = store.lock();
            let (rv, items) = match q.get("continue").filter(|c| !c.is_empty()) {
                Some(token) => {
                    let page = inner
                        .pages
                        .remove(token)
                        .filter(|(rv, _)| *rv >= store.faults.compacted());
                    page.ok_or_else(ApiError::continue_expired)?
                }
                None => {
                    let items = inner
                        .objects
                        .get(def.plural)
                        .map(|m| {
                            m.iter()
                                .filter(|((ons, _), _)| {
                                    t.namespace.as_ref().is_none_or(|n| n == ons)
                                })
                                .map(|(_, o)| o)
                                .filter(|o| sel.matches(o))
                                .map(|o| for_list(def, o.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    (inner.rv, items)
                }
            };
            let mut metadata = json!({"resourceVersion": rv.to_string()});
            let mut items = items;
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            if limit > 0 && items.len() > limit {
                let rest = items.split_off(limit);
                inner.next_page += 1;
                let token = format!("page-{}-{rv}", inner.next_page);
                if sel.labels.is_empty() && sel.fields.is_empty() {
                    metadata["remainingItemCount"] = json!(rest.len());
                }
                metadata["continue"] = json!(token);
                inner.pages.insert(token, (rv, rest));
            }
            let list = json!({
                "kind": format!("{}List", def.kind),
                "apiVersion": def.api_version(),
                "metadata": metadata,
                "items": items,
            });
            Ok(full(StatusCode::OK, &list))
        }
        (&Method::GET, Some(name), None | Some("status")) => {
            let obj = store
                .get(def.plural, &ns, name)
                .ok_or_else(|| ApiError::not_found(def, name))?;
            Ok(full(StatusCode::OK, &obj))
        }
        (&Method::POST, None, None) => {
            if def.namespaced && t.namespace.is_none() {
                return Err(ApiError::new(
                    405,
                    "MethodNotAllowed",
                    "create needs a namespace",
                ));
            }
            let mut obj = parse_body(&body)?;
            let warnings = if obj.is_object() {
                // Reviewed as it would be stored: its type filled in, a custom resource's
                // status dropped (both happen before validating admission).
                let mut reviewed = obj.clone();
                reviewed["apiVersion"] = json!(def.api_version());
                reviewed["kind"] = json!(def.kind);
                if def.is_custom() && def.status {
                    if let Some(m) = reviewed.as_object_mut() {
                        m.remove("status");
                    }
                }
                let w = store
                    .admit(admission::Request {
                        def,
                        sub: None,
                        operation: admission::Operation::Create,
                        object: &reviewed,
                        old: None,
                        user: &caller.user,
                        dry_run: caller.dry_run,
                    })
                    .await?;
                obj = reviewed;
                w
            } else {
                Vec::new()
            };
            if caller.dry_run {
                return Ok(with_warnings(full(StatusCode::CREATED, &obj), &warnings));
            }
            let obj = store.create(def, &ns, obj)?;
            Ok(with_warnings(full(StatusCode::CREATED, &obj), &warnings))
        }
        (&Method::POST, Some(name), Some("eviction")) if def.plural == "pods" => {
            let ev = parse_body(&body)?;
            if meta(&ev, "name").is_some_and(|n| n != *name) {
                return Err(ApiError::bad_request(
                    "name in URL does not match name in Eviction object",
                ));
            }
            store.evict(&ns, name, &ev)?;
            Ok(full(
                StatusCode::CREATED,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success", "code": 201}),
            ))
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            let status_only = sub.is_some();
            if status_only && !def.status {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ));
            }
            let obj = parse_body(&body)?;
            if def.is_custom() && meta(&obj, "resourceVersion").is_none_or(|v| v.is_empty()) {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!("{} {name:?} is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update", def.kind),
                )
                .about(def, name));
            }
            let (out, warnings) = store
                .write_admitted(def, &ns, name, sub, &caller, |_| Ok(obj.clone()))
                .await?;
            Ok(with_warnings(full(StatusCode::OK, &out), &warnings))
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            let status_only = sub.is_some();
            if status_only && !def.status {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ));
            }
            let patch = parse_body(&body)?;
            let kind = content_type
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            // As the real server: custom resources have no strategic-merge schema.
            if def.is_custom() && kind == "application/strategic-merge-patch+json" {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            let (out, warnings) = store.write_admitted(def, &ns, name, sub, &caller, |old| {
                let mut doc = old.clone();
                match kind.as_str() {
                    "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                        if !patch.is_object() {
                            return Err(ApiError::bad_request("a merge patch must be an object"));
                        }
                        merge_patch(&mut doc, &patch);
                        // Without a version in the patch, the write is unconditional.
                        if meta(&patch, "resourceVersion").is_none() {
                            set_meta(&mut doc, "resourceVersion", json!(meta(old, "resourceVersion")));
                        }
                    }
                    "application/json-patch+json" => {
                        json_patch(&mut doc, &patch).map_err(|e| {
                            ApiError::new(422, "Invalid", format!("the JSON patch does not apply: {}", e.0))
                                .about(def, name)
                        })?;
                    }
                    other => {
                        return Err(ApiError::new(
                            415,
                            "UnsupportedMediaType",
                            format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (got {other:?})"),
                        ))
                    }
                }
                Ok(doc)
            }).await?;
            Ok(with_warnings(full(StatusCode::OK, &out), &warnings))
        }
        (&Method::DELETE, Some(name), None) => {
            let opts = if body.is_empty() {
                None
            } else {
                Some(parse_body(&body)?)
            };
            // Validating admission sees the stored object as oldObject, and no object.
            if let Some(stored) = store.get(def.plural, &ns, name) {
                store
                    .admit(admission::Request {
                        def,
                        sub: None,
                        operation: admission::Operation::Delete,
                        object: &Value::Null,
                        old: Some(&stored),
                        user: &caller.user,
                        dry_run: caller.dry_run,
                    })
                    .await?;
            }
            let out = if def.plural == "pods" {
                store.delete_pod(&ns, name, opts.as_ref())?
            } else {
                store.delete(def, &ns, name, opts.as_ref())?
            };
            Ok(full(StatusCode::OK, &out))
        }
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({method} {path})"
            ),
        )),
    }
}

/// Who asks, and whether only to see what would happen.
struct Caller {
    /// The authenticated user.
    user: String,
    /// `dryRun=All`.
    dry_run: bool,
}

/// The user of requests without a bearer token.
pub const ADMIN: &str = "kubernetes-admin";

/// A running server.
pub struct ApiServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its objects.
    pub store: Arc<Store>,
    task: JoinHandle<()>,
    kubelet: JoinHandle<()>,
    collector: JoinHandle<()>,
}

impl ApiServer {
    /// Starts a server on an ephemeral port of 127.0.0.1.
    pub async fn start() -> std::io::Result<ApiServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let store = Arc::new(Store::new());
        let st = store.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                // Away: the connection is closed at once, as a server that is not there.
                if st.faults.down() {
                    drop(sock);
                    continue;
                }
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let st = st.clone();
                        async move { handle(st, req).await }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(sock), svc)
                        .await;
                });
            }
        });
        let kubelet = tokio::spawn(store.clone().run_kubelet());
        let collector = tokio::spawn(store.clone().run_garbage_collector());
        Ok(ApiServer {
            addr,
            store,
            task,
            kubelet,
            collector,
        })
    }

    /// Writes a kubeconfig naming this server (plain HTTP, no credentials) to `path`, for
    /// binaries started as processes.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: http://{}\n\
             users:\n- name: test\n  user: {{}}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n\
             current-context: test\n",
            self.addr
        );
        std::fs::write(path, text)
    }

    /// A kube client talking to this server.
    pub fn client(&self) -> kube::Client {
        self.client_with(kube::Config::new(self.url()))
    }

    /// A kube client sending `agent` as its User-Agent (see
    /// [`Store::request_counts_by_agent`]).
    pub fn client_as(&self, agent: &str) -> kube::Client {
        let mut config = kube::Config::new(self.url());
        let value = hyper::header::HeaderValue::from_str(agent)
            .unwrap_or_else(|e| panic!("user agent {agent:?}: {e}"));
        config.headers.push((hyper::header::USER_AGENT, value));
        self.client_with(config)
    }

    /// A kube client authenticated as `user` (its bearer token; see the server's
    /// authentication in `serve`), sending `agent` as its User-Agent.
    pub fn client_for(&self, user: &str, agent: &str) -> kube::Client {
        let mut config = kube::Config::new(self.url());
        for (header, value) in [
            (hyper::header::USER_AGENT, agent.to_string()),
            (hyper::header::AUTHORIZATION, format!("Bearer {user}")),
        ] {
            let value = hyper::header::HeaderValue::from_str(&value)
                .unwrap_or_else(|e| panic!("{header}: {value:?}: {e}"));
            config.headers.push((header, value));
        }
        self.client_with(config)
    }

    fn url(&self) -> hyper::Uri {
        format!("http://{}", self.addr)
            .parse()
            .unwrap_or_else(|e| panic!("server address: {e}"))
    }

    fn client_with(&self, config: kube::Config) -> kube::Client {
        mco_k8s::kubeclient::client_from(config).unwrap_or_else(|e| panic!("kube client: {e}"))
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.task.abort();
        self.kubelet.abort();
        self.collector.abort();
    }
}
