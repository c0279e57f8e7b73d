//! What the build controller reads of a `batch/v1` Job: its name, labels, creation and
//! deletion, and its status counters and terminal conditions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A `batch/v1` Job reduced to what the build controller decides from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` ("" when unknown).
    #[serde(default)]
    pub uid: String,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `metadata.creationTimestamp` (RFC 3339), if set.
    #[serde(default)]
    pub creation_timestamp: Option<String>,
    /// Whether `metadata.deletionTimestamp` is set (or the Job was deleted).
    #[serde(default)]
    pub deleting: bool,
    /// `status.active`.
    #[serde(default)]
    pub active: i32,
    /// `status.succeeded`.
    #[serde(default)]
    pub succeeded: i32,
    /// `status.failed`.
    #[serde(default)]
    pub failed: i32,
    /// Whether `status.uncountedTerminatedPods` is set.
    #[serde(default)]
    pub uncounted_terminated: bool,
    /// `status.conditions` of type `Complete` or `Failed` that are True.
    #[serde(default)]
    pub conditions: Vec<JobCondition>,
}

/// A True terminal condition of a Job.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// `Complete` or `Failed`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The Job controller's reason (`BackoffLimitExceeded`, `DeadlineExceeded`, ...).
    #[serde(default)]
    pub reason: String,
    /// Its message.
    #[serde(default)]
    pub message: String,
}

impl JobView {
    /// The Job from its Kubernetes JSON (what `kubectl get job -o json` prints).
    pub fn from_json(v: &serde_json::Value) -> JobView {
        let md = &v["metadata"];
        let st = &v["status"];
        let int = |k: &str| {
            st[k]
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(0)
        };
        let labels = md["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let conditions = st["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"].as_str() == Some("True"))
            .filter_map(|c| {
                let type_ = c["type"].as_str()?;
                (type_ == "Complete" || type_ == "Failed").then(|| JobCondition {
                    type_: type_.to_string(),
                    reason: c["reason"].as_str().unwrap_or("").to_string(),
                    message: c["message"].as_str().unwrap_or("").to_string(),
                })
            })
            .collect();
        JobView {
            name: md["name"].as_str().unwrap_or("").to_string(),
            uid: md["uid"].as_str().unwrap_or("").to_string(),
            labels,
            creation_timestamp: md["creationTimestamp"].as_str().map(str::to_string),
            deleting: md["deletionTimestamp"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            active: int("active"),
            succeeded: int("succeeded"),
            failed: int("failed"),
            uncounted_terminated: !st["uncountedTerminatedPods"].is_null(),
            conditions,
        }
    }

    /// The True `Failed` condition, if any.
    pub fn failed_condition(&self) -> Option<&JobCondition> {
        self.conditions.iter().find(|c| c.type_ == "Failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_counters_and_true_terminal_conditions() {
        let j = JobView::from_json(&json!({
            "metadata": {"name": "build-x", "uid": "u1", "labels": {"a": "b"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"failed": 4, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"},
                {"type": "Complete", "status": "False"},
                {"type": "Suspended", "status": "True"}
            ]}
        }));
        assert_eq!(j.name, "build-x");
        assert_eq!(j.failed, 4);
        assert!(!j.deleting);
        assert_eq!(j.conditions.len(), 1);
        assert_eq!(
            j.failed_condition().map(|c| c.reason.as_str()),
            Some("BackoffLimitExceeded")
        );
        assert_eq!(j.labels.get("a").map(String::as_str), Some("b"));
    }

    #[test]
    fn deletion_timestamp_marks_deleting() {
        let j = JobView::from_json(&json!({
            "metadata": {"name": "j", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"uncountedTerminatedPods": {}}
        }));
        assert!(j.deleting);
        assert!(j.uncounted_terminated);
    }
}
