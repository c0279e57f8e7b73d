//! Plan reports: a serialisable summary (`-o json`) and a one-line human rendering.

use serde::{Deserialize, Serialize};

use super::actions::{steps, Step};
use super::policy::{ActionType, Trigger};
use super::Plan;
use crate::plan::diff::MachineConfigDiff;
use crate::plan::reconcile::RenderedInput;

/// One disruption action in execution order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportAction {
    /// `None`, `Reboot`, `Drain`, `Reload`, `Restart`, `DaemonReload` or `Special`.
    #[serde(rename = "type")]
    pub kind: ActionType,
    /// Unit the action targets (Reload/Restart; `crio.service` for Special).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// What caused it.
    pub triggers: Vec<Trigger>,
}

/// The serialisable plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanReport {
    /// Whether the update can be applied in place.
    pub reconcilable: bool,
    /// Why not, when not reconcilable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the node is drained (true when the registries check failed: upstream errors out).
    pub drain: bool,
    /// The registries.conf check error, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "drainError"
    )]
    pub drain_error: Option<String>,
    /// Whether the node reboots.
    pub reboot: bool,
    /// Disruption actions in order (a leading Drain when the node is drained).
    pub actions: Vec<ReportAction>,
    /// Every step, writes and OS changes included.
    pub steps: Vec<Step>,
    /// The config diff.
    pub diff: MachineConfigDiff,
}

impl PlanReport {
    /// Builds the report for a computed plan.
    pub fn new(plan: &Plan, old: &RenderedInput, new: &RenderedInput) -> PlanReport {
        let reason = plan.reconcilable.as_ref().err().map(|e| e.to_string());
        let drain_error = plan.drain.as_ref().err().map(|e| e.to_string());
        let drain = *plan.drain.as_ref().unwrap_or(&true);
        let nd = &plan.node_disruption;
        let mut actions = Vec::new();
        if drain {
            let triggers = super::actions::drain_triggers(nd);
            actions.push(ReportAction {
                kind: ActionType::Drain,
                target: None,
                triggers,
            });
        }
        for (a, t) in nd.actions.iter().zip(&nd.triggers) {
            if a.kind == ActionType::Drain {
                continue;
            }
            let target = match a.kind {
                ActionType::Special => Some("crio.service".to_string()),
                _ => a.service().map(str::to_string),
            };
            actions.push(ReportAction {
                kind: a.kind,
                target,
                triggers: t.clone(),
            });
        }
        PlanReport {
            reconcilable: reason.is_none(),
            reason,
            drain,
            drain_error,
            reboot: nd.actions.iter().any(|a| a.kind == ActionType::Reboot),
            actions,
            steps: steps(plan, old, new),
            diff: plan.diff.clone(),
        }
    }

    /// One line, for example `3 files change; action: reload crio.service; no drain, no reboot`.
    /// The summary line, then the plan's steps numbered, one per line.
    pub fn details(&self) -> String {
        let mut out = self.human();
        out.push('\n');
        if !self.steps.is_empty() {
            out.push_str("plan:\n");
            for (i, s) in self.steps.iter().enumerate() {
                out.push_str(&format!("  {}. {s}\n", i + 1));
            }
        }
        out
    }

    /// The plan in one line: what changes, the actions, drain and reboot (`3 files change;
    /// action: reload crio.service; no drain, no reboot`), or why it is not reconcilable.
    pub fn human(&self) -> String {
        if let Some(r) = &self.reason {
            return format!("not reconcilable: {r}");
        }
        let mut parts = Vec::new();
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let d = &self.diff;
        if !d.changed_files.is_empty() {
            parts.push(format!("{} change", plural(d.changed_files.len(), "file")));
        }
        if !d.changed_units.is_empty() {
            parts.push(format!("{} change", plural(d.changed_units.len(), "unit")));
        }
        if d.passwd {
            parts.push("SSH keys/password change".to_string());
        }
        for c in d.os_changes() {
            parts.push(c.to_lowercase());
        }
        if d.fips {
            parts.push("fips changes".to_string());
        }
        if parts.is_empty() {
            parts.push("no changes".to_string());
        }
        let acts: Vec<String> = self
            .actions
            .iter()
            .filter(|a| !matches!(a.kind, ActionType::Drain | ActionType::Reboot))
            .map(|a| match a.kind {
                ActionType::Reload => format!("reload {}", a.target.as_deref().unwrap_or("")),
                ActionType::Restart => format!("restart {}", a.target.as_deref().unwrap_or("")),
                ActionType::DaemonReload => "daemon-reload".to_string(),
                ActionType::Special => "reload crio.service (registries.conf)".to_string(),
                _ => "none".to_string(),
            })
            .collect();
        if !acts.is_empty() {
            parts.push(format!("action: {}", acts.join(", ")));
        }
        let drain = match (&self.drain_error, self.drain) {
            (Some(e), _) => format!("drain check failed ({e})"),
            (None, true) => "drain".to_string(),
            (None, false) => "no drain".to_string(),
        };
        let reboot = if self.reboot { "reboot" } else { "no reboot" };
        parts.push(format!("{drain}, {reboot}"));
        parts.join("; ")
    }
}
