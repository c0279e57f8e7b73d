//! MachineConfigNode: one per Node, the daemon's report of where the node's update stands
//! (upstream's `machineconfiguration.openshift.io/v1` MachineConfigNode and the condition
//! bookkeeping of its daemon's upgrade monitor).

use super::condition::Condition;
use super::meta::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The placeholder upstream writes as `status.configVersion.desired` before a desired config
/// is known.
pub const NOT_YET_SET: &str = "not-yet-set";

/// The condition types of a MachineConfigNode, in the order upstream fills them in.
pub mod conditions {
    /// The update was checked for compatibility (parent).
    pub const UPDATE_PREPARED: &str = "UpdatePrepared";
    /// The update is being carried out: cordon, drain, files and OS (parent).
    pub const UPDATE_EXECUTED: &str = "UpdateExecuted";
    /// The post-update action (reboot, reload or none) is done (parent).
    pub const UPDATE_POST_ACTION_COMPLETE: &str = "UpdatePostActionComplete";
    /// The update is complete: the node is uncordoned (parent).
    pub const UPDATE_COMPLETE: &str = "UpdateComplete";
    /// The daemon resumed normal operation on the new config (parent).
    pub const RESUMED: &str = "Resumed";
    /// The node was drained (child of UpdateExecuted).
    pub const DRAINED: &str = "Drained";
    /// Files and OS were written (child of UpdateExecuted).
    pub const APPLIED_FILES_AND_OS: &str = "AppliedFilesAndOS";
    /// The node was cordoned (child of UpdateExecuted).
    pub const CORDONED: &str = "Cordoned";
    /// The node rebooted into the new config.
    pub const REBOOTED_NODE: &str = "RebootedNode";
    /// The node is on its desired config (parent; setting it True resets the others).
    pub const UPDATED: &str = "Updated";
    /// The node was uncordoned (child of UpdateComplete).
    pub const UNCORDONED: &str = "Uncordoned";
    /// The update failed (parent).
    pub const NODE_DEGRADED: &str = "NodeDegraded";
    /// The node is pulling the images of its pool's PinnedImageSets (a singleton: no child).
    pub const PINNED_IMAGE_SETS_PROGRESSING: &str = "PinnedImageSetsProgressing";
    /// Pulling or pinning the PinnedImageSets' images failed (a singleton: no child).
    pub const PINNED_IMAGE_SETS_DEGRADED: &str = "PinnedImageSetsDegraded";

    /// Every condition type a MachineConfigNode carries, in upstream's order (without the
    /// image-mode ones, which this project does not manage).
    pub const ALL: [&str; 14] = [
        UPDATE_PREPARED,
        UPDATE_EXECUTED,
        UPDATE_POST_ACTION_COMPLETE,
        UPDATE_COMPLETE,
        RESUMED,
        DRAINED,
        APPLIED_FILES_AND_OS,
        CORDONED,
        REBOOTED_NODE,
        UPDATED,
        UNCORDONED,
        NODE_DEGRADED,
        PINNED_IMAGE_SETS_DEGRADED,
        PINNED_IMAGE_SETS_PROGRESSING,
    ];
}

/// A MachineConfigNode object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNode {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `MachineConfigNode`.
    #[serde(default)]
    pub kind: String,
    /// Metadata (the name is the node's).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The node, its pool and its desired config.
    #[serde(default)]
    pub spec: MachineConfigNodeSpec,
    /// Where the node's update stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineConfigNodeStatus>,
}

/// A reference to an MCO object by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub struct McoObjectReference {
    /// The object's name.
    #[serde(default)]
    pub name: String,
}

/// The node, its pool and its desired config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeSpec {
    /// The Node this object reports on.
    #[serde(default)]
    pub node: McoObjectReference,
    /// The node's pool.
    #[serde(default)]
    pub pool: McoObjectReference,
    /// The config the node is to run.
    #[serde(default)]
    pub config_version: SpecConfigVersion,
}

/// The desired config in the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub struct SpecConfigVersion {
    /// The rendered MachineConfig the node is to run.
    #[serde(default)]
    pub desired: String,
}

/// The current and desired config in the status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub struct StatusConfigVersion {
    /// The rendered MachineConfig the node runs.
    #[serde(default)]
    pub current: String,
    /// The rendered MachineConfig the node is updating to (`not-yet-set` before one is known).
    #[serde(default)]
    pub desired: String,
}

/// Where the node's update stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeStatus {
    /// The phases of the update, one condition per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
    /// The generation of the object the status was written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The node's current and desired configs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_version: Option<StatusConfigVersion>,
    /// The current, desired and failed generations of the node's PinnedImageSets (at most 100).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<PinnedImageSetGenerations>>", length(max = 100))]
    pub pinned_image_sets: Vec<PinnedImageSetGenerations>,
    /// The storage sections (disks, filesystems, RAID, LUKS) of the node's target config that
    /// differ from the config the node was provisioned with: changes an
    /// `irreconcilableValidationOverrides` let render that only new nodes get (at most 32).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<IrreconcilableChangeDiff>>", length(max = 32))]
    pub irreconcilable_changes: Vec<IrreconcilableChangeDiff>,
}

/// One difference between the node's provisioning-time config and its target config
/// (`status.irreconcilableChanges[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IrreconcilableChangeDiff {
    /// Where the configs differ, from `spec.` (`spec.config.storage.disks[0].device`).
    #[serde(default)]
    pub field_path: String,
    /// The difference: `- old` and `+ new` lines of compact JSON, list neighbours as context.
    #[serde(default)]
    pub diff: String,
}

/// Where one PinnedImageSet stands on the node (`status.pinnedImageSets[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedImageSetGenerations {
    /// The PinnedImageSet's name.
    #[serde(default)]
    pub name: String,
    /// The generation whose images were last pulled and pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_generation: Option<i32>,
    /// The generation the node is to pull and pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_generation: Option<i32>,
    /// The generation whose pull or pin last failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failed_generation: Option<i32>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failed_generation_error: Option<String>,
}

impl MachineConfigNodeStatus {
    /// The condition of a type.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Whether the daemon reports the node updated to `config`: `Updated` True and `config`
    /// as the current config.
    pub fn is_updated_on(&self, config: &str) -> bool {
        self.condition(conditions::UPDATED)
            .is_some_and(Condition::is_true)
            && self
                .config_version
                .as_ref()
                .is_some_and(|v| v.current == config)
    }

    /// Records a phase as upstream's upgrade monitor does: `parent` (and `child`, when the
    /// phase has one) replace the conditions of their types. The first record fills in every
    /// other type of [`conditions::ALL`] as False `NotYetOccurred`. A parent equal to the one
    /// held (status, reason, message) changes nothing and returns false. A parent `Updated`
    /// resets every other condition that is not False to False, its message prefixed with
    /// `Action during update to <desired>: `; any other parent turns a True `Updated` False.
    /// `lastTransitionTime` is `now` for a condition whose status changes, and kept otherwise.
    pub fn record(
        &mut self,
        parent: &Condition,
        child: Option<&Condition>,
        desired: &str,
        now: &str,
    ) -> bool {
        if self
            .condition(&parent.type_)
            .is_some_and(|c| same(c, parent))
        {
            return false;
        }
        let fresh = self.conditions.is_empty();
        let reset = parent.type_ == conditions::UPDATED;
        let old = std::mem::take(&mut self.conditions);
        let stamp = |mut c: Condition, before: Option<&Condition>| {
            c.last_transition_time = match before {
                Some(b) if b.status == c.status && b.last_transition_time.is_some() => {
                    b.last_transition_time.clone()
                }
                _ => Some(now.to_string()),
            };
            c
        };
        let mut out: Vec<Condition> = Vec::new();
        for c in &old {
            let next = if c.type_ == parent.type_ {
                stamp(parent.clone(), Some(c))
            } else if let Some(ch) = child.filter(|ch| ch.type_ == c.type_) {
                stamp(ch.clone(), Some(c))
            } else if c.type_ == conditions::UPDATED && c.is_true() {
                stamp(
                    Condition {
                        type_: conditions::UPDATED.into(),
                        status: "False".into(),
                        reason: Some(conditions::UPDATED.into()),
                        message: Some(
                            "This node is not updated, sensed disruption via a manual update."
                                .into(),
                        ),
                        last_transition_time: None,
                    },
                    Some(c),
                )
            } else if reset && c.status != "False" {
                Condition {
                    status: "False".into(),
                    message: Some(format!(
                        "Action during update to {desired}: {}",
                        c.message()
                    )),
                    last_transition_time: Some(now.to_string()),
                    ..c.clone()
                }
            } else {
                c.clone()
            };
            out.push(next);
        }
        for c in [Some(parent), child].into_iter().flatten() {
            if !out.iter().any(|o| o.type_ == c.type_) {
                out.push(stamp(c.clone(), None));
            }
        }
        if fresh {
            for t in conditions::ALL {
                if !out.iter().any(|o| o.type_ == t) {
                    out.push(Condition {
                        type_: t.into(),
                        status: "False".into(),
                        reason: Some("NotYetOccurred".into()),
                        message: Some(format!("This node has not yet entered the {t} phase")),
                        last_transition_time: Some(now.to_string()),
                    });
                }
            }
        }
        self.conditions = out;
        true
    }
}

impl MachineConfigNodeStatus {
    /// Records a singleton condition (the PinnedImageSets ones: no child, no phase order):
    /// it replaces the condition of its type, its `lastTransitionTime` `now` when the status
    /// changes. The first record fills in the other types of [`conditions::ALL`] as False
    /// `NotYetOccurred`, as [`Self::record`] does. Unlike a parent, it leaves `Updated` and
    /// the update's phases alone. Returns whether anything changed.
    pub fn record_singleton(&mut self, cond: &Condition, now: &str) -> bool {
        let before = self.condition(&cond.type_);
        if before.is_some_and(|c| same(c, cond)) {
            return false;
        }
        let mut next = cond.clone();
        next.last_transition_time = match before {
            Some(b) if b.status == cond.status && b.last_transition_time.is_some() => {
                b.last_transition_time.clone()
            }
            _ => Some(now.to_string()),
        };
        let fresh = self.conditions.is_empty();
        match self.conditions.iter_mut().find(|c| c.type_ == cond.type_) {
            Some(c) => *c = next,
            None => self.conditions.push(next),
        }
        if fresh {
            for t in conditions::ALL {
                if self.condition(t).is_none() {
                    self.conditions.push(Condition {
                        type_: t.into(),
                        status: "False".into(),
                        reason: Some("NotYetOccurred".into()),
                        message: Some(format!("This node has not yet entered the {t} phase")),
                        last_transition_time: Some(now.to_string()),
                    });
                }
            }
        }
        true
    }
}

fn same(a: &Condition, b: &Condition) -> bool {
    a.status == b.status && a.reason() == b.reason() && a.message() == b.message()
}

#[cfg(test)]
mod tests {
    use super::conditions::*;
    use super::*;

    fn cond(t: &str, s: &str, r: &str, m: &str) -> Condition {
        Condition {
            type_: t.into(),
            status: s.into(),
            reason: Some(r.into()),
            message: Some(m.into()),
            last_transition_time: None,
        }
    }

    #[test]
    fn first_record_fills_every_type_and_updated_resets() {
        let mut s = MachineConfigNodeStatus::default();
        assert!(s.record(&cond(UPDATED, "False", UPDATED, "needs"), None, "r2", "t1"));
        assert_eq!(s.conditions.len(), ALL.len());
        assert_eq!(s.condition(DRAINED).unwrap().reason(), "NotYetOccurred");
        assert!(!s.record(&cond(UPDATED, "False", UPDATED, "needs"), None, "r2", "t2"));
        let ex = cond(UPDATE_EXECUTED, "Unknown", CORDONED, "cordoning");
        let ch = cond(CORDONED, "True", "UpdateExecutedCordoned", "cordoned");
        assert!(s.record(&ex, Some(&ch), "r2", "t2"));
        assert_eq!(s.condition(CORDONED).unwrap().last_transition_time(), "t2");
        // Same status, new message: the transition time stays.
        let ex2 = cond(UPDATE_EXECUTED, "Unknown", DRAINED, "draining");
        s.record(&ex2, None, "r2", "t3");
        assert_eq!(
            s.condition(UPDATE_EXECUTED).unwrap().last_transition_time(),
            "t2"
        );
        s.record(&cond(UPDATED, "True", UPDATED, "done"), None, "r2", "t4");
        assert!(s.condition(UPDATED).unwrap().is_true());
        let c = s.condition(CORDONED).unwrap();
        assert_eq!(c.status, "False");
        assert_eq!(c.message(), "Action during update to r2: cordoned");
        assert_eq!(
            s.condition(DRAINED).unwrap().message(),
            "This node has not yet entered the Drained phase"
        );
    }

    #[test]
    fn singletons_leave_updated_alone() {
        let mut s = MachineConfigNodeStatus::default();
        let progressing = cond(PINNED_IMAGE_SETS_PROGRESSING, "True", "ImagePrefetch", "p");
        assert!(s.record_singleton(&progressing, "t1"));
        assert_eq!(s.conditions.len(), ALL.len());
        assert_eq!(
            s.conditions[0],
            Condition {
                last_transition_time: Some("t1".into()),
                ..progressing.clone()
            }
        );
        assert!(!s.record_singleton(&progressing, "t2"));
        s.record(&cond(UPDATED, "True", UPDATED, "done"), None, "r1", "t3");
        // Updated resets what is not False, the pinned conditions too (as upstream).
        assert_eq!(
            s.condition(PINNED_IMAGE_SETS_PROGRESSING).unwrap().status,
            "False"
        );
        let done = cond(PINNED_IMAGE_SETS_PROGRESSING, "False", "AsExpected", "ok");
        assert!(s.record_singleton(&done, "t4"));
        assert!(s.condition(UPDATED).unwrap().is_true());
        // Same status, new message: the transition time stays.
        assert_eq!(
            s.condition(PINNED_IMAGE_SETS_PROGRESSING)
                .unwrap()
                .last_transition_time(),
            "t3"
        );
    }
}
