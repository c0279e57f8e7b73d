//! The daemon's view of what changed between two rendered configs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::plan::reconcile::RenderedInput;

/// Canonical kernel type: `realtime` or `64k-pages`, anything else is `default`.
pub fn canonical_kernel_type(kernel_type: &str) -> &'static str {
    match kernel_type {
        "realtime" => "realtime",
        "64k-pages" => "64k-pages",
        _ => "default",
    }
}

/// Which parts of the config differ (upstream's `machineConfigDiff`), plus the changed file and
/// unit names. Serialises with the corpus' field names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigDiff {
    /// `osImageURL` differs.
    pub os_update: bool,
    /// `spec.kernelArguments` differ as ordered lists (both empty: no change).
    pub kargs: bool,
    /// `spec.fips` differs.
    pub fips: bool,
    /// Ignition `passwd` differs.
    pub passwd: bool,
    /// `storage.files` differ as ordered lists.
    pub files: bool,
    /// `systemd.units` differ as ordered lists.
    pub units: bool,
    /// Canonical kernel types differ.
    pub kernel_type: bool,
    /// `spec.extensions` differ as ordered lists (both empty: no change).
    pub extensions: bool,
    /// No flag above is set.
    pub is_empty: bool,
    /// Paths added, removed or changed, sorted bytewise.
    pub changed_files: Vec<String>,
    /// Units only in the new config, sorted.
    pub units_added: Vec<String>,
    /// Units in both whose entries differ, sorted.
    pub units_updated: Vec<String>,
    /// Units only in the old config, sorted.
    pub units_removed: Vec<String>,
    /// The three unit lists together, sorted.
    pub changed_units: Vec<String>,
}

impl MachineConfigDiff {
    /// Compares two rendered configs.
    pub fn new(old: &RenderedInput, new: &RenderedInput) -> MachineConfigDiff {
        let kargs_empty = old.kernel_arguments.is_empty() && new.kernel_arguments.is_empty();
        let ext_empty = old.extensions.is_empty() && new.extensions.is_empty();
        let (o, n) = (&old.config, &new.config);
        let mut d = MachineConfigDiff {
            os_update: old.os_image_url != new.os_image_url,
            kargs: !kargs_empty && old.kernel_arguments != new.kernel_arguments,
            fips: old.fips != new.fips,
            passwd: o.passwd != n.passwd,
            files: o.storage.files != n.storage.files,
            units: o.systemd.units != n.systemd.units,
            kernel_type: canonical_kernel_type(&old.kernel_type)
                != canonical_kernel_type(&new.kernel_type),
            extensions: !ext_empty && old.extensions != new.extensions,
            ..Default::default()
        };
        d.is_empty = !(d.os_update
            || d.kargs
            || d.fips
            || d.passwd
            || d.files
            || d.units
            || d.kernel_type
            || d.extensions);
        d.changed_files = changed_by_key(&o.storage.files, &n.storage.files, |f| &f.path)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for (name, kind) in changed_by_key(&o.systemd.units, &n.systemd.units, |u| &u.name) {
            match kind {
                Change::Added => d.units_added.push(name.clone()),
                Change::Removed => d.units_removed.push(name.clone()),
                Change::Updated => d.units_updated.push(name.clone()),
            }
            d.changed_units.push(name);
        }
        d
    }

    /// Human-readable list of the OS-level changes (empty when none).
    pub fn os_changes(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.os_update {
            v.push("Upgrading OS");
        }
        if self.extensions {
            v.push("Installing extensions");
        }
        if self.kernel_type {
            v.push("Changing kernel type");
        }
        if self.kargs {
            v.push("Changing kernel arguments");
        }
        v
    }
}

/// How one keyed entry changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Added,
    Removed,
    Updated,
}

/// Keys whose entries were added, removed or differ; duplicates keep the last entry (as a map
/// built in list order does). Sorted bytewise by key.
fn changed_by_key<T: PartialEq>(
    old: &[T],
    new: &[T],
    key: impl Fn(&T) -> &String,
) -> Vec<(String, Change)> {
    let o: BTreeMap<&String, &T> = old.iter().map(|x| (key(x), x)).collect();
    let n: BTreeMap<&String, &T> = new.iter().map(|x| (key(x), x)).collect();
    let keys: BTreeSet<&String> = o.keys().chain(n.keys()).copied().collect();
    keys.into_iter()
        .filter_map(|k| match (o.get(k), n.get(k)) {
            (Some(_), None) => Some((k.clone(), Change::Removed)),
            (None, Some(_)) => Some((k.clone(), Change::Added)),
            (Some(a), Some(b)) if a != b => Some((k.clone(), Change::Updated)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mco_ignition::model::{File, Unit};

    #[test]
    fn files_and_units() {
        let mut a = RenderedInput::default();
        let mut b = RenderedInput::default();
        let f = |p: &str, m: i64| File {
            path: p.into(),
            mode: Some(m),
            ..Default::default()
        };
        let u = |n: &str, e: bool| Unit {
            name: n.into(),
            enabled: Some(e),
            ..Default::default()
        };
        a.config.storage.files = vec![f("/b", 1), f("/a", 1), f("/gone", 1)];
        b.config.storage.files = vec![f("/a", 1), f("/b", 2), f("/new", 1)];
        a.config.systemd.units = vec![u("x.service", true), u("y.service", true)];
        b.config.systemd.units = vec![u("y.service", false), u("z.service", true)];
        let d = MachineConfigDiff::new(&a, &b);
        assert!(d.files && d.units && !d.is_empty);
        assert_eq!(d.changed_files, ["/b", "/gone", "/new"]);
        assert_eq!(d.units_added, ["z.service"]);
        assert_eq!(d.units_updated, ["y.service"]);
        assert_eq!(d.units_removed, ["x.service"]);
        assert_eq!(d.changed_units, ["x.service", "y.service", "z.service"]);
    }

    #[test]
    fn reorder_only_changes_flag_not_lists() {
        let mut a = RenderedInput::default();
        let f = |p: &str| File {
            path: p.into(),
            ..Default::default()
        };
        a.config.storage.files = vec![f("/a"), f("/b")];
        let mut b = a.clone();
        b.config.storage.files.reverse();
        let d = MachineConfigDiff::new(&a, &b);
        assert!(d.files);
        assert!(d.changed_files.is_empty());
    }

    #[test]
    fn spec_fields() {
        let mut a = RenderedInput::default();
        let mut b = RenderedInput::default();
        a.kernel_type = "".into();
        b.kernel_type = "default".into();
        assert!(MachineConfigDiff::new(&a, &b).is_empty);
        b.kernel_type = "realtime".into();
        b.kernel_arguments = vec!["x".into()];
        b.extensions = vec!["usbguard".into()];
        let d = MachineConfigDiff::new(&a, &b);
        assert!(d.kernel_type && d.kargs && d.extensions);
        assert_eq!(
            d.os_changes(),
            [
                "Installing extensions",
                "Changing kernel type",
                "Changing kernel arguments"
            ]
        );
    }
}
