//! Node disruption policies: the built-in defaults, the user's `MachineConfiguration` policies,
//! their merge, and the action calculation for changed files, units and SSH keys.

use serde::{Deserialize, Serialize};

use crate::plan::reconcile::StorageOverride;

/// Kind of a node disruption action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ActionType {
    /// Reboot the node (drains first).
    Reboot,
    /// Drain the node.
    Drain,
    /// Reload a service.
    Reload,
    /// Restart a service.
    Restart,
    /// `systemctl daemon-reload`.
    DaemonReload,
    /// Nothing to do.
    None,
    /// registries.conf handling: reload crio, drain unless only safe mirror additions.
    Special,
}

impl ActionType {
    /// The upstream name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionType::Reboot => "Reboot",
            ActionType::Drain => "Drain",
            ActionType::Reload => "Reload",
            ActionType::Restart => "Restart",
            ActionType::DaemonReload => "DaemonReload",
            ActionType::None => "None",
            ActionType::Special => "Special",
        }
    }
}

/// A systemd service an action targets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRef {
    /// Unit name, for example `crio.service`.
    #[serde(default)]
    pub service_name: String,
}

/// One node disruption action (the same shape serves the policy spec and status).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Action {
    /// Kind of action.
    #[serde(rename = "type")]
    pub kind: ActionType,
    /// Service to reload (type `Reload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload: Option<ServiceRef>,
    /// Service to restart (type `Restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<ServiceRef>,
}

impl Action {
    /// An action with no service.
    pub fn plain(kind: ActionType) -> Action {
        Action {
            kind,
            reload: None,
            restart: None,
        }
    }

    /// Reload `service`.
    pub fn reload(service: &str) -> Action {
        Action {
            kind: ActionType::Reload,
            reload: Some(ServiceRef {
                service_name: service.to_string(),
            }),
            restart: None,
        }
    }

    /// Restart `service`.
    pub fn restart(service: &str) -> Action {
        Action {
            kind: ActionType::Restart,
            reload: None,
            restart: Some(ServiceRef {
                service_name: service.to_string(),
            }),
        }
    }

    /// The service this action targets, if any.
    pub fn service(&self) -> Option<&str> {
        match self.kind {
            ActionType::Reload => self.reload.as_ref().map(|s| s.service_name.as_str()),
            ActionType::Restart => self.restart.as_ref().map(|s| s.service_name.as_str()),
            _ => None,
        }
    }

    /// Status form of a user spec action: only the field matching the type is kept.
    fn to_status(&self) -> Action {
        match self.kind {
            ActionType::Reload => Action {
                kind: ActionType::Reload,
                reload: Some(self.reload.clone().unwrap_or_default()),
                restart: None,
            },
            ActionType::Restart => Action {
                kind: ActionType::Restart,
                reload: None,
                restart: Some(self.restart.clone().unwrap_or_default()),
            },
            k => Action::plain(k),
        }
    }
}

/// Policy for a file path (exact path or directory prefix).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FilePolicy {
    /// Path as written (not cleaned).
    #[serde(default)]
    pub path: String,
    /// Actions, in order.
    #[serde(default)]
    pub actions: Vec<Action>,
}

/// Policy for a unit name (exact match).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UnitPolicy {
    /// Unit name.
    #[serde(default)]
    pub name: String,
    /// Actions, in order.
    #[serde(default)]
    pub actions: Vec<Action>,
}

/// Policy for SSH key changes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SshKeyPolicy {
    /// Actions, in order.
    #[serde(default)]
    pub actions: Vec<Action>,
}

/// A set of policies: the user spec (`spec.nodeDisruptionPolicy`) or the merged cluster status
/// (`status.nodeDisruptionPolicyStatus.clusterPolicies`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Policies {
    /// File policies.
    #[serde(default)]
    pub files: Vec<FilePolicy>,
    /// Unit policies.
    #[serde(default)]
    pub units: Vec<UnitPolicy>,
    /// SSH key policy.
    #[serde(default)]
    pub sshkey: SshKeyPolicy,
}

/// `spec.irreconcilableValidationOverrides`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IrreconcilableValidationOverrides {
    /// Storage sections exempt from the reconcilability check.
    #[serde(default)]
    pub storage: Vec<StorageOverride>,
}

/// The parts of the `MachineConfiguration` spec the plan reads.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigurationSpec {
    /// User node disruption policies.
    #[serde(default)]
    pub node_disruption_policy: Policies,
    /// Reconcilability overrides.
    #[serde(default)]
    pub irreconcilable_validation_overrides: IrreconcilableValidationOverrides,
}

/// The `operator.openshift.io/v1` `MachineConfiguration` object (only its spec is read).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MachineConfiguration {
    /// The spec.
    #[serde(default)]
    pub spec: MachineConfigurationSpec,
}

/// Path of the container registries config, whose policy is `Special`.
pub const REGISTRIES_CONF: &str = "/etc/containers/registries.conf";
const UPDATE_CA_TRUST: &str = "coreos-update-ca-trust.service";
const IRI_REGISTRY: &str = "iri-registry.service";
const CRIO: &str = "crio.service";
const KUBELET: &str = "kubelet.service";

/// The built-in cluster policies.
pub fn default_policies() -> Policies {
    let file = |path: &str, actions: Vec<Action>| FilePolicy {
        path: path.to_string(),
        actions,
    };
    let none = || vec![Action::plain(ActionType::None)];
    Policies {
        files: vec![
            file("/var/lib/kubelet/config.json", none()),
            file(
                "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
                vec![Action::reload(CRIO)],
            ),
            file("/etc/containers/policy.json", vec![Action::reload(CRIO)]),
            file(REGISTRIES_CONF, vec![Action::plain(ActionType::Special)]),
            file("/etc/containers/registries.d", vec![Action::reload(CRIO)]),
            file("/etc/crio/policies", vec![Action::reload(CRIO)]),
            file("/etc/nmstate/openshift", none()),
            file(
                "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
                vec![Action::restart(UPDATE_CA_TRUST), Action::restart(CRIO)],
            ),
            file(
                "/etc/kubernetes/credential-providers",
                vec![Action::restart(KUBELET)],
            ),
            file(
                "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
                vec![Action::plain(ActionType::DaemonReload), Action::restart(KUBELET)],
            ),
            file("/etc/iri-registry", vec![Action::restart(IRI_REGISTRY)]),
            file(
                "/usr/local/bin/load-registry-image.sh",
                vec![Action::restart(IRI_REGISTRY)],
            ),
            file(
                "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt",
                vec![Action::restart(UPDATE_CA_TRUST)],
            ),
        ],
        units: vec![UnitPolicy {
            name: IRI_REGISTRY.to_string(),
            actions: vec![Action::plain(ActionType::DaemonReload), Action::restart(IRI_REGISTRY)],
        }],
        sshkey: SshKeyPolicy { actions: none() },
    }
}

/// Merges user policies into the defaults as upstream does: a user file (unit) policy whose path
/// (name) equals a default one replaces it in place, others are appended in order; a non-empty
/// user SSH policy replaces the default.
pub fn merge_cluster_policies(user: &Policies) -> Policies {
    let defaults = default_policies();
    let mut merged = defaults.clone();
    for uf in &user.files {
        let status = FilePolicy {
            path: uf.path.clone(),
            actions: uf.actions.iter().map(Action::to_status).collect(),
        };
        match defaults.files.iter().position(|d| d.path == uf.path) {
            Some(i) => merged.files[i] = status,
            None => merged.files.push(status),
        }
    }
    for uu in &user.units {
        let status = UnitPolicy {
            name: uu.name.clone(),
            actions: uu.actions.iter().map(Action::to_status).collect(),
        };
        match defaults.units.iter().position(|d| d.name == uu.name) {
            Some(i) => merged.units[i] = status,
            None => merged.units.push(status),
        }
    }
    if !user.sshkey.actions.is_empty() {
        merged.sshkey = SshKeyPolicy {
            actions: user.sshkey.actions.iter().map(Action::to_status).collect(),
        };
    }
    merged
}

/// Go's `filepath.Clean` (Unix), shared with the Ignition engine.
pub use mco_ignition::path::clean as clean_path;

/// Go's `filepath.Dir`: everything before the last separator, cleaned.
pub fn dir_of(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => clean_path(&path[..=i]),
        None => ".".to_string(),
    }
}

fn is_subdirectory(dir: &str, target: &str) -> bool {
    let prefix = format!("{}/", clean_path(dir));
    clean_path(target).starts_with(&prefix)
}

/// The policy with the longest path (as written) that equals `path` or is a directory above it;
/// among equally long paths the first wins.
pub fn closest_file_policy<'a>(path: &str, files: &'a [FilePolicy]) -> Option<&'a FilePolicy> {
    let mut best: Option<&FilePolicy> = None;
    for p in files {
        if (p.path == path || is_subdirectory(&p.path, path))
            && p.path.len() > best.map_or(0, |b| b.path.len())
        {
            best = Some(p);
        }
    }
    best
}

/// Why each action was chosen: the spec field, file or unit that triggered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "camelCase")]
pub enum Trigger {
    /// A changed file path.
    File(String),
    /// A changed unit.
    Unit(String),
    /// SSH keys / passwd.
    SshKeys,
    /// A spec field (`osImageURL`, `kernelArguments`, `fips`, `kernelType`, `extensions`).
    Spec(String),
    /// Nothing changed.
    NoChange,
}

/// Actions with the triggers that produced them, before and after upstream's collapsing rules.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TracedActions {
    /// Final action list (exactly upstream's).
    pub actions: Vec<Action>,
    /// For each final action, what triggered it.
    pub triggers: Vec<Vec<Trigger>>,
}

/// Actions for changed files, units and SSH keys under `policies` (upstream's per-diff
/// calculation). The lists are walked in the order given.
pub fn actions_for_changes(
    ssh_changed: bool,
    files: &[String],
    units: &[String],
    policies: &Policies,
) -> TracedActions {
    let mut raw: Vec<(Action, Trigger)> = Vec::new();
    let reboot = |t: Trigger| TracedActions {
        actions: vec![Action::plain(ActionType::Reboot)],
        triggers: vec![vec![t]],
    };
    for f in files {
        match closest_file_policy(f, &policies.files) {
            Some(p) => raw.extend(
                p.actions
                    .iter()
                    .map(|a| (a.clone(), Trigger::File(f.clone()))),
            ),
            None => return reboot(Trigger::File(f.clone())),
        }
    }
    for u in units {
        match policies.units.iter().find(|p| &p.name == u) {
            Some(p) => raw.extend(
                p.actions
                    .iter()
                    .map(|a| (a.clone(), Trigger::Unit(u.clone()))),
            ),
            None => return reboot(Trigger::Unit(u.clone())),
        }
    }
    if ssh_changed {
        raw.extend(
            policies
                .sshkey
                .actions
                .iter()
                .map(|a| (a.clone(), Trigger::SshKeys)),
        );
    }
    let has = |k: ActionType| raw.iter().any(|(a, _)| a.kind == k);
    if has(ActionType::Reboot) {
        let t = raw
            .iter()
            .filter(|(a, _)| a.kind == ActionType::Reboot)
            .map(|(_, t)| t.clone())
            .collect();
        return TracedActions {
            actions: vec![Action::plain(ActionType::Reboot)],
            triggers: vec![t],
        };
    }
    if has(ActionType::None) {
        if raw.iter().any(|(a, _)| a.kind != ActionType::None) {
            raw.retain(|(a, _)| a.kind != ActionType::None);
        } else {
            let t = raw.into_iter().map(|(_, t)| t).collect();
            return TracedActions {
                actions: vec![Action::plain(ActionType::None)],
                triggers: vec![t],
            };
        }
    }
    let (actions, triggers) = raw.into_iter().map(|(a, t)| (a, vec![t])).unzip();
    TracedActions { actions, triggers }
}

/// Legacy (firstboot) post-config action names.
pub mod legacy {
    /// No action.
    pub const NONE: &str = "none";
    /// Reload crio.
    pub const RELOAD_CRIO: &str = "reload crio";
    /// Restart crio.
    pub const RESTART_CRIO: &str = "restart crio";
    /// Reboot.
    pub const REBOOT: &str = "reboot";
}

/// Legacy per-file calculation (upstream's firstboot path): one of none / reload crio /
/// restart crio / reboot.
pub fn legacy_actions_for_files(files: &[String]) -> &'static str {
    const NONE_FILES: [&str; 2] = [
        "/etc/kubernetes/kubelet-ca.crt",
        "/var/lib/kubelet/config.json",
    ];
    const RELOAD_FILES: [&str; 3] = [
        REGISTRIES_CONF,
        "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
        "/etc/containers/policy.json",
    ];
    const RESTART_FILES: [&str; 1] =
        ["/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"];
    let mut action = legacy::NONE;
    for path in files {
        let dir = dir_of(path);
        if NONE_FILES.contains(&path.as_str()) {
            continue;
        } else if RELOAD_FILES.contains(&path.as_str()) || dir == "/etc/containers/registries.d" {
            if action != legacy::RESTART_CRIO {
                action = legacy::RELOAD_CRIO;
            }
        } else if RESTART_FILES.contains(&path.as_str()) {
            action = legacy::RESTART_CRIO;
        } else if dir == "/etc/nmstate/openshift" {
            continue;
        } else {
            return legacy::REBOOT;
        }
    }
    action
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_like_go() {
        assert_eq!(clean_path("/"), "/");
        assert_eq!(clean_path("/a//b/"), "/a/b");
        assert_eq!(clean_path("/a/../../b/./c"), "/b/c");
        assert_eq!(clean_path(""), ".");
        assert_eq!(clean_path("a/.."), ".");
        assert_eq!(
            dir_of("/etc/containers/registries.d/x.yaml"),
            "/etc/containers/registries.d"
        );
        assert_eq!(dir_of("/x"), "/");
    }

    #[test]
    fn longest_prefix_wins_and_root_never_matches() {
        let files = vec![
            FilePolicy {
                path: "/".into(),
                actions: vec![Action::plain(ActionType::None)],
            },
            FilePolicy {
                path: "/etc".into(),
                actions: vec![Action::reload("a")],
            },
            FilePolicy {
                path: "/etc/foo/".into(),
                actions: vec![Action::reload("b")],
            },
        ];
        assert_eq!(
            closest_file_policy("/etc/foo/x", &files).unwrap().path,
            "/etc/foo/"
        );
        assert_eq!(
            closest_file_policy("/etc/foobar", &files).unwrap().path,
            "/etc"
        );
        assert!(closest_file_policy("/var/x", &files).is_none());
    }

    #[test]
    fn merge_replaces_in_place_and_appends() {
        let user = Policies {
            files: vec![
                FilePolicy {
                    path: "/etc/containers/policy.json".into(),
                    actions: vec![Action::plain(ActionType::None)],
                },
                FilePolicy {
                    path: "/etc/x".into(),
                    actions: vec![Action::plain(ActionType::Drain)],
                },
            ],
            units: vec![],
            sshkey: SshKeyPolicy {
                actions: vec![Action::plain(ActionType::Reboot)],
            },
        };
        let m = merge_cluster_policies(&user);
        assert_eq!(m.files[2].actions, vec![Action::plain(ActionType::None)]);
        assert_eq!(m.files.last().unwrap().path, "/etc/x");
        assert_eq!(m.sshkey.actions, vec![Action::plain(ActionType::Reboot)]);
    }

    #[test]
    fn collapse_rules() {
        let p = default_policies();
        let files = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = actions_for_changes(true, &files(&["/etc/containers/policy.json"]), &[], &p);
        assert_eq!(a.actions, vec![Action::reload("crio.service")]);
        let a = actions_for_changes(true, &[], &[], &p);
        assert_eq!(a.actions, vec![Action::plain(ActionType::None)]);
        let a = actions_for_changes(false, &files(&["/etc/motd"]), &[], &p);
        assert_eq!(a.actions, vec![Action::plain(ActionType::Reboot)]);
        let a = actions_for_changes(false, &[], &[], &p);
        assert!(a.actions.is_empty());
    }

    #[test]
    fn legacy() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(legacy_actions_for_files(&f(&[])), "none");
        assert_eq!(
            legacy_actions_for_files(&f(&[
                "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
                "/etc/containers/policy.json"
            ])),
            "restart crio"
        );
        assert_eq!(
            legacy_actions_for_files(&f(&["/etc/containers/registries.d/a"])),
            "reload crio"
        );
        assert_eq!(
            legacy_actions_for_files(&f(&["/etc/nmstate/openshift/x"])),
            "none"
        );
        assert_eq!(legacy_actions_for_files(&f(&["/etc/other"])), "reboot");
    }
}
