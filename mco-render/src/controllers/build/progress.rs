//! A MachineOSBuild's progress: read from its conditions, mapped from its Job's status, and
//! the conditions each progress writes (upstream `MachineOSBuildState`,
//! `imagebuilder.MapJobStatusToBuildStatus`, `apihelpers.MachineOSBuild*Conditions`,
//! `isMachineOSBuildStatusUpdateNeeded`).

use crate::api::job::JobView;
use crate::api::machine_os::MachineOSBuildStatus;
use crate::api::Condition;

/// How many times the Job retries its pod (`backoffLimit`).
pub const JOB_MAX_RETRIES: i32 = 3;

/// Where a build stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Progress {
    /// Conditions written, none True: created, not started.
    Initial,
    /// The Job exists, no pod has run yet.
    Prepared,
    /// The Job's pod is running (or retrying).
    Building,
    /// The image was pushed.
    Succeeded,
    /// The Job gave up.
    Failed,
    /// The Job was deleted before it finished.
    Interrupted,
}

impl Progress {
    /// The condition type that is True in this progress (`None` for [`Progress::Initial`]).
    pub fn condition_type(self) -> Option<&'static str> {
        match self {
            Progress::Initial => None,
            Progress::Prepared => Some("Prepared"),
            Progress::Building => Some("Building"),
            Progress::Succeeded => Some("Succeeded"),
            Progress::Failed => Some("Failed"),
            Progress::Interrupted => Some("Interrupted"),
        }
    }

    /// Succeeded, Failed or Interrupted.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Progress::Succeeded | Progress::Failed | Progress::Interrupted
        )
    }

    /// Prepared or Building.
    pub fn is_transient(self) -> bool {
        matches!(self, Progress::Prepared | Progress::Building)
    }
}

/// The build's progress from its conditions; `None` when it has none yet.
pub fn progress_of(status: Option<&MachineOSBuildStatus>) -> Option<Progress> {
    let conditions = &status?.conditions;
    if conditions.is_empty() {
        return None;
    }
    let is_true = |t: &str| conditions.iter().any(|c| c.type_ == t && c.is_true());
    // Terminal states first, as upstream's state reader checks them.
    for p in [
        Progress::Succeeded,
        Progress::Failed,
        Progress::Interrupted,
        Progress::Building,
        Progress::Prepared,
    ] {
        if p.condition_type().is_some_and(is_true) {
            return Some(p);
        }
    }
    Some(Progress::Initial)
}

/// Upstream's five conditions for `p`, each with its fixed reason and message, stamped `now`.
pub fn conditions(p: Progress, now: &str) -> Vec<Condition> {
    [
        ("Prepared", "Prepared", "Build Prepared and Pending"),
        ("Building", "Building", "Image Build In Progress"),
        ("Failed", "Failed", "Build Failed"),
        ("Interrupted", "Interrupted", "Build Interrupted"),
        ("Succeeded", "Ready", "Build Ready"),
    ]
    .into_iter()
    .map(|(t, reason, message)| Condition {
        last_transition_time: Some(now.to_string()),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        ..Condition::of(t, p.condition_type() == Some(t))
    })
    .collect()
}

/// The progress a Job's status means, as upstream maps it: a deleted Job that neither
/// succeeded nor used up its retries is Interrupted; no pod counted yet is Prepared; retries
/// left and no success is Building; a success is Succeeded unless a True `Failed` condition
/// comes first among its conditions; retries used up is Failed.
pub fn job_progress(job: &JobView) -> Progress {
    if job.deleting && job.succeeded == 0 && job.failed < JOB_MAX_RETRIES + 1 {
        return Progress::Interrupted;
    }
    if job.active == 0 && job.succeeded == 0 && job.failed == 0 && !job.uncounted_terminated {
        return Progress::Prepared;
    }
    if job.failed < JOB_MAX_RETRIES + 1 && job.succeeded == 0 {
        return Progress::Building;
    }
    if job.succeeded > 0 {
        return match job.conditions.first() {
            None => Progress::Succeeded,
            Some(c) if c.type_ == "Complete" => Progress::Succeeded,
            Some(c) if c.type_ == "Failed" => Progress::Failed,
            Some(_) => Progress::Building,
        };
    }
    Progress::Failed
}

/// Whether a build moving from `old` to `new` is written: into a first state, from the
/// initial state onwards, Prepared to Building, and from a transient state to a terminal one;
/// never out of a terminal state.
pub fn transition_allowed(old: Option<Progress>, new: Progress) -> bool {
    match (old, new) {
        (None, _) => true,
        (Some(o), _) if o.is_terminal() => false,
        (Some(Progress::Initial), n) => n != Progress::Initial,
        (Some(Progress::Prepared), Progress::Building) => true,
        (Some(o), n) if o.is_transient() && n.is_terminal() => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::job::JobCondition;

    fn job(active: i32, succeeded: i32, failed: i32) -> JobView {
        JobView {
            name: "build-x".into(),
            active,
            succeeded,
            failed,
            ..JobView::default()
        }
    }

    #[test]
    fn job_status_maps_as_upstream() {
        assert_eq!(job_progress(&job(0, 0, 0)), Progress::Prepared);
        assert_eq!(job_progress(&job(1, 0, 0)), Progress::Building);
        // A failed pod with retries left is still building.
        assert_eq!(job_progress(&job(1, 0, 2)), Progress::Building);
        assert_eq!(job_progress(&job(0, 0, 4)), Progress::Failed);
        assert_eq!(job_progress(&job(0, 1, 0)), Progress::Succeeded);
        let mut failed_after_success = job(0, 1, 0);
        failed_after_success.conditions = vec![JobCondition {
            type_: "Failed".into(),
            ..JobCondition::default()
        }];
        assert_eq!(job_progress(&failed_after_success), Progress::Failed);
        let mut deleted = job(1, 0, 1);
        deleted.deleting = true;
        assert_eq!(job_progress(&deleted), Progress::Interrupted);
        // A deleted Job that already succeeded is not interrupted.
        let mut done = job(0, 1, 0);
        done.deleting = true;
        assert_eq!(job_progress(&done), Progress::Succeeded);
    }

    #[test]
    fn conditions_round_trip_through_progress() {
        for p in [
            Progress::Initial,
            Progress::Prepared,
            Progress::Building,
            Progress::Succeeded,
            Progress::Failed,
            Progress::Interrupted,
        ] {
            let status = MachineOSBuildStatus {
                conditions: conditions(p, "t"),
                ..Default::default()
            };
            assert_eq!(progress_of(Some(&status)), Some(p));
            assert_eq!(status.conditions.len(), 5);
            assert_eq!(
                status.conditions.iter().filter(|c| c.is_true()).count(),
                usize::from(p != Progress::Initial)
            );
        }
        assert_eq!(progress_of(None), None);
        let succeeded = conditions(Progress::Succeeded, "t");
        assert_eq!(succeeded[4].reason(), "Ready");
        assert_eq!(succeeded[4].message(), "Build Ready");
    }

    fn arb_job() -> impl proptest::strategy::Strategy<Value = JobView> {
        use proptest::prelude::*;
        (0..3i32, 0..2i32, 0..6i32, any::<bool>(), 0..3u8).prop_map(
            |(active, succeeded, failed, deleting, cond)| JobView {
                active,
                succeeded,
                failed,
                deleting,
                conditions: match cond {
                    0 => vec![],
                    1 => vec![JobCondition {
                        type_: "Complete".into(),
                        ..JobCondition::default()
                    }],
                    _ => vec![JobCondition {
                        type_: "Failed".into(),
                        ..JobCondition::default()
                    }],
                },
                ..JobView::default()
            },
        )
    }

    proptest::proptest! {
        /// Whatever a Job reports, in any order, a build written only on allowed transitions
        /// never leaves a terminal state, and succeeds only after a Job reported a success.
        #[test]
        fn a_build_never_leaves_a_terminal_state(jobs in proptest::collection::vec(arb_job(), 1..12)) {
            let mut stored: Option<Progress> = None;
            let mut terminal: Option<Progress> = None;
            let mut seen_success = false;
            for j in &jobs {
                seen_success |= j.succeeded > 0;
                let p = job_progress(j);
                if transition_allowed(stored, p) {
                    stored = Some(p);
                }
                if let Some(t) = terminal {
                    proptest::prop_assert_eq!(stored, Some(t));
                }
                if stored.is_some_and(Progress::is_terminal) {
                    terminal = stored;
                }
                if stored == Some(Progress::Succeeded) {
                    proptest::prop_assert!(seen_success);
                }
            }
        }
    }

    #[test]
    fn only_forward_transitions_are_written() {
        use Progress::*;
        assert!(transition_allowed(None, Initial));
        assert!(transition_allowed(Some(Initial), Prepared));
        assert!(transition_allowed(Some(Initial), Succeeded));
        assert!(transition_allowed(Some(Prepared), Building));
        assert!(transition_allowed(Some(Building), Failed));
        assert!(transition_allowed(Some(Prepared), Interrupted));
        assert!(!transition_allowed(Some(Building), Prepared));
        assert!(!transition_allowed(Some(Building), Building));
        assert!(!transition_allowed(Some(Succeeded), Interrupted));
        assert!(!transition_allowed(Some(Failed), Building));
        assert!(!transition_allowed(Some(Initial), Initial));
    }
}
