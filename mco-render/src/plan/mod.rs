//! Node disruption plans: what the daemon does to move a node from one rendered config to another.
//!
//! [`compute`] reproduces every upstream decision (reconcilability, config diff, kernel argument
//! command, legacy and policy-based post-config actions, drain); [`actions::steps`] turns them into
//! an ordered list of steps for users and [`report::PlanReport`] renders it.

pub mod actions;
pub mod diff;
pub mod input;
pub mod irreconcilable_report;
pub mod kargs;
pub mod layering;
pub mod pinned_images;
pub mod policy;
pub mod reconcile;
pub mod registries;
pub mod report;

use crate::plan::diff::MachineConfigDiff;
use crate::plan::reconcile::{daemon_reconcilable, DaemonReconcileError, RenderedInput};

pub use policy::{Action, ActionType, MachineConfiguration, Policies, TracedActions, Trigger};
pub use registries::RegistriesError;

/// Everything upstream decides for one node update.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The daemon's reconcilability verdict (no node FIPS file, non-firstboot overrides).
    pub reconcilable: Result<(), DaemonReconcileError>,
    /// The config diff.
    pub diff: MachineConfigDiff,
    /// `rpm-ostree kargs` arguments when kernel arguments change.
    pub kargs_args: Option<Vec<String>>,
    /// Legacy (firstboot) action: `none`, `reload crio`, `restart crio` or `reboot`.
    pub legacy_action: &'static str,
    /// Legacy drain decision.
    pub legacy_drain: Result<bool, RegistriesError>,
    /// Default policies merged with the user's.
    pub cluster_policies: Policies,
    /// Policy-based actions with their triggers.
    pub node_disruption: TracedActions,
    /// Drain decision for the policy-based actions.
    pub drain: Result<bool, RegistriesError>,
}

/// Computes the plan for moving from `old` to `new` under an optional `MachineConfiguration`.
/// Changed files and units are walked in bytewise order.
pub fn compute(
    old: &RenderedInput,
    new: &RenderedInput,
    machine_configuration: Option<&MachineConfiguration>,
) -> Plan {
    let spec = machine_configuration.map(|m| &m.spec);
    let overrides = spec
        .map(|s| s.irreconcilable_validation_overrides.storage.clone())
        .unwrap_or_default();
    let reconcilable = daemon_reconcilable(old, new, &overrides, None);
    let diff = MachineConfigDiff::new(old, new);
    let kargs_args = diff
        .kargs
        .then(|| kargs::generate_kargs(&old.kernel_arguments, &new.kernel_arguments));
    let cluster_policies = policy::merge_cluster_policies(
        &spec
            .map(|s| s.node_disruption_policy.clone())
            .unwrap_or_default(),
    );
    let legacy_action = legacy_action(&diff);
    let legacy_drain = legacy_drain(legacy_action, &diff, old, new);
    let node_disruption = node_disruption_actions(&diff, &cluster_policies);
    let drain = drain_required(&node_disruption.actions, old, new);
    Plan {
        reconcilable,
        diff,
        kargs_args,
        legacy_action,
        legacy_drain,
        cluster_policies,
        node_disruption,
        drain,
    }
}

/// The OS-level spec fields that changed (each forces a reboot).
pub fn os_triggers(diff: &MachineConfigDiff) -> Vec<Trigger> {
    let mut t = Vec::new();
    let mut add = |b: bool, name: &str| {
        if b {
            t.push(Trigger::Spec(name.to_string()));
        }
    };
    add(diff.os_update, "osImageURL");
    add(diff.kargs, "kernelArguments");
    add(diff.fips, "fips");
    add(diff.kernel_type, "kernelType");
    add(diff.extensions, "extensions");
    t
}

/// Legacy (firstboot) post-config action.
pub fn legacy_action(diff: &MachineConfigDiff) -> &'static str {
    if diff.os_update
        || diff.kargs
        || diff.fips
        || diff.units
        || diff.kernel_type
        || diff.extensions
    {
        return policy::legacy::REBOOT;
    }
    policy::legacy_actions_for_files(&diff.changed_files)
}

/// Legacy drain decision.
pub fn legacy_drain(
    action: &str,
    diff: &MachineConfigDiff,
    old: &RenderedInput,
    new: &RenderedInput,
) -> Result<bool, RegistriesError> {
    match action {
        policy::legacy::REBOOT => Ok(true),
        policy::legacy::RELOAD_CRIO | policy::legacy::RESTART_CRIO => {
            if diff
                .changed_files
                .iter()
                .any(|f| f == policy::REGISTRIES_CONF)
            {
                registries::is_safe_registries_change(&old.config, &new.config).map(|s| !s)
            } else {
                Ok(false)
            }
        }
        policy::legacy::NONE => Ok(false),
        _ => Ok(true),
    }
}

/// Policy-based post-config actions (upstream's normal path).
pub fn node_disruption_actions(diff: &MachineConfigDiff, policies: &Policies) -> TracedActions {
    let os = os_triggers(diff);
    if !os.is_empty() {
        return TracedActions {
            actions: vec![Action::plain(ActionType::Reboot)],
            triggers: vec![os],
        };
    }
    if !diff.files && !diff.units && !diff.passwd {
        return TracedActions {
            actions: vec![Action::plain(ActionType::None)],
            triggers: vec![vec![Trigger::NoChange]],
        };
    }
    policy::actions_for_changes(
        diff.passwd,
        &diff.changed_files,
        &diff.changed_units,
        policies,
    )
}

/// Drain decision for policy-based actions: Reboot or Drain always drain; Special drains unless
/// the registries.conf change is safe; anything else does not.
pub fn drain_required(
    actions: &[Action],
    old: &RenderedInput,
    new: &RenderedInput,
) -> Result<bool, RegistriesError> {
    let has = |k: ActionType| actions.iter().any(|a| a.kind == k);
    if has(ActionType::Reboot) || has(ActionType::Drain) {
        Ok(true)
    } else if has(ActionType::Special) {
        registries::is_safe_registries_change(&old.config, &new.config).map(|s| !s)
    } else {
        Ok(false)
    }
}
