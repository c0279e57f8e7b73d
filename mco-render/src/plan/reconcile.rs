//! Reconcilability: whether a node can move from one rendered config to another in place.
//!
//! Mirrors upstream's controller check (`IsRenderedConfigReconcilable`) and the daemon's wrapper
//! around it (which adds the node FIPS check). Error texts match upstream byte for byte.

use mco_ignition::model::{Config, PasswdUser};
use serde::{Deserialize, Serialize};

use crate::gocompat::quote::go_quote;

/// The user whose SSH keys and password hash may change in place.
pub const CORE_USER: &str = "core";

/// A file the daemon treats as "skip validation, reboot"; configs may not create it.
pub const FORCE_FILE: &str = "/run/machine-config-daemon-force";

/// One rendered MachineConfig as the diff and plan see it: its name, spec fields and parsed config.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RenderedInput {
    /// `metadata.name` (only used in messages).
    pub name: String,
    /// `spec.osImageURL`.
    pub os_image_url: String,
    /// `spec.baseOSExtensionsContainerImage`.
    pub base_os_extensions_container_image: String,
    /// `spec.fips`.
    pub fips: bool,
    /// `spec.kernelArguments` (absent reads as empty).
    pub kernel_arguments: Vec<String>,
    /// `spec.extensions` (absent reads as empty).
    pub extensions: Vec<String>,
    /// `spec.kernelType` (absent reads as `""`).
    pub kernel_type: String,
    /// `spec.config`, parsed (and translated to spec 3.5) by the caller.
    pub config: Config,
}

/// Storage sections that `irreconcilableValidationOverrides.storage` may exempt from the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StorageOverride {
    /// `storage.disks`.
    Disks,
    /// `storage.filesystems`.
    FileSystems,
    /// `storage.raid`.
    Raid,
}

/// Why a config change cannot be applied in place (the innermost upstream message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Irreconcilable {
    /// `passwd.groups` differ.
    #[error("invalid passwd change(s): ignition Passwd Groups section contains changes")]
    Groups,
    /// A user other than `core` is present in a changed users list.
    #[error("invalid passwd change(s): ignition passwd user section contains unsupported changes: non-core user")]
    NonCoreUser,
    /// The last user is not `core` with keys or a password hash.
    #[error("invalid passwd change(s): ignition passwd user section contains unsupported changes: user must be core and have 1 or more sshKeys")]
    CoreWithoutKeys,
    /// The core user changes fields other than SSH keys and password hash.
    #[error("invalid passwd change(s): SSH keys and password hash are not reconcilable")]
    CoreOtherFields,
    /// Ignition `kernelArguments` differ.
    #[error("ignition kargs section contains changes")]
    IgnitionKargs,
    /// `storage.disks` differ.
    #[error("ignition disks section contains changes")]
    Disks,
    /// `storage.filesystems` differ.
    #[error("ignition filesystems section contains changes")]
    Filesystems,
    /// `storage.raid` differ.
    #[error("ignition raid section contains changes")]
    Raid,
    /// `storage.directories` differ.
    #[error("ignition directories section contains changes")]
    Directories,
    /// `storage.links` differ and the new list is not empty.
    #[error("ignition links section contains changes")]
    Links,
    /// A new file uses `append`.
    #[error("ignition file {0} includes append")]
    Append(String),
    /// A new file is the daemon's force file.
    #[error("cannot create {0} via Ignition")]
    ForceFile(String),
    /// `spec.fips` differs.
    #[error("detected change to FIPS flag; refusing to modify FIPS on a running cluster")]
    Fips,
}

/// The controller-level error (`IsRenderedConfigReconcilable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// The configs differ in a way that cannot be applied in place. Upstream names the old config
    /// as "new" and the new one as the reference; the text keeps that order.
    #[error("new machineconfig {} is not reconcilable against {}: {reason}", go_quote(.old), go_quote(.new))]
    NotReconcilable {
        /// Old rendered config name.
        old: String,
        /// New rendered config name.
        new: String,
        /// The reason.
        reason: Irreconcilable,
    },
    /// The old config did not parse (message from the parser).
    #[error("parsing old Ignition config from machineconfig {} failed: {message}", go_quote(.name))]
    ParseOld {
        /// Old rendered config name.
        name: String,
        /// Parser error text.
        message: String,
    },
    /// The new config did not parse (message from the parser).
    #[error("parsing new Ignition config from machineconfig {} failed: {message}", go_quote(.name))]
    ParseNew {
        /// New rendered config name.
        name: String,
        /// Parser error text.
        message: String,
    },
    /// The new config did not validate (message from the validator).
    #[error("validating new Ignition config from machineconfig {} failed: {message}", go_quote(.name))]
    ValidateNew {
        /// New rendered config name.
        name: String,
        /// Validator error text.
        message: String,
    },
}

/// The daemon-level error (`reconcilable` in the daemon: wrapper plus node FIPS check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DaemonReconcileError {
    /// The controller check failed.
    #[error("configs {old}, {new} are not reconcilable: {inner}")]
    Controller {
        /// Old rendered config name.
        old: String,
        /// New rendered config name.
        new: String,
        /// The controller error.
        inner: Box<ReconcileError>,
    },
    /// The node's FIPS state differs from the new config's `spec.fips`.
    #[error("detected change to FIPS flag; refusing to modify FIPS on a running cluster")]
    NodeFips,
}

/// Checks the content rules between two parsed configs (no names, no wrapping).
pub fn check_configs(
    old: &RenderedInput,
    new: &RenderedInput,
    overrides: &[StorageOverride],
) -> Result<(), Irreconcilable> {
    let (o, n) = (&old.config, &new.config);
    if o.passwd != n.passwd {
        check_passwd(o, n)?;
    }
    if o.kernel_arguments != n.kernel_arguments {
        return Err(Irreconcilable::IgnitionKargs);
    }
    let os = &o.storage;
    let ns = &n.storage;
    if !overrides.contains(&StorageOverride::Disks) && os.disks != ns.disks {
        return Err(Irreconcilable::Disks);
    }
    if !overrides.contains(&StorageOverride::FileSystems) && os.filesystems != ns.filesystems {
        return Err(Irreconcilable::Filesystems);
    }
    if !overrides.contains(&StorageOverride::Raid) && os.raid != ns.raid {
        return Err(Irreconcilable::Raid);
    }
    if os.directories != ns.directories {
        return Err(Irreconcilable::Directories);
    }
    if os.links != ns.links && !ns.links.is_empty() {
        return Err(Irreconcilable::Links);
    }
    for f in &ns.files {
        if !f.append.is_empty() {
            return Err(Irreconcilable::Append(f.path.clone()));
        }
        if f.path == FORCE_FILE {
            return Err(Irreconcilable::ForceFile(f.path.clone()));
        }
    }
    if old.fips != new.fips {
        return Err(Irreconcilable::Fips);
    }
    Ok(())
}

fn check_passwd(o: &Config, n: &Config) -> Result<(), Irreconcilable> {
    if o.passwd.groups != n.passwd.groups {
        return Err(Irreconcilable::Groups);
    }
    if o.passwd.users != n.passwd.users {
        if n.passwd.users.iter().any(|u| u.name != CORE_USER) {
            return Err(Irreconcilable::NonCoreUser);
        }
        // Only the last user is inspected further (upstream behaviour).
        if let Some(last) = n.passwd.users.last() {
            check_core_user(last)?;
        }
    }
    Ok(())
}

fn check_core_user(user: &PasswdUser) -> Result<(), Irreconcilable> {
    if user.name == CORE_USER
        && (user.password_hash.is_some() || !user.ssh_authorized_keys.is_empty())
    {
        let rest = PasswdUser {
            name: String::new(),
            ssh_authorized_keys: Vec::new(),
            password_hash: None,
            ..user.clone()
        };
        if rest != PasswdUser::default() {
            return Err(Irreconcilable::CoreOtherFields);
        }
        Ok(())
    } else {
        Err(Irreconcilable::CoreWithoutKeys)
    }
}

/// The controller check between two rendered configs whose configs parsed and validated.
pub fn is_rendered_config_reconcilable(
    old: &RenderedInput,
    new: &RenderedInput,
    overrides: &[StorageOverride],
) -> Result<(), ReconcileError> {
    check_configs(old, new, overrides).map_err(|reason| ReconcileError::NotReconcilable {
        old: old.name.clone(),
        new: new.name.clone(),
        reason,
    })
}

/// The daemon check: the controller check wrapped with both names, then the node FIPS check.
/// `node_fips` is the node's FIPS state (`None`: unknown, as when the kernel file is missing, which
/// passes).
pub fn daemon_reconcilable(
    old: &RenderedInput,
    new: &RenderedInput,
    overrides: &[StorageOverride],
    node_fips: Option<bool>,
) -> Result<(), DaemonReconcileError> {
    is_rendered_config_reconcilable(old, new, overrides)
        .map_err(|inner| wrap_daemon(&old.name, &new.name, inner))?;
    match node_fips {
        Some(f) if f != new.fips => Err(DaemonReconcileError::NodeFips),
        _ => Ok(()),
    }
}

/// Wraps a controller error the way the daemon does.
pub fn wrap_daemon(old: &str, new: &str, inner: ReconcileError) -> DaemonReconcileError {
    DaemonReconcileError::Controller {
        old: old.to_string(),
        new: new.to_string(),
        inner: Box::new(inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mco_ignition::model::{Directory, File, Link, PasswdGroup, Resource};

    fn input(name: &str) -> RenderedInput {
        let mut r = RenderedInput {
            name: name.into(),
            ..Default::default()
        };
        r.config.passwd.users.push(PasswdUser {
            name: "core".into(),
            ssh_authorized_keys: vec!["k1".into()],
            ..Default::default()
        });
        r
    }

    fn err(old: &RenderedInput, new: &RenderedInput) -> String {
        is_rendered_config_reconcilable(old, new, &[])
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn identical_is_ok() {
        assert!(is_rendered_config_reconcilable(&input("a"), &input("a"), &[]).is_ok());
    }

    #[test]
    fn ssh_key_change_ok_other_field_not() {
        let a = input("a");
        let mut b = input("b");
        b.config.passwd.users[0]
            .ssh_authorized_keys
            .push("k2".into());
        b.config.passwd.users[0].password_hash = Some("x".into());
        assert!(is_rendered_config_reconcilable(&a, &b, &[]).is_ok());
        b.config.passwd.users[0].home_dir = Some("/h".into());
        assert_eq!(
            err(&a, &b),
            "new machineconfig \"a\" is not reconcilable against \"b\": invalid passwd change(s): SSH keys and password hash are not reconcilable"
        );
        b.config.passwd.users[0] = PasswdUser {
            name: "core".into(),
            ..Default::default()
        };
        assert!(err(&a, &b).ends_with("user must be core and have 1 or more sshKeys"));
        b.config.passwd.users.push(PasswdUser {
            name: "bob".into(),
            ..Default::default()
        });
        assert!(err(&a, &b).ends_with("non-core user"));
        b.config.passwd.groups.push(PasswdGroup {
            name: "g".into(),
            ..Default::default()
        });
        assert!(err(&a, &b).ends_with("Groups section contains changes"));
    }

    #[test]
    fn storage_rules_and_overrides() {
        let a = input("a");
        let mut b = input("b");
        b.config.storage.disks.push(Default::default());
        assert!(err(&a, &b).ends_with("ignition disks section contains changes"));
        assert!(is_rendered_config_reconcilable(&a, &b, &[StorageOverride::Disks]).is_ok());
        let mut b = input("b");
        b.config.storage.directories.push(Directory::default());
        assert!(err(&a, &b).ends_with("ignition directories section contains changes"));
        // Removing links is allowed, adding is not.
        let mut with_link = input("a");
        with_link.config.storage.links.push(Link::default());
        assert!(is_rendered_config_reconcilable(&with_link, &input("b"), &[]).is_ok());
        assert!(err(&input("a"), &with_link).ends_with("ignition links section contains changes"));
    }

    #[test]
    fn files_and_fips() {
        let a = input("a");
        let mut b = input("b");
        b.config.storage.files.push(File {
            path: "/etc/motd".into(),
            append: vec![Resource::default()],
            ..Default::default()
        });
        assert!(err(&a, &b).ends_with("ignition file /etc/motd includes append"));
        let mut b = input("b");
        b.config.storage.files.push(File {
            path: FORCE_FILE.into(),
            ..Default::default()
        });
        assert!(
            err(&a, &b).ends_with("cannot create /run/machine-config-daemon-force via Ignition")
        );
        let mut b = input("b");
        b.fips = true;
        let e = daemon_reconcilable(&a, &b, &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("configs a, b are not reconcilable: new machineconfig \"a\""));
        assert_eq!(
            daemon_reconcilable(&a, &a, &[], Some(true)).unwrap_err(),
            DaemonReconcileError::NodeFips
        );
    }
}
