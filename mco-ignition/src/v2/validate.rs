//! Spec 2.2 validation, walking the decoded config the way upstream's reflective validator
//! does: each struct's own check first (stopping at a fatal one), then field by field in
//! declaration order (per-field checks, then the field's value), then unknown keys. Entries are
//! located at the closest value present in the source, with the highlight rules upstream uses.

use serde_json::Value;

use super::decode::fold_eq;
use super::gojson::{PosKind, PosNode};
use super::report::{highlight, Entry, Kind, Position, Report};
use super::schema::{Struct, Ty, CONFIG};
use super::unit::{deserialize, V2UnitOption};
use crate::dataurl::validate_source_url_v2;
use crate::gocompat::quote::go_quote;
use crate::validate::rules::{is_guid, path_ext};

/// Source bytes and their position tree, when validating with source.
pub struct Source<'a> {
    /// The serialised config.
    pub bytes: &'a [u8],
    /// Positions of its values.
    pub root: &'a PosNode,
}

/// Validates a decoded 2.2 config; with `source`, entries are located and unknown keys reported.
pub fn validate_config(cfg: &Value, source: Option<&Source<'_>>) -> Report {
    let pos = source.map(|s| s.root);
    walk(Ty::Obj(&CONFIG), cfg, pos, source)
}

fn here(pos: Option<&PosNode>, src: Option<&Source<'_>>, with_text: bool) -> Option<Position> {
    match (pos, src) {
        (Some(p), Some(s)) => Some(highlight(s.bytes, p.end, with_text)),
        _ => None,
    }
}

fn walk(ty: Ty, val: &Value, pos: Option<&PosNode>, src: Option<&Source<'_>>) -> Report {
    let mut r = Report::default();
    match ty {
        Ty::Obj(st) | Ty::PObj(st) => {
            let mut own = own_validate(st, val);
            own.add_position(here(pos, src, true).as_ref());
            let fatal = own.is_fatal();
            r.merge(own);
            if fatal {
                return r;
            }
            let mut sub = walk_fields(st, val, pos, src);
            sub.add_position(here(pos, src, false).as_ref());
            r.merge(sub);
        }
        Ty::ObjList(st) => {
            if let Value::Array(items) = val {
                for (i, item) in items.iter().enumerate() {
                    let child = match pos.map(|p| &p.kind) {
                        Some(PosKind::Array(kids)) => kids.get(i),
                        _ => pos,
                    };
                    let mut sub = walk(Ty::Obj(st), item, child, src);
                    sub.add_position(here(pos, src, false).as_ref());
                    r.merge(sub);
                }
            }
        }
        _ => {}
    }
    r
}

fn walk_fields(
    st: &'static Struct,
    val: &Value,
    pos: Option<&PosNode>,
    src: Option<&Source<'_>>,
) -> Report {
    let mut r = Report::default();
    let empty = Value::Object(Default::default());
    for (tag, go, ty) in st.fields {
        let sub = pos.and_then(|p| p.child(tag));
        let sub = if src.is_some() { sub } else { None };
        if let Some(mut fr) = field_validate(st.name, go, val) {
            fr.add_position(here(sub, src, true).as_ref());
            r.merge(fr);
        }
        let fv = val.get(*tag);
        let sub_r = match ty {
            Ty::Obj(_) => walk(*ty, fv.unwrap_or(&empty), sub, src),
            Ty::PObj(_) | Ty::ObjList(_) => match fv {
                Some(v) => walk(*ty, v, sub, src),
                None => Report::default(),
            },
            _ => Report::default(),
        };
        r.merge(sub_r);
    }
    if let (
        Some(PosNode {
            kind: PosKind::Object(keys),
            ..
        }),
        Some(s),
    ) = (pos, src)
    {
        for (k, node) in keys {
            if st.fields.iter().any(|(t, _, _)| t == k) {
                continue;
            }
            let at = highlight(s.bytes, node.key_end, true);
            r.add(Entry {
                kind: Kind::Warning,
                message: format!("Config has unrecognized key: {k}"),
                position: Some(at.clone()),
            });
            if let Some((t, _, _)) = st.fields.iter().find(|(t, _, _)| fold_eq(k, t)) {
                r.add(Entry {
                    kind: Kind::Info,
                    message: format!("Did you mean {t} instead of {k}"),
                    position: Some(at),
                });
            }
        }
    }
    r
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}
fn b(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}
fn i(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}
fn list<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}
fn err(msg: impl Into<String>) -> Entry {
    Entry::new(Kind::Error, msg)
}
fn warn(msg: impl Into<String>) -> Entry {
    Entry::new(Kind::Warning, msg)
}
fn one(e: Entry) -> Report {
    Report { entries: vec![e] }
}

fn unit_content(contents: &str) -> Result<Vec<V2UnitOption>, String> {
    deserialize(contents).map_err(|e| format!("invalid unit content: {e}"))
}

fn own_validate(st: &Struct, v: &Value) -> Report {
    let mut r = Report::default();
    match st.name {
        "Config" => {
            let mut fss: Vec<&str> = vec!["root"];
            for f in list(v.get("storage").unwrap_or(&Value::Null), "filesystems") {
                fss.push(s(f, "name"));
            }
            let storage = v.get("storage").cloned().unwrap_or(Value::Null);
            for (key, kind) in [
                ("files", "File"),
                ("links", "Link"),
                ("directories", "Directory"),
            ] {
                for n in list(&storage, key) {
                    let fs = s(n, "filesystem");
                    if !fs.is_empty() && !fss.contains(&fs) {
                        r.add(warn(format!(
                            "{kind} {} references nonexistent filesystem {}. (This is ok if it is defined in a referenced config)",
                            go_quote(s(n, "path")),
                            go_quote(fs)
                        )));
                    }
                }
            }
            let mut seen: Vec<&str> = vec!["root"];
            for f in list(&storage, "filesystems") {
                let name = s(f, "name");
                if seen.contains(&name) {
                    r.add(warn(format!(
                        "Filesystem {} shadows exising filesystem definition",
                        go_quote(name)
                    )));
                }
                seen.push(name);
            }
        }
        "Ignition" => {
            let ver = s(v, "version");
            match semver::Version::parse(ver) {
                Err(_) => r.add(err("invalid config version (couldn't parse)")),
                Ok(tv) if tv.major < 2 => r.add(err("incorrect config version (too old)")),
                Ok(tv) if (tv.major, tv.minor, tv.patch) > (2, 2, 0) => {
                    r.add(err("incorrect config version (too new)"))
                }
                Ok(_) => {}
            }
        }
        "File" if v.get("overwrite").and_then(Value::as_bool) == Some(true) && b(v, "append") => {
            r.add(err("cannot set both append and overwrite to true"));
        }
        "Filesystem" => {
            let mount = v.get("mount");
            let has_path = v.get("path").is_some();
            if mount.is_none() && !has_path {
                r.add(err("filesystem is missing mount or path"));
            }
            if let Some(m) = mount {
                if has_path {
                    r.add(err("filesystem has both mount and path defined"));
                }
                if m.get("create").is_some() {
                    if b(m, "wipeFilesystem") {
                        r.add(err(
                            "cannot use both create object and wipeFilesystem field",
                        ));
                    }
                    if !list(m, "options").is_empty() {
                        r.add(err(
                            "cannot use both create object and mount-level options field",
                        ));
                    }
                    r.add(warn(
                        "the create object has been deprecated in favor of mount-level options",
                    ));
                }
            }
        }
        "Mount" if !matches!(s(v, "format"), "ext4" | "btrfs" | "xfs" | "swap" | "vfat") => {
            r.add(err("invalid filesystem format"));
        }
        "NodeUser" | "NodeGroup" if v.get("id").is_some() && !s(v, "name").is_empty() => {
            r.add(err("cannot set both id and name"));
        }
        "PasswdUser" if v.get("create").is_some() => {
            r.add(warn(
                "the create object has been deprecated in favor of user-level options",
            ));
            let checks: [(&str, bool); 10] = [
                ("gecos", !s(v, "gecos").is_empty()),
                ("groups", !list(v, "groups").is_empty()),
                ("homeDir", !s(v, "homeDir").is_empty()),
                ("noCreateHome", b(v, "noCreateHome")),
                ("noLogInit", b(v, "noLogInit")),
                ("noUserGroup", b(v, "noUserGroup")),
                ("primaryGroup", !s(v, "primaryGroup").is_empty()),
                ("shell", !s(v, "shell").is_empty()),
                ("system", b(v, "system")),
                ("uid", v.get("uid").is_some()),
            ];
            for (field, set) in checks {
                if set {
                    r.add(err(format!(
                        "cannot use both the create object and the user-level {field} field"
                    )));
                }
            }
        }
        "SystemdDropin" | "NetworkdDropin" | "Networkdunit" => {
            if let Err(e) = unit_content(s(v, "contents")) {
                r.add(err(e));
            }
            let ext = path_ext(s(v, "name"));
            match st.name {
                "SystemdDropin" if ext != ".conf" => {
                    r.add(err("invalid systemd drop-in extension"))
                }
                "NetworkdDropin" if ext != ".conf" => {
                    r.add(err("invalid networkd drop-in extension"))
                }
                "Networkdunit" if !matches!(ext, ".link" | ".netdev" | ".network") => {
                    r.add(err("invalid networkd unit extension"))
                }
                _ => {}
            }
        }
        "Verification" => {
            if let Some(h) = v.get("hash").and_then(Value::as_str) {
                match h.split_once('-') {
                    None => r.add(err("malformed hash specifier")),
                    Some(("sha512", sum)) => {
                        if sum.len() != 128 {
                            r.add(err("incorrect size for hash sum"));
                        }
                    }
                    Some(_) => r.add(err("unrecognized hash function")),
                }
            }
        }
        _ => {}
    }
    r
}

fn is_abs(p: &str) -> bool {
    p.starts_with('/')
}

fn mode_check(v: &Value) -> Report {
    let mut r = Report::default();
    match v.get("mode").and_then(Value::as_i64) {
        Some(m) if !(0..=0o7777).contains(&m) => r.add(err("illegal file mode")),
        Some(_) => {}
        None => r.add(warn("permissions unset, defaulting to 0000")),
    }
    r
}

fn field_validate(st: &str, field: &str, v: &Value) -> Option<Report> {
    let r = match (st, field) {
        ("File" | "Directory", "Mode") => mode_check(v),
        ("File" | "Directory" | "Link", "Filesystem") => {
            if s(v, "filesystem").is_empty() {
                one(err("no filesystem specified"))
            } else {
                Report::default()
            }
        }
        ("File" | "Directory" | "Link", "Path") => {
            if is_abs(s(v, "path")) {
                Report::default()
            } else {
                one(err("path not absolute"))
            }
        }
        ("FileContents", "Compression") => match s(v, "compression") {
            "" | "gzip" => Report::default(),
            _ => one(err("invalid compression method")),
        },
        ("FileContents" | "ConfigReference" | "CaReference", "Source") => {
            match validate_source_url_v2(s(v, "source")) {
                Ok(()) => Report::default(),
                Err(e) => one(err(e.to_string())),
            }
        }
        ("Disk", "Device") => {
            let d = s(v, "device");
            if d.is_empty() {
                one(err("disk device is required"))
            } else if !is_abs(d) {
                one(err("path not absolute"))
            } else {
                Report::default()
            }
        }
        ("Disk", "Partitions") => disk_partitions(v),
        ("Partition", "Label") => {
            let mut r = Report::default();
            let l = s(v, "label");
            if l.len() > 36 {
                r.add(err("partition labels may not exceed 36 characters"));
            }
            if l.contains(':') {
                r.add(warn(
                    "partition label will be truncated to text before the colon",
                ));
            }
            r
        }
        ("Partition", "TypeGUID") | ("Partition", "GUID") => {
            let guid = s(v, if field == "GUID" { "guid" } else { "typeGuid" });
            if guid.is_empty() || is_guid(guid) {
                Report::default()
            } else {
                one(err(
                    "doesn't match the form \"01234567-89AB-CDEF-EDCB-A98765432101\"",
                ))
            }
        }
        ("Filesystem", "Path") => match v.get("path").and_then(Value::as_str) {
            Some(p) if !is_abs(p) => one(err("path not absolute")),
            _ => Report::default(),
        },
        ("Mount", "Device") => {
            if is_abs(s(v, "device")) {
                Report::default()
            } else {
                one(err("path not absolute"))
            }
        }
        ("Mount", "Label") => {
            let Some(l) = v.get("label").and_then(Value::as_str) else {
                return Some(Report::default());
            };
            let limit = match s(v, "format") {
                "ext4" => Some((16, "ext4")),
                "btrfs" => Some((256, "btrfs")),
                "xfs" => Some((12, "xfs")),
                "swap" => Some((15, "swap")),
                "vfat" => Some((11, "vfat")),
                _ => None,
            };
            match limit {
                Some((n, fmt)) if l.len() > n => one(err(format!(
                    "filesystem labels cannot be longer than {n} characters when using {fmt}"
                ))),
                _ => Report::default(),
            }
        }
        ("Raid", "Level") => match s(v, "level") {
            "linear" | "raid0" | "0" | "stripe" => {
                if i(v, "spares") != 0 {
                    one(err(
                        "spares unsupported for arrays with a level greater than 0",
                    ))
                } else {
                    Report::default()
                }
            }
            "raid1" | "1" | "mirror" | "raid4" | "4" | "raid5" | "5" | "raid6" | "6" | "raid10"
            | "10" => Report::default(),
            _ => one(err("unrecognized raid level")),
        },
        ("Raid", "Devices") => {
            let mut r = Report::default();
            for d in list(v, "devices") {
                if !is_abs(d.as_str().unwrap_or("")) {
                    r.add(err("path not absolute"));
                }
            }
            r
        }
        ("Unit", "Contents") => {
            let mut r = Report::default();
            let contents = s(v, "contents");
            let opts = match unit_content(contents) {
                Ok(o) => Some(o),
                Err(e) => {
                    r.add(err(e));
                    None
                }
            };
            let enabled = b(v, "enable") || v.get("enabled").and_then(Value::as_bool) == Some(true);
            if enabled && !contents.is_empty() {
                if let Some(o) = opts.filter(|o| !o.is_empty()) {
                    if !o.iter().any(|x| x.section == "Install") {
                        r.add(warn(format!(
                            "unit {} is enabled, but has no install section so enable does nothing",
                            go_quote(s(v, "name"))
                        )));
                    }
                }
            }
            r
        }
        ("Unit", "Name") => match path_ext(s(v, "name")) {
            ".service" | ".socket" | ".device" | ".mount" | ".automount" | ".swap" | ".target"
            | ".path" | ".timer" | ".snapshot" | ".slice" | ".scope" => Report::default(),
            _ => one(err("invalid systemd unit extension")),
        },
        _ => return None,
    };
    Some(r)
}

fn disk_partitions(v: &Value) -> Report {
    let parts = list(v, "partitions");
    let num = |p: &Value| i(p, "number");
    let start = |p: &Value| i(p, "start");
    let size = |p: &Value| i(p, "size");
    let end = |p: &Value| {
        if size(p) == 0 {
            start(p)
        } else {
            start(p) + size(p) - 1
        }
    };
    let mut r = Report::default();
    let collide = parts
        .iter()
        .enumerate()
        .any(|(a, p)| num(p) != 0 && parts.iter().skip(a + 1).any(|q| num(q) == num(p)));
    if collide {
        r.add(err("partition numbers collide"));
    }
    let overlap = parts.iter().any(|p| {
        start(p) != 0
            && parts.iter().any(|o| {
                if p == o || start(o) == 0 {
                    return false;
                }
                (start(p) >= start(o) && start(p) <= end(o))
                    || (end(p) >= start(o) && end(p) <= end(o))
                    || (start(p) < start(o) && end(p) > end(o))
            })
    });
    if overlap {
        r.add(err("partitions overlap"));
    }
    if parts.iter().any(|p| start(p) & 2047 != 0) {
        r.add(err("partitions misaligned"));
    }
    r
}
