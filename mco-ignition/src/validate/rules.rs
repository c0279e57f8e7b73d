//! Per-type validation rules, dispatched by schema type.

use super::unit::parse_unit;
use crate::dataurl;
use crate::gocompat::quote::go_quote;
use crate::path::JsonPath;
use crate::report::Report;
use crate::schema::Obj;
use crate::small_map::SmallGet;
use serde_json::{Map, Value};

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.small_get(k).and_then(Value::as_str)
}

fn i(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.small_get(k).and_then(Value::as_i64)
}

fn is_true(m: &Map<String, Value>, k: &str) -> bool {
    m.small_get(k).and_then(Value::as_bool) == Some(true)
}

fn list<'a>(m: &'a Map<String, Value>, k: &str) -> &'a [Value] {
    m.small_get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn obj<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.small_get(k).and_then(Value::as_object)
}

fn nil_or_empty(v: Option<&str>) -> bool {
    v.is_none_or(str::is_empty)
}

pub use crate::path::clean as clean_path;

/// Upstream's path rule for nodes and devices.
pub fn path_error(p: &str) -> Option<&'static str> {
    if p.is_empty() {
        Some("path not specified")
    } else if !p.starts_with('/') {
        Some("path not absolute")
    } else if !is_clean_absolute(p) {
        Some("path is not fully simplified")
    } else {
        None
    }
}

/// Whether an absolute path is its own [`clean_path`]: `/`, or segments that are neither
/// empty, `.` nor `..`, with no trailing slash. Checked without building the cleaned path.
fn is_clean_absolute(p: &str) -> bool {
    p == "/"
        || p.strip_prefix('/')
            .is_some_and(|rest| rest.split('/').all(|seg| !matches!(seg, "" | "." | "..")))
}

fn url_error(u: &str, minor: u64) -> Option<String> {
    dataurl::validate_source_url(u, minor)
        .err()
        .map(|e| e.to_string())
}

/// Applies the rules of one schema type to one object at `path`.
pub(super) fn check(
    o: &'static Obj,
    m: &Map<String, Value>,
    path: &JsonPath,
    minor: u64,
    root: &Map<String, Value>,
    r: &mut Report,
) {
    match o.name {
        "Config" => config_rules(m, path, r),
        "IgnitionConfig" => {
            for (idx, res) in list(m, "merge").iter().enumerate() {
                if let Some(e) = required_source(res, minor) {
                    r.error(path.key("merge").index(idx), e);
                }
            }
        }
        "TLS" => {
            for (idx, res) in list(m, "certificateAuthorities").iter().enumerate() {
                if let Some(e) = required_source(res, minor) {
                    r.error(path.key("certificateAuthorities").index(idx), e);
                }
            }
        }
        "Proxy" => {
            proxy_url(s(m, "httpProxy"), &path.key("httpProxy"), true, r);
            proxy_url(s(m, "httpsProxy"), &path.key("httpsProxy"), false, r);
        }
        "Resource" => resource_rules(m, path, minor, r),
        "Verification" => hash_rules(s(m, "hash"), &path.key("hash"), r),
        "HTTPHeader" => {
            if s(m, "name").unwrap_or("").is_empty() {
                r.error(path.key("name"), "HTTP header name can't be empty");
            }
            if s(m, "value") == Some("") {
                r.error(path.key("value"), "unable to parse HTTP header");
            }
        }
        "Storage" => storage_rules(m, path, minor, r),
        "Directory" => {
            node_path(m, path, r);
            mode_rules(m, path, r);
        }
        "File" => {
            node_path(m, path, r);
            mode_rules(m, path, r);
            let source = obj(m, "contents").and_then(|c| s(c, "source"));
            if is_true(m, "overwrite") && source.is_none() {
                r.error(
                    path.key("overwrite"),
                    "overwrite must be false if source is unspecified",
                );
            }
        }
        "Link" => node_path(m, path, r),
        "NodeOwner" if i(m, "id").is_some() && !nil_or_empty(s(m, "name")) => {
            r.error(path.clone(), "cannot set both id and name");
        }
        "Unit" => unit_rules(m, path, r),
        "Dropin" => {
            if let Some(c) = s(m, "contents") {
                if let Err(e) = parse_unit(c) {
                    r.error(path.key("contents"), e);
                }
            }
            if !s(m, "name").unwrap_or("").ends_with(".conf")
                || path_ext(s(m, "name").unwrap_or("")) != ".conf"
            {
                r.error(path.key("name"), "invalid systemd drop-in extension");
            }
        }
        "Systemd" => systemd_rules(m, path, r),
        "Disk" => {
            let dev = s(m, "device").unwrap_or("");
            if dev.is_empty() {
                r.error(path.key("device"), "disk device is required");
            }
            if let Some(e) = path_error(dev) {
                r.error(path.key("device"), e);
            }
        }
        "Partition" => partition_rules(m, path, r),
        "Filesystem" => filesystem_rules(m, path, r),
        "Raid" => raid_rules(m, path, r),
        "Luks" => luks_rules(m, path, r),
        _ => {}
    }
    let _ = root;
}

/// Go's `path.Ext`: the name's extension from its last `.`, or `""` (spec 2 shares it).
pub(crate) fn path_ext(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rfind('.') {
        Some(idx) => &base[idx..],
        None => "",
    }
}

fn required_source(res: &Value, minor: u64) -> Option<String> {
    let src = res.small_get("source").and_then(Value::as_str);
    match src {
        None | Some("") => Some("source is required".into()),
        Some(u) => url_error(u, minor),
    }
}

fn proxy_url(v: Option<&str>, p: &JsonPath, http_ok: bool, r: &mut Report) {
    let Some(u) = v else { return };
    let scheme = u.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("https") => {}
        Some("http") => {
            if !http_ok {
                r.warn(
                    p.clone(),
                    "insecure plaintext HTTP proxy specified for HTTPS resources",
                );
            }
        }
        _ => r.error(p.clone(), "proxies must be http(s)"),
    }
}

fn resource_rules(m: &Map<String, Value>, path: &JsonPath, minor: u64, r: &mut Report) {
    if let Some(c) = s(m, "compression") {
        if !matches!(c, "" | "gzip") {
            r.error(path.key("compression"), "invalid compression method");
        }
    }
    let source = s(m, "source");
    let hash = obj(m, "verification").and_then(|v| s(v, "hash"));
    if hash.is_some() && source.is_none() {
        r.error(
            path.key("verification").key("hash"),
            "source must be specified if verification is specified",
        );
    }
    if let Some(u) = source.filter(|u| !u.is_empty()) {
        if let Some(e) = url_error(u, minor) {
            r.error(path.key("source"), e);
        }
    }
    if !list(m, "httpHeaders").is_empty() {
        let err = match source {
            None | Some("") => Some("unable to parse url"),
            Some(u) => match u.split_once(':').map(|(s, _)| s) {
                Some("http") | Some("https") => None,
                _ => Some("cannot use HTTP headers with this source scheme"),
            },
        };
        if let Some(e) = err {
            r.error(path.key("httpHeaders"), e);
        }
    }
}

fn hash_rules(hash: Option<&str>, p: &JsonPath, r: &mut Report) {
    let Some(h) = hash else { return };
    let Some((func, sum)) = h.split_once('-') else {
        r.error(p.clone(), "malformed hash specifier");
        return;
    };
    let len = match func {
        "sha512" => 128,
        "sha256" => 64,
        _ => {
            r.error(p.clone(), "unrecognized hash function");
            return;
        }
    };
    if sum.len() != len {
        r.error(p.clone(), "incorrect size for hash sum");
    }
}

fn node_path(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    if let Some(e) = path_error(s(m, "path").unwrap_or("")) {
        r.error(path.key("path"), e);
    }
}

/// The warning on a file mode with setuid, setgid or sticky bits (Ignition v2.26's words).
pub const SPECIAL_MODE_BITS_WARNING: &str =
    "setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0";

fn mode_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    if let Some(mode) = i(m, "mode") {
        if !(0..=0o7777).contains(&mode) {
            r.error(path.key("mode"), "illegal file mode");
        }
        if (mode as u32) & 0o7000 != 0 {
            r.warn(path.key("mode"), SPECIAL_MODE_BITS_WARNING);
        }
    }
}

fn config_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    let empty = Map::new();
    let systemd = obj(m, "systemd").unwrap_or(&empty);
    let mut unit_paths = std::collections::HashSet::new();
    for u in list(systemd, "units") {
        let name = u.small_get("name").and_then(Value::as_str).unwrap_or("");
        if !nil_or_empty(u.small_get("contents").and_then(Value::as_str)) {
            unit_paths.insert(format!("/etc/systemd/system/{name}"));
        }
        for d in u
            .small_get("dropins")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            if !nil_or_empty(d.small_get("contents").and_then(Value::as_str)) {
                let dn = d.small_get("name").and_then(Value::as_str).unwrap_or("");
                unit_paths.insert(format!("/etc/systemd/system/{name}.d/{dn}"));
            }
        }
    }
    if unit_paths.is_empty() {
        return;
    }
    let storage = obj(m, "storage").unwrap_or(&empty);
    for kind in ["files", "directories", "links"] {
        for (idx, n) in list(storage, kind).iter().enumerate() {
            let p = n.small_get("path").and_then(Value::as_str).unwrap_or("");
            if unit_paths.contains(p) {
                r.error(
                    path.key("storage").key(kind).index(idx).key("path"),
                    "path conflicts with systemd unit or dropin",
                );
            }
        }
    }
}

fn storage_rules(m: &Map<String, Value>, path: &JsonPath, minor: u64, r: &mut Report) {
    let links = list(m, "links");
    let link_paths: Vec<&str> = links
        .iter()
        .map(|l| l.small_get("path").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let under_link = |p: &str| {
        link_paths
            .iter()
            .filter(|l| p.starts_with(&format!("{l}/")))
            .count()
    };
    for (idx, d) in list(m, "directories").iter().enumerate() {
        for _ in 0..under_link(d.small_get("path").and_then(Value::as_str).unwrap_or("")) {
            r.error(
                path.key("directories").index(idx),
                "directory path includes link in config",
            );
        }
    }
    for (idx, f) in list(m, "files").iter().enumerate() {
        for _ in 0..under_link(f.small_get("path").and_then(Value::as_str).unwrap_or("")) {
            r.error(
                path.key("files").index(idx),
                "file path includes link in config",
            );
        }
    }
    let dirs: Vec<&str> = list(m, "directories")
        .iter()
        .map(|d| d.small_get("path").and_then(Value::as_str).unwrap_or(""))
        .collect();
    for (idx, l) in links.iter().enumerate() {
        let lp = l.small_get("path").and_then(Value::as_str).unwrap_or("");
        for _ in 0..under_link(lp) {
            r.error(
                path.key("links").index(idx),
                "link path includes link in config",
            );
        }
        let target = l.small_get("target").and_then(Value::as_str).unwrap_or("");
        // Before 3.3 the target is a plain string and its absence is not checked.
        if target.is_empty() {
            if minor >= 3 {
                r.error(
                    path.key("links").index(idx).key("target"),
                    "link target is required",
                );
            }
            continue;
        }
        if l.small_get("hard").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let mut t = clean_path(target);
        if !t.starts_with('/') {
            t = clean_path(&format!("{lp}/{target}"));
        }
        for d in &dirs {
            if t == *d {
                r.error(
                    path.key("links").index(idx),
                    "hard link target is a directory",
                );
            }
        }
        let lm = l.as_object();
        for owner in ["user", "group"] {
            let o = lm.and_then(|m| obj(m, owner));
            for f in ["id", "name"] {
                if o.is_some_and(|o| o.contains_key(f)) {
                    r.warn(
                        path.key("links").index(idx).key(owner).key(f),
                        "user/group ignored for hard link",
                    );
                }
            }
        }
    }
    let disks = list(m, "disks");
    for (idx, fs) in list(m, "filesystems").iter().enumerate() {
        let dev = fs.small_get("device").and_then(Value::as_str).unwrap_or("");
        if let Some(disk) = disks
            .iter()
            .rev()
            .find(|d| d.small_get("device").and_then(Value::as_str) == Some(dev))
        {
            let parts = disk
                .small_get("partitions")
                .and_then(Value::as_array)
                .is_some_and(|p| !p.is_empty());
            if parts {
                r.warn(
                    path.key("filesystems").index(idx).key("device"),
                    "filesystem overwrites partitioned device",
                );
            } else if fs.small_get("wipeFilesystem").and_then(Value::as_bool) != Some(true)
                && disk.small_get("wipeTable").and_then(Value::as_bool) == Some(true)
            {
                r.warn(
                    path.key("filesystems").index(idx).key("device"),
                    "device matches disk with wipeTable enabled; filesystem will be wiped",
                );
            }
        }
    }
}

fn unit_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    let name = s(m, "name").unwrap_or("");
    const EXTS: [&str; 12] = [
        ".service",
        ".socket",
        ".device",
        ".mount",
        ".automount",
        ".swap",
        ".target",
        ".path",
        ".timer",
        ".snapshot",
        ".slice",
        ".scope",
    ];
    if !EXTS.contains(&path_ext(name)) {
        r.error(path.key("name"), "invalid systemd unit extension");
    }
    let contents = s(m, "contents");
    let cp = path.key("contents");
    let opts = match contents.map(parse_unit) {
        Some(Err(e)) => {
            r.error(cp.clone(), e);
            None
        }
        Some(Ok(o)) => Some(o),
        None => Some(Vec::new()),
    };
    if is_true(m, "enabled") && !nil_or_empty(contents) {
        if let Some(opts) = opts {
            if !opts.iter().any(|o| o.section == "Install") {
                r.warn(
                    cp,
                    format!(
                        "unit {} is enabled, but has no install section so enable does nothing",
                        go_quote(name)
                    ),
                );
            }
        }
    }
}

fn systemd_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    let units = list(m, "units");
    for (idx, u) in units.iter().enumerate() {
        let name = u.small_get("name").and_then(Value::as_str).unwrap_or("");
        if u.small_get("enabled").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let Some(stem) = name.strip_suffix(".service") else {
            continue;
        };
        let Some(at) = stem.find('@') else { continue };
        if at == 0 || at + 1 >= stem.len() {
            continue;
        }
        let template = format!("{}@.service", &stem[..at]);
        let tpl = units
            .iter()
            .rev()
            .find(|t| t.small_get("name").and_then(Value::as_str) == Some(template.as_str()));
        let Some(contents) = tpl
            .and_then(|t| t.small_get("contents"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        if contents.is_empty() {
            continue;
        }
        let Ok(opts) = parse_unit(contents) else {
            continue;
        };
        if !opts.iter().any(|o| o.section == "Install") {
            r.warn(
                path.key("units").index(idx).key("contents"),
                format!(
                    "template unit {} for {} doesn't have Install section",
                    go_quote(&template),
                    go_quote(name)
                ),
            );
        }
    }
}

fn partition_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    let number = i(m, "number").unwrap_or(0);
    if m.small_get("shouldExist").and_then(Value::as_bool) == Some(false) {
        let others = [
            "label",
            "typeGuid",
            "guid",
            "wipePartitionEntry",
            "sizeMiB",
            "startMiB",
            "resize",
        ]
        .iter()
        .any(|k| m.contains_key(*k));
        if others {
            r.error(
                path.clone(),
                "shouldExist specified false with other options also specified",
            );
        }
    }
    if number == 0 && s(m, "label").is_none() {
        r.error(
            path.clone(),
            "a partition number >= 1 or a label must be specified",
        );
    }
    if let Some(l) = s(m, "label") {
        if l.chars().count() > 36 {
            r.error(
                path.key("label"),
                "partition labels may not exceed 36 characters",
            );
        } else if l.contains(':') {
            r.warn(
                path.key("label"),
                "partition label will be truncated to text before the colon",
            );
        }
    }
    for k in ["guid", "typeGuid"] {
        if let Some(g) = s(m, k) {
            if !g.is_empty() && !is_guid(g) {
                r.error(
                    path.key(k),
                    "doesn't match the form \"01234567-89AB-CDEF-EDCB-A98765432101\"",
                );
            }
        }
    }
}

/// Whether `g` has a GUID's form: hex groups of 8, 4, 4, 4 and 12 digits (spec 2 shares it).
pub(crate) fn is_guid(g: &str) -> bool {
    let parts: Vec<&str> = g.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    parts.len() == 5
        && parts
            .iter()
            .zip(lens)
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn filesystem_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    if let Some(p) = s(m, "path").filter(|p| !p.is_empty()) {
        if let Some(e) = path_error(p) {
            r.error(path.key("path"), e);
        }
    }
    let format = s(m, "format").unwrap_or("");
    if format != "virtiofs" {
        if let Some(e) = path_error(s(m, "device").unwrap_or("")) {
            r.error(path.key("device"), e);
        }
    }
    if format.is_empty() {
        let others = [
            "path",
            "label",
            "uuid",
            "wipeFilesystem",
            "options",
            "mountOptions",
        ]
        .iter()
        .any(|k| m.contains_key(*k));
        if others {
            r.error(path.key("format"), "format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified");
        }
    } else if !matches!(
        format,
        "ext4" | "btrfs" | "xfs" | "swap" | "vfat" | "none" | "virtiofs"
    ) {
        r.error(path.key("format"), "invalid filesystem format");
    }
    if let Some(l) = s(m, "label") {
        if format.is_empty() {
            r.error(
                path.key("label"),
                "filesystem must specify format if label is specified",
            );
        } else {
            let (max, msg) = match format {
                "ext4" => (
                    16,
                    "filesystem labels cannot be longer than 16 characters when using ext4",
                ),
                "btrfs" => (
                    256,
                    "filesystem labels cannot be longer than 256 characters when using btrfs",
                ),
                "xfs" => (
                    12,
                    "filesystem labels cannot be longer than 12 characters when using xfs",
                ),
                "swap" => (
                    15,
                    "filesystem labels cannot be longer than 15 characters when using swap",
                ),
                "vfat" => (
                    11,
                    "filesystem labels cannot be longer than 11 characters when using vfat",
                ),
                _ => (usize::MAX, ""),
            };
            if l.chars().count() > max {
                r.error(path.key("label"), msg);
            }
        }
    }
}

fn raid_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    match s(m, "level") {
        None | Some("") => r.error(path.key("level"), "raid level is required"),
        Some("linear") | Some("raid0") | Some("0") | Some("stripe") => {
            if i(m, "spares").unwrap_or(0) != 0 {
                r.error(
                    path.key("level"),
                    "spares unsupported for linear and raid0 arrays",
                );
            }
        }
        Some("raid1") | Some("1") | Some("mirror") | Some("raid4") | Some("4") | Some("raid5")
        | Some("5") | Some("raid6") | Some("6") | Some("raid10") | Some("10") => {}
        Some(_) => r.error(path.key("level"), "unrecognized raid level"),
    }
    if list(m, "devices").is_empty() {
        r.error(path.key("devices"), "raid devices required");
    }
}

fn luks_rules(m: &Map<String, Value>, path: &JsonPath, r: &mut Report) {
    if s(m, "name").unwrap_or("").contains('/') {
        r.error(path.key("name"), "device names cannot contain slashes");
    }
    if s(m, "label").is_some_and(|l| l.chars().count() > 47) {
        r.error(
            path.key("label"),
            "luks device labels cannot be longer than 47 characters",
        );
    }
    match s(m, "device") {
        None | Some("") => r.error(path.key("device"), "disk device is required"),
        Some(d) => {
            if let Some(e) = path_error(d) {
                r.error(path.key("device"), e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The allocation-free check agrees with cleaning the path and comparing.
        #[test]
        fn clean_check_agrees_with_clean_path(segs in prop::collection::vec("(|\\.|\\.\\.|a|\\.a|b\\.)", 0..6), trailing in any::<bool>()) {
            let mut p = format!("/{}", segs.join("/"));
            if trailing {
                p.push('/');
            }
            prop_assert_eq!(is_clean_absolute(&p), clean_path(&p) == p, "{}", p);
        }
    }
}
