//! Applying a rendered config: plan the changes, journal them, apply them, act.
//!
//! Order (as upstream): files, units and their enablement, stale files and units, SSH keys, OS
//! changes, `currentconfig`; then the post-config actions (reload, restart, reboot). The OS
//! changes are planned only on rpm-ostree hosts (`/run/ostree-booted`); elsewhere they are a
//! logged [`Action::SkipOs`], as upstream's daemon skips them on hosts that are not CoreOS. Everything
//! up to `currentconfig` runs inside one [`Transaction`]: a failing step rolls all of it back and
//! leaves the node Degraded with a reason naming the path and the cause.
//!
//! A config carrying an on-cluster layering image (`mco_render::plan::layering`) is updated the
//! same way, its OS part in the mode [`mco_render::plan::layering::os_mode`] gives: the config's
//! files, units, SSH keys and password are written as for any config (upstream writes them on
//! layered nodes too), the kernel type and extensions are left to the image.

pub mod files;
pub mod orig;
pub mod os;
pub mod owner;
pub mod password;
pub mod revert;
pub mod ssh;
pub mod units;

use std::collections::BTreeSet;

use mco_render::plan::actions::{steps, Step};
use mco_render::plan::{self, layering, ActionType, MachineConfiguration, Plan};

use crate::desired_config::DesiredConfig;
use crate::drift::{self, Drift};
use crate::host::{Host, HostCall, HostError};
use crate::journal::{self, FsOp, JournalError, RollbackReport, Transaction};
use crate::root::{HostRoot, RootError};
use crate::state::{write_status, AgentStatus, NodeState, CURRENT_CONFIG};

/// Why an update could not be planned or applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A config file could not be prepared.
    #[error("file {path:?}: {cause}")]
    File {
        /// Host path.
        path: String,
        /// Cause.
        cause: String,
    },
    /// A path could not be touched.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A host command failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The OS update failed (a check, or rpm-ostree's state).
    #[error("{0}")]
    Os(String),
    /// The OS image could not be changed (the rebase, or undoing the kernel swap before it):
    /// upstream's pivot error.
    #[error("{0}")]
    Pivot(String),
}

/// One thing the update does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A filesystem change (journaled).
    Fs(FsOp),
    /// A host call inside the transaction.
    Host(HostCall),
    /// The OS part of the update (rpm-ostree, the extensions image), inside the transaction.
    Os(os::OsUpdate),
    /// The OS part of the update, left out: the host is not an rpm-ostree host.
    SkipOs(os::OsUpdate),
}

impl Action {
    /// One line for reports.
    pub fn describe(&self) -> String {
        match self {
            Action::Fs(op) => op.describe(),
            Action::Host(c) => format!("run {}", c.command_line()),
            Action::Os(u) => format!("update the OS: {}", u.describe().join("; ")),
            Action::SkipOs(u) => format!(
                "skip the OS part ({}): not an rpm-ostree host (no {})",
                u.summary,
                crate::rpm_ostree::OSTREE_BOOTED
            ),
        }
    }
}

/// Everything an update will do.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    /// Upstream's decisions (reconcilability, diff, actions, drain).
    pub plan: Plan,
    /// The decisions as ordered steps.
    pub steps: Vec<Step>,
    /// Changes and host calls inside the transaction (ending with the `currentconfig` write).
    pub actions: Vec<Action>,
    /// Host calls that undo the transaction's host calls.
    pub host_undo: Vec<HostCall>,
    /// Post-config host calls (after the commit).
    pub post: Vec<HostCall>,
    /// Whether upstream would drain the node first (there is no cluster here to drain).
    pub drain: bool,
}

impl UpdatePlan {
    /// The filesystem changes, in order.
    pub fn fs_ops(&self) -> Vec<FsOp> {
        self.actions
            .iter()
            .filter_map(|a| match a {
                Action::Fs(op) => Some(op.clone()),
                Action::Host(_) | Action::Os(_) | Action::SkipOs(_) => None,
            })
            .collect()
    }
}

/// Plans the update from `old` (on disk) to `new` under the cluster's node disruption
/// `policies`. Reads the root, changes nothing.
pub fn plan_update(
    root: &HostRoot,
    old: &DesiredConfig,
    new: &DesiredConfig,
    policies: Option<&MachineConfiguration>,
) -> Result<UpdatePlan, ApplyError> {
    let (o, n) = (&old.input, &new.input);
    let p = plan::compute(o, n, policies);
    let st = steps(&p, o, n);
    let d = &p.diff;
    let mut actions = Vec::new();
    let fs = |ops: Vec<FsOp>| ops.into_iter().map(Action::Fs);

    let mut ops = Vec::new();
    files::plan_writes(root, &o.config, &n.config, &mut ops)?;
    let changed: BTreeSet<&str> = d
        .units_added
        .iter()
        .chain(&d.units_updated)
        .map(String::as_str)
        .collect();
    let unit_calls = units::plan_writes(root, &n.config, &changed, &mut ops)?;
    actions.extend(fs(std::mem::take(&mut ops)));
    actions.extend(unit_calls.into_iter().map(Action::Host));

    files::plan_removals(root, &o.config, &n.config, &mut ops)?;
    let preset_calls = units::plan_removals(root, &o.config, &n.config, &mut ops)?;
    actions.extend(preset_calls.into_iter().map(Action::Host));
    actions.extend(fs(std::mem::take(&mut ops)));

    if d.passwd {
        ssh::plan(root, &n.config, &mut ops)?;
        password::plan(root, &o.config, &n.config, &mut ops)?;
        actions.extend(fs(std::mem::take(&mut ops)));
    }

    let mode = layering::os_mode(old.image(), new.image(), o, n);
    let os = os::plan(&p, o, n, mode);
    let rpm_ostree = os.is_some() && crate::rpm_ostree::is_rpm_ostree_host(root)?;
    let mut host_undo = units::undo_calls(&o.config, &d.changed_units);
    if rpm_ostree {
        host_undo.push(HostCall::CleanupPending);
    }
    if !d.changed_units.is_empty() {
        host_undo.push(HostCall::DaemonReload);
    }
    actions.extend(os.map(|u| {
        if rpm_ostree {
            Action::Os(u)
        } else {
            Action::SkipOs(u)
        }
    }));

    if mode == layering::OsMode::Revert {
        // Leaving layering: the config is kept for its files to be written again after the
        // reboot ([`revert::finish`]).
        actions.push(Action::Fs(FsOp::Write {
            path: revert::REVERT_FILE.into(),
            data: new.to_bytes(),
            mode: 0o644,
            owner: None,
            dir_mode: 0o755,
            replace_link: false,
        }));
    }

    actions.push(Action::Fs(FsOp::Write {
        path: CURRENT_CONFIG.into(),
        data: new.to_bytes(),
        mode: 0o644,
        owner: None,
        dir_mode: 0o755,
        replace_link: false,
    }));

    let post = post_calls(&p);
    let drain = matches!(p.drain, Ok(true) | Err(_));
    Ok(UpdatePlan {
        plan: p,
        steps: st,
        actions,
        host_undo,
        post,
        drain,
    })
}

/// Post-config host calls from the policy actions (a reboot collapses everything).
fn post_calls(p: &Plan) -> Vec<HostCall> {
    let mut out = Vec::new();
    for a in &p.node_disruption.actions {
        let call = match a.kind {
            ActionType::Reboot => HostCall::Reboot,
            ActionType::DaemonReload => HostCall::DaemonReload,
            ActionType::Reload => HostCall::Reload {
                unit: a.service().unwrap_or_default().to_string(),
            },
            ActionType::Restart => HostCall::Restart {
                unit: a.service().unwrap_or_default().to_string(),
            },
            ActionType::Special => HostCall::Reload {
                unit: "crio.service".into(),
            },
            ActionType::None | ActionType::Drain => continue,
        };
        out.push(call);
    }
    out
}

/// How an update is run.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    /// Refuse to update when the disk drifted from the current config (upstream's behaviour).
    pub check_drift: bool,
    /// What to do with a reboot post-config action.
    pub reboot: RebootMode,
    /// The node was drained before this update (cluster mode, by the controller); otherwise a
    /// required drain is noted as skipped, there being no cluster to drain.
    pub drained: bool,
    /// The cluster's `MachineConfiguration`: user node disruption policies and validation
    /// overrides (`None`: the built-in policies).
    pub policies: Option<&'a MachineConfiguration>,
}

impl Default for ApplyOptions<'_> {
    fn default() -> Self {
        ApplyOptions {
            check_drift: true,
            reboot: RebootMode::Now,
            drained: false,
            policies: None,
        }
    }
}

/// What an update does with a reboot post-config action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebootMode {
    /// Reboot as the last step.
    Now,
    /// Leave it to the caller, which reboots once the update is recorded (cluster mode).
    Deferred,
    /// Do not reboot; report it pending (`--no-reboot`, try mode).
    Skip,
}

/// What an update did.
#[derive(Debug, Clone)]
pub struct ApplyOutcome {
    /// Resulting state.
    pub status: AgentStatus,
    /// What ran, in order.
    pub log: Vec<String>,
    /// Drift found before updating (the update did not run).
    pub drift: Vec<Drift>,
    /// Rollback performed, if any.
    pub rollback: Option<RollbackReport>,
    /// A reboot is required and was not performed.
    pub reboot_pending: bool,
    /// The OS update's pivot: `Some(true)` when changing the OS image failed
    /// ([`ApplyError::Pivot`]), `Some(false)` when the OS part went through, `None` when it did
    /// not run or failed on another step (`mcd_pivot_errors_total` follows it).
    pub pivot: Option<bool>,
}

/// A health check run before the update commits (`try` mode): `Err` reverts the update.
pub type HealthCheck<'a> = &'a mut dyn FnMut() -> Result<(), String>;

/// Updates the node from its current config to `new`. Recovers an interrupted transaction
/// first. Never returns with the node half-updated: either the whole update is in place and the
/// state is Done, or every change was rolled back and the state says why.
pub fn run_update(
    root: &HostRoot,
    host: &mut dyn Host,
    old: &DesiredConfig,
    new: &DesiredConfig,
    opts: ApplyOptions<'_>,
    health: Option<HealthCheck<'_>>,
) -> ApplyOutcome {
    let mut out = ApplyOutcome {
        status: AgentStatus::new(NodeState::Working, "", old.name(), new.name()),
        log: Vec::new(),
        drift: Vec::new(),
        rollback: None,
        reboot_pending: false,
        pivot: None,
    };
    let finish = |mut out: ApplyOutcome, state: NodeState, reason: String| {
        out.status = AgentStatus::new(
            state,
            &reason,
            &out.status.current_config,
            &out.status.desired_config,
        );
        if let Err(e) = write_status(root, &out.status) {
            out.log.push(format!("could not write the state file: {e}"));
        }
        out
    };
    match journal::recover(root, host) {
        Ok(Some(r)) => {
            out.log.push(format!(
                "rolled back interrupted update {} -> {} ({} paths)",
                r.old, r.new, r.restored
            ));
            out.rollback = Some(r);
        }
        Ok(None) => {}
        Err(e) => return finish(out, NodeState::Degraded, format!("recovering: {e}")),
    }
    let up = match plan_update(root, old, new, opts.policies) {
        Ok(up) => up,
        Err(e) => return finish(out, NodeState::Degraded, e.to_string()),
    };
    if let Err(e) = &up.plan.reconcilable {
        return finish(out, NodeState::Unreconcilable, e.to_string());
    }
    if opts.check_drift {
        let drift = drift::check(root, &old.input.config);
        if !drift.is_empty() {
            let reason = drift::reason(old.name(), &drift);
            out.drift = drift;
            return finish(out, NodeState::Degraded, reason);
        }
    }
    if let Err(e) = write_status(root, &out.status) {
        return finish(out, NodeState::Degraded, format!("writing state: {e}"));
    }
    if up.drain && !opts.drained {
        out.log
            .push("drain required (no cluster: nothing to drain)".into());
    }
    let fs_ops = up.fs_ops();
    let mut tx =
        match Transaction::begin(root, old.name(), new.name(), &fs_ops, up.host_undo.clone()) {
            Ok(tx) => tx,
            Err(e) => return finish(out, NodeState::Degraded, format!("starting update: {e}")),
        };
    let try_mode = health.is_some();
    let mut failure = None;
    for a in &up.actions {
        let r = match a {
            Action::Fs(op) => tx.apply(op).map_err(ApplyError::from),
            Action::Host(c) => tx
                .mark_host_started()
                .map_err(ApplyError::from)
                .and_then(|()| match c.run(host) {
                    Err(e) if !c.best_effort() => Err(ApplyError::from(e)),
                    _ => Ok(()),
                }),
            Action::Os(u) => tx
                .mark_host_started()
                .map_err(ApplyError::from)
                .and_then(|()| os::run(root, host, u, &mut out.log)),
            Action::SkipOs(_) => Ok(()),
        };
        if let Action::Os(_) = a {
            out.pivot = match &r {
                Ok(()) => Some(false),
                Err(ApplyError::Pivot(_)) => Some(true),
                Err(_) => None,
            };
        }
        match r {
            Ok(()) if matches!(a, Action::Os(_)) => {}
            Ok(()) => out.log.push(match a {
                Action::SkipOs(u) => os::skipped_note(&u.summary),
                _ => a.describe(),
            }),
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        }
    }
    if failure.is_none() {
        if let Some(check) = health {
            let (log, reboot) = run_post(host, &up.post, RebootMode::Skip);
            out.log.extend(log);
            out.reboot_pending |= reboot;
            if let Err(e) = check() {
                failure = Some(format!("health check failed: {e}"));
            }
        }
    }
    if let Some(reason) = failure {
        let was_health = reason.starts_with("health check failed");
        return match tx.rollback(host) {
            Ok(r) => {
                let mut reason = format!("{reason}; rolled back to {}", display_name(old.name()));
                if !r.host_errors.is_empty() {
                    reason.push_str(&format!(" (undo errors: {})", r.host_errors.join("; ")));
                }
                out.rollback = Some(r);
                if was_health {
                    let (log, _) = run_post(host, &up.post, RebootMode::Skip);
                    out.log.extend(log);
                    out.reboot_pending = false;
                }
                finish(out, NodeState::Degraded, reason)
            }
            Err(e) => finish(
                out,
                NodeState::Degraded,
                format!("{reason}; rollback failed: {e} (the journal is kept for recovery)"),
            ),
        };
    }
    if let Err(e) = tx.commit() {
        return finish(out, NodeState::Degraded, format!("committing: {e}"));
    }
    out.status.current_config = new.name().to_string();
    out.log.push(format!("committed {}", new.name()));
    if out.reboot_pending || up.post.is_empty() {
        return finish(out, NodeState::Done, String::new());
    }
    if !try_mode {
        let (log, reboot) = run_post(host, &up.post, opts.reboot);
        out.log.extend(log);
        out.reboot_pending = reboot;
        if let Some(err) = out.log.iter().find(|l| l.starts_with("failed: ")) {
            let reason = format!("post-config action {}", err.trim_start_matches("failed: "));
            return finish(out, NodeState::Degraded, reason);
        }
    }
    finish(out, NodeState::Done, String::new())
}

fn display_name(n: &str) -> &str {
    if n.is_empty() {
        "the empty config"
    } else {
        n
    }
}

/// Runs post-config calls; returns the log and whether a reboot is pending (not run).
fn run_post(host: &mut dyn Host, calls: &[HostCall], reboot: RebootMode) -> (Vec<String>, bool) {
    let mut log = Vec::new();
    let mut pending = false;
    for c in calls {
        if *c == HostCall::Reboot && reboot != RebootMode::Now {
            pending = true;
            log.push(match reboot {
                RebootMode::Deferred => "reboot required (after the update is recorded)".into(),
                _ => "reboot required (not rebooting)".into(),
            });
            continue;
        }
        match c.run(host) {
            Ok(()) => log.push(format!("run {}", c.command_line())),
            Err(e) => {
                log.push(format!("failed: {e}"));
                break;
            }
        }
    }
    (log, pending)
}
