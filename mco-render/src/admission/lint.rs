//! Lints: things a MachineConfig may say that are valid Ignition but almost never what its
//! author meant. Each finding is a warning, never a rejection.
//!
//! | id | fires on | why |
//! |---|---|---|
//! | `decimal-mode` | a file or directory `mode` whose three decimal digits, read as octal, are a usual mode while the value is not ([`looks_decimal`]: `644`, `755`, `444`) | JSON has no octal literals and YAML 1.2 reads `644` as decimal: `mode: 644` is `0o1204` (rejected: above 0o777), `mode: 444` is `0o674` (accepted, group-writable) |
//! | `special-bits` | a file mode with setuid, setgid or sticky set; a directory mode with setuid or setgid | a setuid binary written by a config runs as root for every user; usually a mode typo (sticky on a directory is the normal shared-directory mode and passes) |
//! | `os-image-path` | a file, directory or link under `/usr` (but `/usr/local`), `/boot`, `/sysroot`, `/ostree`, `/bin`, `/sbin`, `/lib`, `/lib64` | on RHCOS these belong to the OS image (read-only, replaced on each OS update); only `/etc` and `/var` (and what links there) persist writes |
//! | `unit-suffix` | a systemd unit name without a unit-type suffix, a drop-in name not ending in `.conf` | systemd ignores such a unit or drop-in, so the config silently does nothing |
//! | `risky-karg` | a kernel argument in [`RISKY_KERNEL_ARGUMENTS`] | it stops nodes from booting to a working, reachable system; the pool then loses every node it updates |
//!
//! A mode already reported as `decimal-mode` is not reported again as `special-bits`.

use crate::api::MachineConfig;
use serde_json::Value;

/// A lint, as listed in the module's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lint {
    /// A mode that looks written in decimal where octal was meant.
    DecimalMode,
    /// setuid, setgid or sticky bits.
    SpecialBits,
    /// A path the OS image owns.
    OsImagePath,
    /// A unit or drop-in name systemd will not load.
    UnitSuffix,
    /// A kernel argument known to cut nodes off.
    RiskyKarg,
}

impl Lint {
    /// The lint's id (`decimal-mode`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Lint::DecimalMode => "decimal-mode",
            Lint::SpecialBits => "special-bits",
            Lint::OsImagePath => "os-image-path",
            Lint::UnitSuffix => "unit-suffix",
            Lint::RiskyKarg => "risky-karg",
        }
    }
}

/// Every lint with its one-line summary, in the order checks run.
pub const LINTS: [(Lint, &str); 5] = [
    (
        Lint::DecimalMode,
        "file or directory mode that looks decimal",
    ),
    (Lint::SpecialBits, "setuid, setgid or sticky bits"),
    (Lint::OsImagePath, "path owned by the OS image"),
    (Lint::UnitSuffix, "unit or drop-in name systemd ignores"),
    (Lint::RiskyKarg, "kernel argument known to cut nodes off"),
];

/// Kernel arguments known to leave a node unbootable or unreachable: (argument, or prefix
/// ending in `=`, and what it does). An argument matches an entry equal to it, or an entry
/// ending in `=` that it starts with.
pub const RISKY_KERNEL_ARGUMENTS: [(&str, &str); 9] = [
    ("rd.break", "stops the boot in an initramfs shell"),
    ("rd.break=", "stops the boot in an initramfs shell"),
    ("init=", "replaces systemd as the init process"),
    ("single", "boots to single-user rescue mode"),
    ("emergency", "boots to the emergency shell"),
    ("rescue", "boots to rescue mode"),
    (
        "systemd.unit=",
        "boots to another target than multi-user (kubelet does not start)",
    ),
    (
        "ip=",
        "sets static networking on the kernel command line: every node of the pool gets the same",
    ),
    (
        "net.ifnames=",
        "renames network interfaces: network profiles bound to the old names stop matching",
    ),
];

/// The unit type suffixes systemd knows.
pub const UNIT_SUFFIXES: [&str; 11] = [
    ".service",
    ".socket",
    ".device",
    ".mount",
    ".automount",
    ".swap",
    ".target",
    ".path",
    ".timer",
    ".slice",
    ".scope",
];

/// Path prefixes the OS image owns (checked after the `/usr/local` exception).
pub const OS_IMAGE_PREFIXES: [&str; 8] = [
    "/usr/",
    "/boot/",
    "/sysroot/",
    "/ostree/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib64/",
];

/// One lint finding: which lint, and the message (`<mc>: <path>: <what>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintFinding {
    /// The lint.
    pub lint: Lint,
    /// `99-worker-x: spec.config.storage.files[0].mode: ...`.
    pub message: String,
}

/// Runs every lint on one MachineConfig, in the table's order, then by position.
pub fn lint_machine_config(mc: &MachineConfig) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let name = mc.name();
    let mut push = |lint: Lint, path: String, what: String| {
        out.push(LintFinding {
            lint,
            message: format!("{name}: {path}: {what}"),
        });
    };
    let config = mc.ignition();
    let list = |section: &str, key: &str| -> Vec<Value> {
        config
            .and_then(|c| c.get(section))
            .and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let files = list("storage", "files");
    let dirs = list("storage", "directories");
    let links = list("storage", "links");
    let units = list("systemd", "units");
    let mut decimal = Vec::new();
    for (key, entries) in [("files", &files), ("directories", &dirs)] {
        for (i, e) in entries.iter().enumerate() {
            if let Some(mode) = e.get("mode").and_then(Value::as_i64) {
                if looks_decimal(mode) {
                    decimal.push((key, i));
                    let meant = i64::from_str_radix(&mode.to_string(), 8).unwrap_or(mode);
                    push(
                        Lint::DecimalMode,
                        format!("spec.config.storage.{key}[{i}].mode"),
                        format!(
                            "mode {mode} is {mode:#o} ({}); if {meant:#o} was meant, write {meant}",
                            bits(mode),
                        ),
                    );
                }
            }
        }
    }
    for (key, entries) in [("files", &files), ("directories", &dirs)] {
        for (i, e) in entries.iter().enumerate() {
            if decimal.contains(&(key, i)) {
                continue;
            }
            let Some(mode) = e.get("mode").and_then(Value::as_i64) else {
                continue;
            };
            let mut set = Vec::new();
            if mode & 0o4000 != 0 {
                set.push("setuid");
            }
            if mode & 0o2000 != 0 {
                set.push("setgid");
            }
            if mode & 0o1000 != 0 && key == "files" {
                set.push("sticky");
            }
            if !set.is_empty() {
                push(
                    Lint::SpecialBits,
                    format!("spec.config.storage.{key}[{i}].mode"),
                    format!("mode {mode:#o} sets the {} bit", set.join(" and ")),
                );
            }
        }
    }
    for (key, entries) in [("files", &files), ("directories", &dirs), ("links", &links)] {
        for (i, e) in entries.iter().enumerate() {
            let Some(path) = e.get("path").and_then(Value::as_str) else {
                continue;
            };
            if owned_by_os_image(path) {
                push(
                    Lint::OsImagePath,
                    format!("spec.config.storage.{key}[{i}].path"),
                    format!("{path} belongs to the OS image (read-only, replaced on OS updates); write under /etc or /var"),
                );
            }
        }
    }
    for (i, u) in units.iter().enumerate() {
        if let Some(n) = u.get("name").and_then(Value::as_str) {
            if !UNIT_SUFFIXES
                .iter()
                .any(|s| n.ends_with(s) && n.len() > s.len())
            {
                push(
                    Lint::UnitSuffix,
                    format!("spec.config.systemd.units[{i}].name"),
                    format!("unit {n:?} has no unit type suffix (.service, .timer, ...): systemd ignores it"),
                );
            }
        }
        let dropins = u.get("dropins").and_then(Value::as_array);
        for (j, d) in dropins.into_iter().flatten().enumerate() {
            if let Some(n) = d.get("name").and_then(Value::as_str) {
                if !n.ends_with(".conf") {
                    push(
                        Lint::UnitSuffix,
                        format!("spec.config.systemd.units[{i}].dropins[{j}].name"),
                        format!("drop-in {n:?} does not end in .conf: systemd ignores it"),
                    );
                }
            }
        }
    }
    for (i, arg) in mc.spec.kernel_arguments.iter().enumerate() {
        for word in arg.split_whitespace() {
            if let Some((_, why)) = risky_karg(word) {
                push(
                    Lint::RiskyKarg,
                    format!("spec.kernelArguments[{i}]"),
                    format!("{word:?} {why}: nodes that reboot into it may not come back"),
                );
            }
        }
    }
    out
}

/// Whether a mode looks written in decimal where octal was meant: its three decimal digits
/// are octal digits, read as octal they give a usual mode (no special bits, the group has no
/// permission the owner lacks, others none the group lacks: 644, 755, 600), and the value
/// itself is not a usual mode (644 is 0o1204, 444 is 0o674). 420, the usual JSON spelling of
/// 0o644, reads as 0o644 itself and passes.
pub fn looks_decimal(mode: i64) -> bool {
    let digits = mode.to_string();
    digits.len() == 3
        && digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
        && i64::from_str_radix(&digits, 8).is_ok_and(usual_mode)
        && !usual_mode(mode)
}

/// No special bits, and owner ⊇ group ⊇ others.
fn usual_mode(mode: i64) -> bool {
    let (u, g, o) = ((mode >> 6) & 7, (mode >> 3) & 7, mode & 7);
    (0..=0o777).contains(&mode) && g & !u == 0 && o & !g == 0
}

fn bits(mode: i64) -> String {
    let mut s = String::with_capacity(9);
    for shift in [6, 3, 0] {
        let b = (mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    let mut special = Vec::new();
    if mode & 0o4000 != 0 {
        special.push("setuid");
    }
    if mode & 0o2000 != 0 {
        special.push("setgid");
    }
    if mode & 0o1000 != 0 {
        special.push("sticky");
    }
    if special.is_empty() {
        s
    } else {
        format!("{}, {s}", special.join(", "))
    }
}

/// Whether the OS image owns `path` (see [`OS_IMAGE_PREFIXES`]).
pub fn owned_by_os_image(path: &str) -> bool {
    if path == "/usr/local" || path.starts_with("/usr/local/") {
        return false;
    }
    OS_IMAGE_PREFIXES
        .iter()
        .any(|p| path.starts_with(p) || path == p.trim_end_matches('/'))
}

/// The [`RISKY_KERNEL_ARGUMENTS`] entry an argument matches.
pub fn risky_karg(arg: &str) -> Option<(&'static str, &'static str)> {
    RISKY_KERNEL_ARGUMENTS.iter().copied().find(|(k, _)| {
        if k.ends_with('=') {
            arg.starts_with(k)
                && !(*k == "systemd.unit="
                    && matches!(
                        arg,
                        "systemd.unit=multi-user.target" | "systemd.unit=graphical.target"
                    ))
        } else {
            arg == *k
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(config: Value, kargs: &[&str]) -> MachineConfig {
        let v = json!({
            "metadata": {"name": "99-worker-x", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
            "spec": {"config": config, "kernelArguments": kargs},
        });
        match serde_json::from_value(v) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    fn lints(config: Value, kargs: &[&str]) -> Vec<(Lint, String)> {
        lint_machine_config(&mc(config, kargs))
            .into_iter()
            .map(|f| (f.lint, f.message))
            .collect()
    }

    fn files(entries: Value) -> Value {
        json!({"ignition": {"version": "3.5.0"}, "storage": {"files": entries}})
    }

    #[test]
    fn decimal_mode() {
        let got = lints(files(json!([{"path": "/etc/a", "mode": 644}])), &[]);
        assert_eq!(
            got,
            vec![(
                Lint::DecimalMode,
                "99-worker-x: spec.config.storage.files[0].mode: mode 644 is 0o1204 (sticky, -w----r--); if 0o644 was meant, write 420".to_string()
            )]
        );
        // 420 is 0o644 spelled in decimal: fine. 493 has a 9; 416 is 0o640.
        for m in [420, 493, 384, 416, 256] {
            assert!(
                lints(files(json!([{"path": "/etc/a", "mode": m}])), &[]).is_empty(),
                "{m}"
            );
        }
        assert!(looks_decimal(755) && looks_decimal(600) && looks_decimal(444));
        assert!(!looks_decimal(1777) && looks_decimal(777));
        assert!(!looks_decimal(0o755) && !looks_decimal(0o4755));
    }

    #[test]
    fn special_bits() {
        let got = lints(files(json!([{"path": "/etc/a", "mode": 0o4755}])), &[]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, Lint::SpecialBits);
        assert!(
            got[0]
                .1
                .ends_with("files[0].mode: mode 0o4755 sets the setuid bit"),
            "{}",
            got[0].1
        );
        // A sticky shared directory is normal; a setgid one is reported.
        let dirs = json!({"ignition": {"version": "3.5.0"}, "storage": {"directories": [
            {"path": "/var/shared", "mode": 0o1777},
            {"path": "/var/group", "mode": 0o2775},
        ]}});
        let got = lints(dirs, &[]);
        assert_eq!(got.len(), 1);
        assert!(got[0]
            .1
            .contains("directories[1].mode: mode 0o2775 sets the setgid bit"));
    }

    #[test]
    fn os_image_paths() {
        let got = lints(
            files(json!([
                {"path": "/usr/bin/tool"},
                {"path": "/usr/local/bin/tool"},
                {"path": "/etc/tool"},
                {"path": "/boot/loader/x"},
            ])),
            &[],
        );
        let paths: Vec<&str> = got.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(paths[0].contains("files[0].path: /usr/bin/tool belongs to the OS image"));
        assert!(paths[1].contains("files[3].path: /boot/loader/x"));
        assert!(owned_by_os_image("/usr") && !owned_by_os_image("/usrx/a"));
    }

    #[test]
    fn unit_suffixes() {
        let config = json!({"ignition": {"version": "3.5.0"}, "systemd": {"units": [
            {"name": "good.service", "dropins": [{"name": "10-x.conf"}, {"name": "20-y"}]},
            {"name": "chronyd"},
            {"name": ".timer"},
        ]}});
        let got = lints(config, &[]);
        let msgs: Vec<&str> = got.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(
            msgs[0].contains("units[0].dropins[1].name: drop-in \"20-y\" does not end in .conf")
        );
        assert!(msgs[1].contains("units[1].name: unit \"chronyd\" has no unit type suffix"));
        assert!(msgs[2].contains("units[2].name"));
    }

    #[test]
    fn risky_kernel_arguments() {
        let got = lints(
            json!({"ignition": {"version": "3.5.0"}}),
            &[
                "hugepages=512",
                "quiet rd.break",
                "systemd.unit=multi-user.target",
                "ip=10.0.0.5::10.0.0.1:255.255.255.0::eth0:none",
            ],
        );
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[0].1,
            "99-worker-x: spec.kernelArguments[1]: \"rd.break\" stops the boot in an initramfs shell: nodes that reboot into it may not come back"
        );
        assert!(got[1]
            .1
            .starts_with("99-worker-x: spec.kernelArguments[3]: \"ip="));
        for (k, _) in RISKY_KERNEL_ARGUMENTS {
            let arg = if k.ends_with('=') {
                format!("{k}x")
            } else {
                k.to_string()
            };
            assert!(risky_karg(&arg).is_some(), "{arg}");
        }
        assert!(risky_karg("singlex").is_none() && risky_karg("initrd=x").is_none());
    }

    #[test]
    fn the_table_lists_every_lint_once() {
        let ids: std::collections::BTreeSet<&str> = LINTS.iter().map(|(l, _)| l.id()).collect();
        assert_eq!(ids.len(), LINTS.len());
    }
}
