//! Butane's sugar, expanded into Ignition: `boot_device` (mirrored disks, LUKS root), mount
//! units for `with_mount_unit` filesystems, and systemd's unit-name path escaping.

use super::generated::{FLAT, MERGED_INTO, ORIGIN, OWN_FIELDS};
use serde_json::{json, Map, Value};

const RESERVED_GUID: &str = "8DA63339-0007-60C0-C436-083AC8230908";
const BIOS_GUID: &str = "21686148-6449-6E6F-744E-656564454649";
const PREP_GUID: &str = "9E1A2D38-C612-4316-AA26-8B49521E5A8B";
const ESP_GUID: &str = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B";

fn is_true(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool) == Some(true)
}

/// The storage `boot_device` (converted, Ignition-cased) renders: disks, RAID, LUKS and
/// filesystems, to merge under the config's own. `None` when it asks for nothing.
pub fn boot_device(bd: &Map<String, Value>) -> Option<Map<String, Value>> {
    let empty = Map::new();
    let luks = bd.get("luks").and_then(Value::as_object).unwrap_or(&empty);
    let cex = luks
        .get("cex")
        .and_then(Value::as_object)
        .is_some_and(|c| is_true(c.get("enabled")));
    let tang = luks
        .get("tang")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty());
    let want_luks = is_true(luks.get("tpm2")) || tang.is_some() || cex;
    let devices: Vec<&str> = bd
        .get("mirror")
        .and_then(|m| m.get("devices"))
        .and_then(Value::as_array)
        .map(|d| d.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let want_mirror = !devices.is_empty();
    if !want_luks && !want_mirror {
        return None;
    }
    let layout = bd.get("layout").and_then(Value::as_str);
    let (bios, efi, prep) = match layout {
        None | Some("x86_64") => (true, true, false),
        Some("aarch64") => (false, true, false),
        Some("ppc64le") => (false, false, true),
        _ => (false, false, false),
    };
    let mut disks = Vec::new();
    let mut filesystems = Vec::new();
    let mut storage = Map::new();
    if want_mirror {
        for (i, device) in devices.iter().enumerate() {
            let n = i + 1;
            let mut parts = Vec::new();
            let part = |label: String, size: u64, guid: &str| json!({"label": label, "sizeMiB": size, "typeGuid": guid});
            if bios {
                parts.push(part(format!("bios-{n}"), 1, BIOS_GUID));
            } else if prep {
                parts.push(part(format!("prep-{n}"), 4, PREP_GUID));
            } else {
                parts.push(part(format!("reserved-{n}"), 1, RESERVED_GUID));
            }
            if efi {
                parts.push(part(format!("esp-{n}"), 127, ESP_GUID));
            } else {
                parts.push(part(format!("reserved-{n}"), 1, RESERVED_GUID));
            }
            parts.push(json!({"label": format!("boot-{n}"), "sizeMiB": 384}));
            parts.push(json!({"label": format!("root-{n}")}));
            let origin = format!("$.boot_device.mirror.devices.{i}");
            disks.push(
                json!({"device": device, "partitions": parts, "wipeTable": true, ORIGIN: origin, FLAT: true}),
            );
            if efi {
                filesystems.push(json!({
                    "device": format!("/dev/disk/by-partlabel/esp-{n}"),
                    "format": "vfat", "label": format!("esp-{n}"), "wipeFilesystem": true,
                    ORIGIN: origin, FLAT: true,
                }));
            }
        }
        let members = |prefix: &str| -> Vec<String> {
            (1..=devices.len())
                .map(|n| format!("/dev/disk/by-partlabel/{prefix}-{n}"))
                .collect()
        };
        storage.insert(
            "raid".into(),
            json!([
                {"devices": members("boot"), "level": "raid1", "name": "md-boot", "options": ["--metadata=1.0"], ORIGIN: "$.boot_device.mirror", FLAT: true},
                {"devices": members("root"), "level": "raid1", "name": "md-root", ORIGIN: "$.boot_device.mirror", FLAT: true},
            ]),
        );
        filesystems.push(json!({"device": "/dev/md/md-boot", "format": "ext4", "label": "boot", "wipeFilesystem": true, ORIGIN: "$.boot_device.mirror", FLAT: true}));
    }
    if want_luks {
        let base_device = luks.get("device").and_then(Value::as_str).unwrap_or("");
        let device = match layout {
            Some("s390x-eckd") => format!("{base_device}2"),
            Some("s390x-zfcp") => format!("{base_device}4"),
            _ if want_mirror => "/dev/md/md-root".to_string(),
            _ => "/dev/disk/by-partlabel/root".to_string(),
        };
        let mut entry = Map::new();
        if cex {
            entry.insert("cex".into(), json!({"enabled": true}));
        } else {
            let mut clevis = Map::new();
            for key in ["tang", "threshold", "tpm2"] {
                if let Some(v) = luks.get(key) {
                    clevis.insert(key.into(), v.clone());
                }
            }
            entry.insert("clevis".into(), Value::Object(clevis));
        }
        entry.insert("device".into(), Value::String(device));
        if let Some(d) = luks.get("discard") {
            entry.insert("discard".into(), d.clone());
        }
        entry.insert("label".into(), json!("luks-root"));
        entry.insert("name".into(), json!("root"));
        entry.insert("wipeVolume".into(), json!(true));
        entry.insert(ORIGIN.into(), json!("$.boot_device.luks"));
        storage.insert("luks".into(), json!([entry]));
    }
    let root = if want_luks {
        "/dev/mapper/root"
    } else {
        "/dev/md/md-root"
    };
    filesystems.push(json!({"device": root, "format": "xfs", "label": "root", "wipeFilesystem": true, ORIGIN: "$.boot_device", FLAT: true}));
    if !disks.is_empty() {
        storage.insert("disks".into(), Value::Array(disks));
    }
    storage.insert("filesystems".into(), Value::Array(filesystems));
    Some(storage)
}

/// systemd's `unit_name_path_escape`, as go-systemd's `UnitNamePathEscape` writes it.
pub fn unit_name_path_escape(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return "-".into();
    }
    // Collapse repeated slashes as path.Clean would.
    let parts: Vec<&str> = trimmed.split('/').filter(|s| !s.is_empty()).collect();
    let joined = parts.join("/");
    let mut out = String::new();
    for (i, b) in joined.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || b == b':' || b == b'_' || b == b'.' => {
                out.push(b as char)
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The mount (or swap) unit Butane writes for a `with_mount_unit` filesystem; `remote` when
/// its device is a LUKS volume unlocked over the network (Tang).
///
/// `swap_units`: whether swap gets a swap unit (from 4.14); before, every filesystem gets a
/// mount unit.
pub fn mount_unit(fs: &Map<String, Value>, remote: bool, swap_units: bool) -> Value {
    let device = fs.get("device").and_then(Value::as_str).unwrap_or("");
    let format = fs.get("format").and_then(Value::as_str).unwrap_or("");
    let path = fs.get("path").and_then(Value::as_str).unwrap_or("");
    let opts: Vec<&str> = fs
        .get("mountOptions")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut options = String::new();
    if !opts.is_empty() || remote {
        options.push_str("\nOptions=");
        options.push_str(&opts.join(","));
        if remote {
            if !opts.is_empty() {
                options.push(',');
            }
            options.push_str("_netdev");
        }
    }
    let escaped = unit_name_path_escape(device);
    let swap = swap_units && format == "swap";
    let (name, contents) = if swap {
        (
            format!("{escaped}.swap"),
            format!("# Generated by Butane\n[Swap]\nWhat={device}{options}\n\n[Install]\nRequiredBy=swap.target"),
        )
    } else {
        let target = if remote {
            "remote-fs.target"
        } else {
            "local-fs.target"
        };
        (
            format!("{}.mount", unit_name_path_escape(path)),
            format!(
                "# Generated by Butane\n[Unit]\nRequires=systemd-fsck@{escaped}.service\nAfter=systemd-fsck@{escaped}.service\n\n[Mount]\nWhere={path}\nWhat={device}\nType={format}{options}\n\n[Install]\nRequiredBy={target}"
            ),
        )
    };
    json!({"contents": contents, "enabled": true, "name": name})
}

/// The key Ignition's merge matches list entries by; `None` for the lists it concatenates
/// (options, mount options, appends).
fn merge_key(list: &str, entry: &Value) -> Option<Value> {
    let key = match list {
        "options" | "mountOptions" | "append" => return None,
        "disks" | "filesystems" => "device",
        "files" | "directories" | "links" => "path",
        "raid" | "luks" | "units" | "users" | "groups" | "dropins" | "httpHeaders" => "name",
        "tang" => "url",
        "merge" | "certificateAuthorities" => "source",
        "partitions" => {
            let number = entry.get("number").and_then(Value::as_i64).unwrap_or(0);
            return Some(Value::String(if number != 0 {
                format!("number:{number}")
            } else if let Some(l) = entry.get("label").and_then(Value::as_str) {
                format!("label:{l}")
            } else {
                String::new()
            }));
        }
        // Lists of strings: each string is its own key.
        _ => return entry.is_string().then(|| entry.clone()),
    };
    entry.get(key).cloned()
}

/// Ignition's merge of a parent (`base`) and a child (`over`) config: keyed list entries of
/// the child replace fields of the parent's entry with the same key, other child entries come
/// after the parent's; scalars of the child win.
pub fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (Some(Value::Array(b)), Value::Array(o)) => {
                // Child entries match the parent's only, never each other; of the child
                // entries matching one of the parent's, the last is merged into it and the
                // others are dropped.
                let parent_len = b.len();
                let positions: Vec<Option<usize>> = o
                    .iter()
                    .map(|item| {
                        let key = merge_key(&k, item)?;
                        b[..parent_len]
                            .iter()
                            .position(|e| merge_key(&k, e).as_ref() == Some(&key))
                    })
                    .collect();
                for (n, item) in o.into_iter().enumerate() {
                    let at = positions[n];
                    if at.is_some() && positions[n + 1..].contains(&at) {
                        continue;
                    }
                    match (at, item) {
                        (Some(i), Value::Object(o)) => {
                            if let Value::Object(bi) = &mut b[i] {
                                // The fields the child leaves alone keep the parent's origin.
                                let own: Vec<Value> = o
                                    .keys()
                                    .filter(|k| !k.starts_with('\u{0}'))
                                    .map(|k| Value::String(k.clone()))
                                    .collect();
                                if let Some(origin) = bi.get(ORIGIN).cloned() {
                                    bi.insert(MERGED_INTO.into(), origin);
                                    bi.insert(OWN_FIELDS.into(), Value::Array(own));
                                }
                                merge(bi, o);
                            }
                        }
                        (_, item) => b.push(item),
                    }
                }
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}
