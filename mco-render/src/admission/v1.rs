//! The `admission.k8s.io/v1` AdmissionReview a validating webhook receives and answers.
//!
//! Only the fields a validating webhook reads or writes are typed; the rest of a request
//! (`userInfo`, `options`, `requestKind`, ...) is kept in `extra`.

use super::in_use::{delete_refusal, users_of, User};
use super::{review, ClusterView, Finding, FindingKind, Findings, Operation, ReviewOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `admission.k8s.io/v1`.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// An AdmissionReview: a request from the API server, or the webhook's response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    pub api_version: String,
    /// `AdmissionReview`.
    pub kind: String,
    /// The request (set by the API server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The response (set by the webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// API group (empty for core).
    #[serde(default)]
    pub group: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// What the API server asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Echoed in the response.
    pub uid: String,
    /// The object's kind.
    #[serde(default)]
    pub kind: GroupVersionKind,
    /// The object's name (empty when the server generates it).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub name: String,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// The object as it would be stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The stored object (UPDATE and DELETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// Whether nothing will be stored (`kubectl apply --dry-run=server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A rejection's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// HTTP-like code: 422.
    pub code: u16,
    /// The errors, one per line.
    pub message: String,
    /// `Invalid`.
    pub reason: String,
    /// `Failure`.
    pub status: String,
}

/// The webhook's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionResponse {
    /// The request's uid.
    pub uid: String,
    /// Whether the object is admitted.
    pub allowed: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Warnings kubectl prints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Why a body is not an AdmissionReview request.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON of the right shape.
    #[error("not an AdmissionReview: {0}")]
    Json(#[from] serde_json::Error),
    /// No `request`.
    #[error("the AdmissionReview has no request")]
    NoRequest,
    /// Another API version.
    #[error("unsupported AdmissionReview apiVersion {0:?} (want admission.k8s.io/v1)")]
    Version(String),
}

impl AdmissionResponse {
    /// The response to `uid` for these findings: 422 `Invalid` with the errors one per line,
    /// or allowed with the warnings.
    pub fn from_findings(uid: &str, findings: &Findings) -> Self {
        let status = (!findings.allowed()).then(|| Status {
            code: 422,
            message: findings
                .errors
                .iter()
                .map(|f| f.message.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            reason: "Invalid".to_string(),
            status: "Failure".to_string(),
        });
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: findings.allowed(),
            status,
            warnings: findings
                .warnings
                .iter()
                .map(|f| f.message.clone())
                .collect(),
        }
    }
}

impl AdmissionReview {
    /// Wraps a response.
    pub fn response(response: AdmissionResponse) -> Self {
        AdmissionReview {
            api_version: API_VERSION.to_string(),
            kind: "AdmissionReview".to_string(),
            request: None,
            response: Some(response),
        }
    }
}

/// Reviews one request: CREATE and UPDATE go through [`review`]; the DELETE of a
/// MachineConfig is refused while a pool or node of `cluster` names it
/// ([`super::in_use`]); anything else is allowed.
pub fn review_request(
    request: &AdmissionRequest,
    cluster: &ClusterView,
    opts: &ReviewOptions,
) -> (Findings, AdmissionResponse) {
    review_request_with(request, cluster, opts, &|name| cluster_users(cluster, name))
}

/// The pools and nodes of `cluster` naming the MachineConfig `name`.
pub fn cluster_users(cluster: &ClusterView, name: &str) -> Vec<User> {
    let m = cluster.manifests();
    let pools: Vec<_> = m.pools.iter().map(|(_, p)| p).collect();
    let nodes: Vec<_> = m.nodes.iter().map(|(_, n)| n).collect();
    users_of(name, &pools, &nodes)
}

/// [`review_request`] with the users of a MachineConfig read by `users` (the webhook reads
/// them from its own caches of pools and Nodes).
pub fn review_request_with(
    request: &AdmissionRequest,
    cluster: &ClusterView,
    opts: &ReviewOptions,
    users: &dyn Fn(&str) -> Vec<User>,
) -> (Findings, AdmissionResponse) {
    if request.operation == "DELETE" {
        let mut findings = Findings::default();
        let name = match request.name.as_str() {
            "" => request
                .old_object
                .as_ref()
                .and_then(|o| o.pointer("/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or_default(),
            n => n,
        };
        if request.kind.kind == "MachineConfig" && !name.is_empty() {
            if let Some(message) = delete_refusal(name, &users(name)) {
                findings.errors.push(Finding {
                    kind: FindingKind::InUse,
                    message,
                });
            }
        }
        // 409: the object is fine, the cluster's state forbids its removal now.
        let mut response = AdmissionResponse::from_findings(&request.uid, &findings);
        if let Some(status) = response.status.as_mut() {
            status.code = 409;
            status.reason = "Conflict".to_string();
        }
        return (findings, response);
    }
    let operation = match request.operation.as_str() {
        "CREATE" => Some(Operation::Create),
        "UPDATE" => Some(Operation::Update),
        _ => None,
    };
    let findings = match (operation, &request.object) {
        (Some(op), Some(obj)) => {
            // The request's kind is authoritative; objects usually carry it too.
            let mut obj = obj.clone();
            if let Some(o) = obj.as_object_mut() {
                if !request.kind.kind.is_empty() {
                    o.insert("kind".into(), Value::String(request.kind.kind.clone()));
                }
            }
            let mut old = request.old_object.clone();
            if let Some(o) = old.as_mut().and_then(Value::as_object_mut) {
                if !request.kind.kind.is_empty() {
                    o.insert("kind".into(), Value::String(request.kind.kind.clone()));
                }
            }
            review(&obj, op, old.as_ref(), cluster, opts)
        }
        _ => Findings::default(),
    };
    let response = AdmissionResponse::from_findings(&request.uid, &findings);
    (findings, response)
}

/// Decodes an AdmissionReview body, reviews its request and encodes the response review.
pub fn handle(
    body: &[u8],
    cluster: &ClusterView,
    opts: &ReviewOptions,
) -> Result<Vec<u8>, DecodeError> {
    let review: AdmissionReview = serde_json::from_slice(body)?;
    if review.api_version != API_VERSION {
        return Err(DecodeError::Version(review.api_version));
    }
    let request = review.request.ok_or(DecodeError::NoRequest)?;
    let (_, response) = review_request(&request, cluster, opts);
    Ok(serde_json::to_vec(&AdmissionReview::response(response))?)
}

/// [`handle`] with the users of a MachineConfig read by `users` ([`review_request_with`]).
pub fn handle_with(
    body: &[u8],
    cluster: &ClusterView,
    opts: &ReviewOptions,
    users: &dyn Fn(&str) -> Vec<User>,
) -> Result<Vec<u8>, DecodeError> {
    let review: AdmissionReview = serde_json::from_slice(body)?;
    if review.api_version != API_VERSION {
        return Err(DecodeError::Version(review.api_version));
    }
    let request = review.request.ok_or(DecodeError::NoRequest)?;
    let (_, response) = review_request_with(&request, cluster, opts, users);
    Ok(serde_json::to_vec(&AdmissionReview::response(response))?)
}
