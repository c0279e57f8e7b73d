//! What the controller's metrics say of a pool beyond its machine counts: `mco_state`, the
//! state of each of its nodes as the pool's newest condition that holds (its type and
//! reason), as upstream's node controller reports it.
//!
//! Upstream walks every pool in turn and keeps the newest condition it has seen so far across
//! pools, so a pool whose conditions are all older than an earlier pool's reports that
//! pool's state for its nodes. Here each pool reports its own.

use crate::api::Condition;
use crate::api::MachineConfigPoolStatus;

/// The `state` and `reason` labels of `mco_state` for the nodes of a pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolState {
    /// The condition's type (`Updated`, `Updating`, `Degraded`, ...), empty when none holds.
    pub state: String,
    /// The condition's reason.
    pub reason: String,
}

/// The pool's newest `True` condition by `lastTransitionTime` (the first of equals), or
/// empty labels when none is true.
pub fn pool_state(status: Option<&MachineConfigPoolStatus>) -> PoolState {
    let mut newest: Option<(&Condition, jiff::Timestamp)> = None;
    for c in status.map(|s| s.conditions.as_slice()).unwrap_or_default() {
        if !c.is_true() {
            continue;
        }
        // A time that does not parse is the zero time, which nothing is after.
        let Ok(at) = c.last_transition_time().parse::<jiff::Timestamp>() else {
            continue;
        };
        if newest.is_none_or(|(_, t)| at > t) {
            newest = Some((c, at));
        }
    }
    newest.map_or_else(PoolState::default, |(c, _)| PoolState {
        state: c.type_.clone(),
        reason: c.reason().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(t: &str, status: bool, at: &str, reason: &str) -> Condition {
        Condition {
            last_transition_time: Some(at.into()),
            reason: Some(reason.into()),
            ..Condition::of(t, status)
        }
    }

    #[test]
    fn the_newest_condition_that_holds() {
        let status = MachineConfigPoolStatus {
            conditions: vec![
                cond("Updated", true, "2026-01-01T00:00:00Z", ""),
                cond("Updating", false, "2026-01-03T00:00:00Z", ""),
                cond(
                    "NodeDegraded",
                    true,
                    "2026-01-02T00:00:00Z",
                    "1 nodes are reporting degraded status on sync",
                ),
                cond("Degraded", true, "2026-01-02T00:00:00Z", "later of equals"),
            ],
            ..MachineConfigPoolStatus::default()
        };
        assert_eq!(
            pool_state(Some(&status)),
            PoolState {
                state: "NodeDegraded".into(),
                reason: "1 nodes are reporting degraded status on sync".into()
            }
        );
    }

    #[test]
    fn no_condition_that_holds_is_empty() {
        let status = MachineConfigPoolStatus {
            conditions: vec![
                cond("Updated", false, "2026-01-01T00:00:00Z", ""),
                cond("Updating", true, "not a time", ""),
            ],
            ..MachineConfigPoolStatus::default()
        };
        assert_eq!(pool_state(Some(&status)), PoolState::default());
        assert_eq!(pool_state(None), PoolState::default());
    }
}
