//! The plan as ordered steps for users: drain, writes, OS changes, service actions, reboot.

use serde::{Deserialize, Serialize};

use super::policy::{ActionType, Trigger};
use super::Plan;
use crate::plan::reconcile::RenderedInput;

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum StepKind {
    /// Cordon and drain the node.
    Drain,
    /// Write (or remove) a file.
    WriteFile {
        /// Path.
        path: String,
        /// `added`, `removed` or `changed`.
        change: String,
    },
    /// Write, update or remove a unit (and its drop-ins).
    WriteUnit {
        /// Unit name.
        name: String,
        /// `added`, `removed` or `updated`.
        change: String,
    },
    /// Update `core`'s SSH keys and password hash.
    UpdatePasswd,
    /// `rpm-ostree rebase` to the new OS image.
    Rebase {
        /// New image.
        image: String,
    },
    /// `rpm-ostree kargs` with these arguments.
    Kargs {
        /// Arguments.
        args: Vec<String>,
    },
    /// Switch the kernel package set.
    KernelType {
        /// Canonical old type.
        from: String,
        /// Canonical new type.
        to: String,
    },
    /// Install or remove extensions.
    Extensions {
        /// Packages of the new extension list.
        install: Vec<String>,
        /// Extensions no longer requested.
        remove: Vec<String>,
    },
    /// `systemctl daemon-reload`.
    DaemonReload,
    /// `systemctl reload <unit>`.
    Reload {
        /// Unit.
        unit: String,
    },
    /// `systemctl restart <unit>`.
    Restart {
        /// Unit.
        unit: String,
    },
    /// Reload crio for a registries.conf change (drain decided separately).
    Special,
    /// Nothing to do after writing.
    NoAction,
    /// Reboot the node.
    Reboot,
}

/// One step with what triggered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The step.
    #[serde(flatten)]
    pub kind: StepKind,
    /// Files, units or spec fields that caused it.
    pub triggers: Vec<Trigger>,
}

/// Packages an extension name installs.
pub fn extension_packages(ext: &str) -> Vec<&'static str> {
    crate::render::SUPPORTED_EXTENSIONS
        .iter()
        .find(|(name, _)| *name == ext)
        .map(|(_, pkgs)| pkgs.to_vec())
        .unwrap_or_default()
}

/// Orders the plan into steps: drain (when required), file and unit writes, passwd, OS changes,
/// then the post-config actions in upstream order, reboot last. Empty when the update is not
/// reconcilable (upstream stops there).
pub fn steps(plan: &Plan, old: &RenderedInput, new: &RenderedInput) -> Vec<Step> {
    let mut out = Vec::new();
    if plan.reconcilable.is_err() {
        return out;
    }
    let nd = &plan.node_disruption;
    let drain_triggers = drain_triggers(nd);
    if plan.drain.as_ref().is_ok_and(|d| *d) || plan.drain.is_err() {
        out.push(Step {
            kind: StepKind::Drain,
            triggers: drain_triggers,
        });
    }
    let d = &plan.diff;
    let paths = |r: &RenderedInput| -> std::collections::BTreeSet<String> {
        r.config
            .storage
            .files
            .iter()
            .map(|f| f.path.to_string())
            .collect()
    };
    let (old_paths, new_paths) = (paths(old), paths(new));
    for p in &d.changed_files {
        let change = match (
            old_paths.contains(p.as_str()),
            new_paths.contains(p.as_str()),
        ) {
            (false, _) => "added",
            (_, false) => "removed",
            _ => "changed",
        };
        out.push(Step {
            kind: StepKind::WriteFile {
                path: p.clone(),
                change: change.into(),
            },
            triggers: vec![Trigger::File(p.clone())],
        });
    }
    for (list, change) in [
        (&d.units_added, "added"),
        (&d.units_updated, "updated"),
        (&d.units_removed, "removed"),
    ] {
        for u in list {
            out.push(Step {
                kind: StepKind::WriteUnit {
                    name: u.clone(),
                    change: change.into(),
                },
                triggers: vec![Trigger::Unit(u.clone())],
            });
        }
    }
    if d.passwd {
        out.push(Step {
            kind: StepKind::UpdatePasswd,
            triggers: vec![Trigger::SshKeys],
        });
    }
    if d.os_update {
        out.push(Step {
            kind: StepKind::Rebase {
                image: new.os_image_url.clone(),
            },
            triggers: vec![Trigger::Spec("osImageURL".into())],
        });
    }
    if let Some(args) = &plan.kargs_args {
        out.push(Step {
            kind: StepKind::Kargs { args: args.clone() },
            triggers: vec![Trigger::Spec("kernelArguments".into())],
        });
    }
    if d.kernel_type {
        out.push(Step {
            kind: StepKind::KernelType {
                from: crate::plan::diff::canonical_kernel_type(&old.kernel_type).into(),
                to: crate::plan::diff::canonical_kernel_type(&new.kernel_type).into(),
            },
            triggers: vec![Trigger::Spec("kernelType".into())],
        });
    }
    if d.extensions {
        out.push(Step {
            kind: StepKind::Extensions {
                install: new
                    .extensions
                    .iter()
                    .flat_map(|e| extension_packages(e))
                    .map(str::to_string)
                    .collect(),
                remove: old
                    .extensions
                    .iter()
                    .filter(|e| !new.extensions.contains(e))
                    .cloned()
                    .collect(),
            },
            triggers: vec![Trigger::Spec("extensions".into())],
        });
    }
    for (a, t) in nd.actions.iter().zip(&nd.triggers) {
        let kind = match a.kind {
            ActionType::Drain => continue,
            ActionType::Reboot => StepKind::Reboot,
            ActionType::None => StepKind::NoAction,
            ActionType::DaemonReload => StepKind::DaemonReload,
            ActionType::Special => StepKind::Special,
            ActionType::Reload => StepKind::Reload {
                unit: a.service().unwrap_or_default().to_string(),
            },
            ActionType::Restart => StepKind::Restart {
                unit: a.service().unwrap_or_default().to_string(),
            },
        };
        out.push(Step {
            kind,
            triggers: t.clone(),
        });
    }
    out
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepKind::Drain => f.write_str("cordon and drain the node"),
            StepKind::WriteFile { path, change } => write!(f, "write {path} ({change})"),
            StepKind::WriteUnit { name, change } => write!(f, "write unit {name} ({change})"),
            StepKind::UpdatePasswd => f.write_str("update core's SSH keys and password"),
            StepKind::Rebase { image } => write!(f, "rpm-ostree rebase to {image}"),
            StepKind::Kargs { args } => write!(f, "rpm-ostree kargs {}", args.join(" ")),
            StepKind::KernelType { from, to } => write!(f, "switch kernel {from} -> {to}"),
            StepKind::Extensions { install, remove } => {
                write!(f, "extensions: install [{}]", install.join(" "))?;
                if !remove.is_empty() {
                    write!(f, ", remove [{}]", remove.join(" "))?;
                }
                Ok(())
            }
            StepKind::DaemonReload => f.write_str("systemctl daemon-reload"),
            StepKind::Reload { unit } => write!(f, "systemctl reload {unit}"),
            StepKind::Restart { unit } => write!(f, "systemctl restart {unit}"),
            StepKind::Special => f.write_str("reload crio.service (registries.conf)"),
            StepKind::NoAction => f.write_str("nothing more to do"),
            StepKind::Reboot => f.write_str("reboot"),
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind)?;
        let why: Vec<String> = self
            .triggers
            .iter()
            .filter_map(|t| match t {
                crate::plan::policy::Trigger::File(p) => Some(p.clone()),
                crate::plan::policy::Trigger::Unit(u) => Some(u.clone()),
                crate::plan::policy::Trigger::SshKeys => Some("ssh keys".into()),
                crate::plan::policy::Trigger::Spec(s) => Some(format!("spec.{s}")),
                crate::plan::policy::Trigger::NoChange => None,
            })
            .collect();
        let own = match &self.kind {
            StepKind::WriteFile { path, .. } => why.len() == 1 && why[0] == *path,
            StepKind::WriteUnit { name, .. } => why.len() == 1 && why[0] == *name,
            _ => false,
        };
        if !why.is_empty() && !own {
            write!(f, "  [because: {}]", why.join(", "))?;
        }
        Ok(())
    }
}

/// What makes a plan drain: the triggers of its reboot, drain and special actions.
pub fn drain_triggers(nd: &super::TracedActions) -> Vec<Trigger> {
    nd.actions
        .iter()
        .zip(&nd.triggers)
        .filter(|(a, _)| {
            matches!(
                a.kind,
                ActionType::Reboot | ActionType::Drain | ActionType::Special
            )
        })
        .flat_map(|(_, t)| t.clone())
        .collect()
}
