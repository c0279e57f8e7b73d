//! Validation: Butane's checks of the source config (names, roles, kernel type, boot device,
//! resources, modes), each worded as upstream words it.

use serde_json::{Map, Value};

/// A finding before it is located: Butane path, message, whether it is only a warning.
pub type Finding = (String, String, bool);

fn err(path: String, msg: impl Into<String>) -> Finding {
    (path, msg.into(), false)
}
fn warn(path: String, msg: impl Into<String>) -> Finding {
    (path, msg.into(), true)
}

fn objs(v: Option<&Value>) -> impl Iterator<Item = (usize, &Map<String, Value>)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, e)| e.as_object().map(|o| (i, o)))
}

fn is_typical_mode(mode: i64, directory: bool) -> bool {
    if mode == 0 {
        return true;
    }
    let perms = [mode & 0o7, (mode & 0o70) >> 3, (mode & 0o700) >> 6];
    let (mut had_r, mut had_w, mut had_x) = (false, false, false);
    for perm in perms {
        let (r, w, x) = (perm & 4 != 0, perm & 2 != 0, perm & 1 != 0);
        if (!r && had_r) || (!w && had_w) || (!x && had_x) {
            return false;
        }
        if x && had_r && !had_x {
            return false;
        }
        if (w || x) && !r {
            return false;
        }
        had_r |= r;
        had_w |= w;
        had_x |= x;
    }
    if !had_r {
        return false;
    }
    if directory {
        had_x && mode & 0o4000 == 0 && (mode & 0o3000 == 0 || had_w)
    } else {
        if mode & 0o6000 != 0 && (!had_x || mode & 2 != 0) {
            return false;
        }
        mode & 0o1000 == 0
    }
}

/// Whether a mode written in decimal (`644`) looks like octal was meant.
pub fn decimal_mode_suspect(mode: i64, directory: bool) -> bool {
    if !(0..=7777).contains(&mode) {
        return false;
    }
    let mut octal = 0;
    let mut divisor = 1000;
    while divisor > 0 {
        let digit = (mode / divisor) % 10;
        if digit > 7 {
            return false;
        }
        octal = (octal << 3) | digit;
        divisor /= 10;
    }
    !is_typical_mode(mode, directory) && is_typical_mode(octal, directory)
}

const DECIMAL_MODE: &str =
    "unreasonable mode would be reasonable if specified in octal; remember to add a leading zero";
const TOO_MANY_SOURCES: &str = "only one of the following can be set: inline, local, source";

fn resource(out: &mut Vec<Finding>, res: &Map<String, Value>, path: &str) {
    let mut field = "";
    let mut n = 0;
    for key in ["local", "inline", "source"] {
        if res.contains_key(key) {
            n += 1;
            field = key;
        }
    }
    if n > 1 {
        out.push(err(format!("{path}.{field}"), TOO_MANY_SOURCES));
    }
}

/// An inline Ignition config to merge or replace with, checked as Butane checks it: its
/// version must parse (the error names the inline config's own path, `$.ignition.version`),
/// and a version other than the spec's skips the rest with a warning. Configs that are not
/// JSON, and the validation of configs of the spec's own version, are left to Ignition.
fn inline_ignition_config(
    out: &mut Vec<Finding>,
    res: &Map<String, Value>,
    path: &str,
    ignition: &str,
) {
    let Some(inline) = res.get("inline").and_then(Value::as_str) else {
        return;
    };
    let Ok(config) = serde_json::from_str::<Value>(inline) else {
        return;
    };
    let version = config
        .get("ignition")
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match semver::Version::parse(version) {
        Err(_) => out.push(err(
            "$.ignition.version".into(),
            "invalid config version (couldn't parse)",
        )),
        Ok(v) if v.to_string() != ignition => out.push(warn(
            format!("{path}.version"),
            "skipping validation for the merge/replace ignition config due to an unkown version",
        )),
        Ok(_) => {}
    }
}

/// openshift 4.19+: CEX on the root volume (boot device or a `root` LUKS volume) needs the
/// kernel argument naming its key file; each of the two is checked on its own.
fn cex_kernel_argument(out: &mut Vec<Finding>, cfg: &Map<String, Value>) {
    const KARG: &str = "rd.luks.key=/etc/luks/cex.key";
    const MSG: &str = "'rd.luks.key=/etc/luks/cex.key' must be set as kernel argument when CEX is enabled for the boot device";
    let enabled = |l: &Value| {
        l.get("cex")
            .and_then(|c| c.get("enabled"))
            .and_then(Value::as_bool)
            == Some(true)
    };
    let has_karg = cfg
        .get("openshift")
        .and_then(|o| o.get("kernelArguments"))
        .and_then(Value::as_array)
        .is_some_and(|k| k.iter().any(|a| a.as_str() == Some(KARG)));
    let boot = cfg
        .get("boot_device")
        .and_then(|b| b.get("luks"))
        .is_some_and(enabled);
    let root = cfg
        .get("storage")
        .and_then(|s| s.get("luks"))
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter()
                .any(|l| enabled(l) && l.get("name").and_then(Value::as_str) == Some("root"))
        });
    for wanted in [boot, root] {
        if wanted && !has_karg {
            out.push(err("$.openshift.kernel_arguments".into(), MSG));
        }
    }
}

/// Butane's checks of the source config (converted, sugar keys still Butane-named),
/// `mirror_twice` as Butane reports a mirror with one device.
pub fn source(cfg: &Map<String, Value>, minor: u8) -> Vec<Finding> {
    let mut out = Vec::new();
    let empty = Map::new();
    let get = |k: &str| cfg.get(k).and_then(Value::as_object).unwrap_or(&empty);
    let storage = get("storage");
    // openshift 4.19+: the config's own check runs first.
    if minor >= 19 {
        cex_kernel_argument(&mut out, cfg);
    }
    let ign = get("ignition");
    if let Some(c) = ign.get("config").and_then(Value::as_object) {
        let ignition = super::SpecVersion::from_minor(minor).map_or("", |v| v.ignition_version());
        for (j, r) in objs(c.get("merge")) {
            let p = format!("$.ignition.config.merge.{j}");
            let before = out.len();
            resource(&mut out, r, &p);
            if out.len() == before {
                inline_ignition_config(&mut out, r, &p, ignition);
            }
        }
        if let Some(r) = c.get("replace").and_then(Value::as_object) {
            let p = "$.ignition.config.replace";
            let before = out.len();
            resource(&mut out, r, p);
            if out.len() == before {
                inline_ignition_config(&mut out, r, p, ignition);
            }
        }
    }
    let cas = ign
        .get("security")
        .and_then(|s| s.get("tls"))
        .and_then(|t| t.get("certificateAuthorities"));
    for (j, r) in objs(cas) {
        resource(
            &mut out,
            r,
            &format!("$.ignition.security.tls.certificate_authorities.{j}"),
        );
    }
    for (i, d) in objs(storage.get("directories")) {
        if let Some(mode) = d.get("mode").and_then(Value::as_i64) {
            if decimal_mode_suspect(mode, true) {
                out.push(warn(
                    format!("$.storage.directories.{i}.mode"),
                    DECIMAL_MODE,
                ));
            }
        }
    }
    for (i, f) in objs(storage.get("files")) {
        let p = format!("$.storage.files.{i}");
        if let Some(mode) = f.get("mode").and_then(Value::as_i64) {
            if decimal_mode_suspect(mode, false) {
                out.push(warn(format!("{p}.mode"), DECIMAL_MODE));
            }
        }
        for (j, a) in objs(f.get("append")) {
            resource(&mut out, a, &format!("{p}.append.{j}"));
        }
        if let Some(c) = f.get("contents").and_then(Value::as_object) {
            resource(&mut out, c, &format!("{p}.contents"));
        }
    }
    for (i, fs) in objs(storage.get("filesystems")) {
        if fs.get("with_mount_unit").and_then(Value::as_bool) == Some(true) {
            let format = fs.get("format").and_then(Value::as_str).unwrap_or("");
            let path = fs.get("path").and_then(Value::as_str).unwrap_or("");
            if minor <= 13 {
                // Before swap units: a path always, then a format.
                if path.is_empty() {
                    out.push(err(
                        format!("$.storage.filesystems.{i}.path"),
                        "path is required if with_mount_unit is true and format is not swap",
                    ));
                }
                if format.is_empty() {
                    out.push(err(
                        format!("$.storage.filesystems.{i}.format"),
                        "format is required if with_mount_unit is true",
                    ));
                }
            } else if format.is_empty() {
                out.push(err(
                    format!("$.storage.filesystems.{i}.format"),
                    "format is required if with_mount_unit is true",
                ));
            } else if format != "swap" && path.is_empty() {
                out.push(err(
                    format!("$.storage.filesystems.{i}.path"),
                    "path is required if with_mount_unit is true and format is not swap",
                ));
            }
        }
    }
    for (i, l) in objs(storage.get("luks")) {
        if let Some(k) = l.get("keyFile").and_then(Value::as_object) {
            resource(&mut out, k, &format!("$.storage.luks.{i}.key_file"));
        }
    }
    for (i, t) in objs(storage.get("trees")) {
        if t.get("local")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            out.push(err(format!("$.storage.trees.{i}"), "local is required"));
        }
    }
    for (i, u) in objs(get("systemd").get("units")) {
        let p = format!("$.systemd.units.{i}");
        if u.contains_key("contents") && u.contains_key("contents_local") {
            out.push(err(
                format!("{p}.contents_local"),
                "only one of the following can be set: contents, contents_local",
            ));
        }
        for (j, d) in objs(u.get("dropins")) {
            if d.contains_key("contents") && d.contains_key("contents_local") {
                out.push(err(
                    format!("{p}.dropins.{j}.contents_local"),
                    "only one of the following can be set: contents, contents_local",
                ));
            }
        }
    }
    boot_device(&mut out, get("boot_device"), minor);
    let md = get("metadata");
    if md
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        out.push(err("$.metadata.name".into(), "metadata.name is required"));
    }
    let role = md
        .get("labels")
        .and_then(|l| l.get("machineconfiguration.openshift.io/role"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if role.is_empty() {
        out.push(err(
            "$.metadata.labels".into(),
            "machineconfiguration.openshift.io/role label is required",
        ));
    }
    if let Some(kt) = get("openshift").get("kernelType").and_then(Value::as_str) {
        if !matches!(kt, "" | "default" | "realtime") {
            out.push(err(
                "$.openshift.kernel_type".into(),
                "must be empty, \"default\", or \"realtime\"",
            ));
        }
    }
    out
}

fn boot_device(out: &mut Vec<Finding>, bd: &Map<String, Value>, minor: u8) {
    let empty = Map::new();
    let luks = bd.get("luks").and_then(Value::as_object).unwrap_or(&empty);
    let devices = bd
        .get("mirror")
        .and_then(|m| m.get("devices"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let layout = bd.get("layout").and_then(Value::as_str);
    let cex = luks
        .get("cex")
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true);
    if devices > 0 && layout.is_none() {
        out.push(warn(
            "$.boot_device.mirror".into(),
            "boot_device.layout should be specified when boot_device.mirror is specified",
        ));
    }
    if let Some(layout) = layout {
        let s390x = minor >= 19;
        let luks_device = luks.get("device").and_then(Value::as_str).unwrap_or("");
        match layout {
            "aarch64" | "ppc64le" | "x86_64" => {}
            "s390x-virt" if s390x => {}
            "s390x-eckd" | "s390x-zfcp" if s390x => {
                let prefix = if layout == "s390x-eckd" { "/dev/dasd" } else { "/dev/sd" };
                // Butane's pattern (`/dev/dasd[a-z]$`, unanchored at the start): the prefix
                // and one letter, at the end.
                let named = luks_device
                    .strip_suffix(|c: char| c.is_ascii_lowercase())
                    .is_some_and(|head| head.ends_with(prefix));
                if luks_device.is_empty() {
                    out.push(err("$.boot_device.layout".into(), "device is required for layouts: s390x-eckd, s390x-zfcp"));
                } else if !named {
                    out.push(err(
                        "$.boot_device.layout".into(),
                        "device name must start with /dev/dasd on s390x-eckd layout or /dev/sd on s390x-zfcp layout",
                    ));
                }
            }
            _ if s390x => out.push(err(
                "$.boot_device.layout".into(),
                "layout must be one of: aarch64, ppc64le, s390x-eckd, s390x-virt, s390x-zfcp, x86_64",
            )),
            _ => out.push(err("$.boot_device.layout".into(), "layout must be one of: aarch64, ppc64le, x86_64")),
        }
        if s390x && layout.starts_with("s390x") && devices > 0 {
            out.push(err(
                "$.boot_device.layout".into(),
                "mirroring not supported on layouts: s390x-eckd, s390x-zfcp, s390x-virt",
            ));
        }
    }
    if cex {
        match layout {
            None => out.push(err(
                "$.boot_device.luks.cex".into(),
                "when using cex the targeted architecture must match s390x",
            )),
            Some(l) if !l.starts_with("s390x") => out.push(err(
                "$.boot_device.layout".into(),
                "when using cex the targeted architecture must match s390x",
            )),
            _ => {}
        }
        if luks
            .get("tang")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
            || luks.get("tpm2").and_then(Value::as_bool) == Some(true)
        {
            out.push(err(
                "$.boot_device.luks".into(),
                "cannot use cex with clevis",
            ));
        }
    }
    // Butane validates the mirror inside the boot device and again on its own.
    for _ in 0..2 {
        if devices == 1 {
            out.push(err(
                "$.boot_device.mirror.devices".into(),
                "mirroring requires at least two devices",
            ));
        }
    }
}

/// The fcos translation's warnings on partitions (of the disks after the boot device's are
/// merged in): a `root` partition that cannot grow or is under 8 GiB, and the reserved
/// labels at numbers other than the image's, on disks not wiped.
pub fn partitions(disks: &[Value]) -> Vec<Finding> {
    let mut out = Vec::new();
    for disk in disks {
        let parts: Vec<&Map<String, Value>> = disk
            .get("partitions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .collect();
        let wiped = disk.get("wipeTable").and_then(Value::as_bool) == Some(true);
        for (p, part) in parts.iter().enumerate() {
            let Some(label) = part.get("label").and_then(Value::as_str) else {
                continue;
            };
            let Some(origin) = part.get(super::generated::ORIGIN).and_then(Value::as_str) else {
                continue;
            };
            let int = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_i64);
            if label == "root" {
                match int(part, "sizeMiB") {
                    None | Some(0) => {
                        let follows = parts
                            .iter()
                            .enumerate()
                            .any(|(i, o)| i != p && int(o, "startMiB").unwrap_or(0) == 0);
                        if follows {
                            out.push(warn(
                                format!("{origin}.label"),
                                "root partition cannot expand; it is set to fill available space but is followed by an auto-positioned partition",
                            ));
                        }
                    }
                    Some(size) if size < 8192 => out.push(warn(
                        format!("{origin}.size_mib"),
                        "root should have 8GiB of space assigned",
                    )),
                    Some(_) => {}
                }
            }
            if !wiped {
                let number = int(part, "number").unwrap_or(0);
                let expected = match label {
                    "BIOS-BOOT" | "PowerPC-PReP-boot" => Some(1),
                    "EFI-SYSTEM" => Some(2),
                    "boot" => Some(3),
                    "root" => Some(4),
                    _ => None,
                };
                if expected.is_some_and(|n| n != number) {
                    out.push(warn(
                        format!("{origin}.label"),
                        "incorrect partition number; a new partition will be created using reserved label",
                    ));
                }
            }
        }
    }
    out
}
