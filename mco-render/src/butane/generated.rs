//! Ignition's checks of the config Butane generates, run as Butane runs them on the
//! MachineConfig: first the duplicate entries of every list (each struct's lists before its
//! children's, in Go field order), then each type's own validation in the same walk order.
//!
//! Findings carry the Butane path of what they concern. List entries carry their origin (the
//! Butane path they were written at, or the sugar they came from) under [`ORIGIN`]; a field
//! the source did not set has no Butane path, and the finding names the output's path under
//! `$.spec.config` instead (Butane then points at the start of the file).

use super::checks::Finding;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The hidden key holding a list entry's Butane path until the output is written.
pub const ORIGIN: &str = "\u{0}origin";
/// The hidden key holding, for an entry merged into one the sugar rendered, the sugar entry's
/// Butane path.
pub const MERGED_INTO: &str = "\u{0}merged";
/// The hidden key holding, for such an entry, the fields the config set.
pub const OWN_FIELDS: &str = "\u{0}own";
/// The hidden key marking sugar whose fields all come from its own source path.
pub const FLAT: &str = "\u{0}flat";
/// The hidden key holding, for a user, the Butane path of each SSH key.
pub const SSH_ORIGINS: &str = "\u{0}ssh";

/// Removes the hidden keys from `v`.
pub fn strip_origins(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !k.starts_with('\u{0}'));
            m.values_mut().for_each(strip_origins);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_origins),
        _ => {}
    }
}

/// Butane's `Snake`: `sizeMiB` → `size_mib`, `keyFile` → `key_file`.
fn snake(s: &str) -> String {
    let s = s.replace("MiB", "_mib");
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Where a node is: its path in the generated Ignition config (`storage.luks.0`) and in the
/// Butane source (`$.storage.luks.0`).
#[derive(Clone)]
struct At {
    json: String,
    yaml: String,
    /// Whether Butane can name the node's source: when its translations went through a
    /// merge of configs, a node holding nothing (a plain Go value at its zero, a struct or
    /// list of such) loses its source, and findings name `$.spec.config.<output path>`.
    translated: bool,
    /// Whether the config's translations went through such a merge.
    merged: bool,
    /// For sugar (mirrored disks, mount units, tree files): every field comes from the
    /// sugar's own source path.
    flat: bool,
    /// For an entry the config merged into one of the sugar's: the sugar entry's path, which
    /// the fields the config left alone keep, and the fields the config set.
    base: Option<(String, Vec<String>)>,
    /// Whether that sugar entry is flat.
    base_flat: bool,
}

/// Whether a value leaves a trace in Ignition's merge transcript: anything but a plain Go
/// value at its zero (`""`, `0`), a null, or a struct or list holding only such.
fn transcribed(v: &Value, plain: bool) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) if plain => !s.is_empty(),
        Value::Number(n) if plain => n.as_f64() != Some(0.0),
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| !k.starts_with('\u{0}') && transcribed(v, plain_field(k))),
        Value::Array(a) => a.iter().any(|v| transcribed(v, true)),
        _ => true,
    }
}

/// The Ignition fields held as plain Go values rather than pointers.
fn plain_field(key: &str) -> bool {
    matches!(key, "name" | "url" | "number" | "version")
}

impl At {
    fn new(json: &str, yaml: &str, merged: bool) -> At {
        At {
            json: json.into(),
            yaml: yaml.into(),
            translated: true,
            merged,
            flat: false,
            base: None,
            base_flat: false,
        }
    }

    /// The output's path under `$.spec.config`, as Butane names an untranslated node.
    fn untranslated(&self) -> String {
        let snaked: Vec<String> = self.json.split('.').map(snake).collect();
        format!("$.spec.config.{}", snaked.join("."))
    }

    /// The field `key` of this object.
    fn child(&self, key: &str) -> At {
        if let Some((base, own)) = &self.base {
            if !own.iter().any(|k| k == key) {
                let from_base = At {
                    yaml: base.clone(),
                    base: None,
                    flat: self.base_flat,
                    ..self.clone()
                };
                return from_base.child(key);
            }
        }
        // The LUKS volume boot_device renders: its fields come from boot_device.luks itself.
        let yaml = if self.flat {
            self.yaml.clone()
        } else if self.yaml == "$.boot_device.luks" {
            match key {
                "discard" => format!("{}.{key}", self.yaml),
                _ => self.yaml.clone(),
            }
        } else {
            format!("{}.{}", self.yaml, snake(key))
        };
        At {
            json: format!("{}.{key}", self.json),
            yaml,
            base: None,
            ..self.clone()
        }
    }

    /// The path a finding about field `key` of `obj` is reported at: the Butane path when the
    /// source set the field (`plain`: a plain Go value, translated even when unset unless the
    /// config went through a merge), else the output's path.
    fn field(&self, obj: &Map<String, Value>, key: &str, plain: bool) -> String {
        let child = self.child(key);
        if !self.translated {
            return child.untranslated();
        }
        if self.flat {
            return child.yaml;
        }
        let v = obj.get(key).unwrap_or(&Value::Null);
        let known = if self.merged {
            transcribed(v, plain)
        } else {
            plain || !v.is_null()
        };
        if known {
            child.yaml
        } else {
            child.untranslated()
        }
    }

    /// The path of this node as a finding names it.
    fn path(&self) -> String {
        if self.translated {
            self.yaml.clone()
        } else {
            self.untranslated()
        }
    }

    /// Entry `i` of the list `key`.
    fn entry(&self, key: &str, i: usize, item: &Value) -> At {
        let base = self.child(key);
        let origin = item.get(ORIGIN).and_then(Value::as_str);
        let yaml = origin.map_or_else(|| format!("{}.{i}", base.yaml), str::to_string);
        let merged = item.get(MERGED_INTO).and_then(Value::as_str).map(|b| {
            let own = item
                .get(OWN_FIELDS)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            (b.to_string(), own)
        });
        // A config entry merged into flat sugar is not flat itself.
        let base_flat = item.get(FLAT).is_some();
        let flat = base_flat && merged.is_none();
        // An entry holding nothing has no translation of its own, except (until a merge of
        // configs drops it) the types Butane translates by hand, which always translate
        // their plain fields.
        let by_hand = matches!(
            key,
            "files" | "directories" | "links" | "users" | "units" | "dropins"
        );
        let plain = by_hand || !item.is_object();
        let translated =
            self.translated && (flat || (plain && !self.merged) || transcribed(item, true));
        At {
            json: format!("{}.{i}", base.json),
            yaml,
            translated,
            merged: self.merged,
            flat,
            base: merged,
            base_flat,
        }
    }
}

fn err(out: &mut Vec<Finding>, path: String, msg: &str) {
    out.push((path, msg.to_string(), false));
}
fn warn(out: &mut Vec<Finding>, path: String, msg: &str) {
    out.push((path, msg.to_string(), true));
}

fn list<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn objects<'a>(
    obj: &'a Map<String, Value>,
    key: &'a str,
) -> impl Iterator<Item = (usize, &'a Value, &'a Map<String, Value>)> + 'a {
    list(obj, key)
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|o| (i, v, o)))
}

fn s<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}
fn set(obj: &Map<String, Value>, key: &str) -> bool {
    s(obj, key).is_some_and(|v| !v.is_empty())
}
fn truthy(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool) == Some(true)
}

/// The key Ignition tells entries of a list apart by.
#[derive(Clone, Copy)]
enum KeyBy {
    /// The string itself.
    Str,
    /// A field of the entry (`name`, `path`, `device`, `url`, `source`).
    Field(&'static str),
    /// A partition: `number:N`, else `label:L`, else empty.
    Partition,
}

fn key_of(by: KeyBy, item: &Value) -> String {
    match by {
        KeyBy::Str => item.as_str().unwrap_or_default().to_string(),
        KeyBy::Field(f) => item
            .get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        KeyBy::Partition => {
            let number = item.get("number").and_then(Value::as_i64).unwrap_or(0);
            if number != 0 {
                format!("number:{number}")
            } else if let Some(l) = item.get("label").and_then(Value::as_str) {
                format!("label:{l}")
            } else {
                String::new()
            }
        }
    }
}

/// Reports the entries of `obj[key]` whose key an earlier entry (of `seen`) has.
fn dups(
    out: &mut Vec<Finding>,
    at: &At,
    obj: &Map<String, Value>,
    key: &str,
    by: KeyBy,
    seen: &mut HashSet<String>,
) {
    let origins = obj
        .get(&format!("\u{0}{key}"))
        .or(if key == "sshAuthorizedKeys" {
            obj.get(SSH_ORIGINS)
        } else {
            None
        })
        .and_then(Value::as_array);
    for (i, item) in list(obj, key).iter().enumerate() {
        if !seen.insert(key_of(by, item)) {
            let path = origins
                .and_then(|o| o.get(i))
                .and_then(Value::as_str)
                .map_or_else(|| at.entry(key, i, item).path(), str::to_string);
            err(out, path, "duplicate entry defined");
        }
    }
}

fn dups_of(out: &mut Vec<Finding>, at: &At, obj: &Map<String, Value>, key: &str, by: KeyBy) {
    dups(out, at, obj, key, by, &mut HashSet::new());
}

/// Ignition's findings on the generated config: `spec` holds the MachineConfig's own lists
/// (`kernelArguments`, `extensions`), `config` the Ignition config.
///
/// `minor` is the spec's minor version: up to 4.13 a RAID's level is a plain string, which
/// always has a source path.
///
/// `merged`: whether the config's translations went through a merge of configs (always
/// from 4.14; up to 4.13 when the config has filesystems or the boot device renders any).
pub fn check(
    spec: &Map<String, Value>,
    config: &Map<String, Value>,
    minor: u8,
    merged: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let os = At::new("spec", "$.openshift", false);
    dups_of(&mut out, &os, spec, "kernelArguments", KeyBy::Str);
    dups_of(&mut out, &os, spec, "extensions", KeyBy::Str);
    let root = At::new("", "$", merged);
    config_dups(&mut out, &root, config);
    validate_config(&mut out, &root, config, minor);
    // Paths under the root begin with a dot in JSON space.
    for f in &mut out {
        if let Some(rest) = f.0.strip_prefix("$.spec.config..") {
            f.0 = format!("$.spec.config.{rest}");
        }
    }
    out
}

fn obj<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    m.get(key).and_then(Value::as_object)
}

fn root_child(at: &At, key: &str) -> At {
    if at.json.is_empty() {
        At {
            json: key.into(),
            yaml: format!("$.{}", snake(key)),
            ..at.clone()
        }
    } else {
        at.child(key)
    }
}

fn resource_dups(out: &mut Vec<Finding>, at: &At, r: &Map<String, Value>) {
    dups_of(out, at, r, "httpHeaders", KeyBy::Field("name"));
}

fn config_dups(out: &mut Vec<Finding>, root: &At, c: &Map<String, Value>) {
    if let Some(ign) = obj(c, "ignition") {
        let at = root_child(root, "ignition");
        if let Some(cfg) = obj(ign, "config") {
            let at = at.child("config");
            dups_of(out, &at, cfg, "merge", KeyBy::Field("source"));
            for (i, item, r) in objects(cfg, "merge") {
                resource_dups(out, &at.entry("merge", i, item), r);
            }
            if let Some(r) = obj(cfg, "replace") {
                resource_dups(out, &at.child("replace"), r);
            }
        }
        if let Some(p) = obj(ign, "proxy") {
            dups_of(out, &at.child("proxy"), p, "noProxy", KeyBy::Str);
        }
        if let Some(tls) = obj(ign, "security").and_then(|s| obj(s, "tls")) {
            let at = at.child("security").child("tls");
            dups_of(
                out,
                &at,
                tls,
                "certificateAuthorities",
                KeyBy::Field("source"),
            );
            for (i, item, r) in objects(tls, "certificateAuthorities") {
                resource_dups(out, &at.entry("certificateAuthorities", i, item), r);
            }
        }
    }
    if let Some(k) = obj(c, "kernelArguments") {
        let at = root_child(root, "kernelArguments");
        let mut seen = HashSet::new();
        dups(out, &at, k, "shouldExist", KeyBy::Str, &mut seen);
        dups(out, &at, k, "shouldNotExist", KeyBy::Str, &mut seen);
    }
    if let Some(p) = obj(c, "passwd") {
        let at = root_child(root, "passwd");
        dups_of(out, &at, p, "groups", KeyBy::Field("name"));
        dups_of(out, &at, p, "users", KeyBy::Field("name"));
        for (i, item, u) in objects(p, "users") {
            let at = at.entry("users", i, item);
            dups_of(out, &at, u, "groups", KeyBy::Str);
            dups_of(out, &at, u, "sshAuthorizedKeys", KeyBy::Str);
        }
    }
    if let Some(st) = obj(c, "storage") {
        let at = root_child(root, "storage");
        let mut nodes = HashSet::new();
        dups(
            out,
            &at,
            st,
            "directories",
            KeyBy::Field("path"),
            &mut nodes,
        );
        dups_of(out, &at, st, "disks", KeyBy::Field("device"));
        dups(out, &at, st, "files", KeyBy::Field("path"), &mut nodes);
        dups_of(out, &at, st, "filesystems", KeyBy::Field("device"));
        dups(out, &at, st, "links", KeyBy::Field("path"), &mut nodes);
        dups_of(out, &at, st, "luks", KeyBy::Field("name"));
        dups_of(out, &at, st, "raid", KeyBy::Field("name"));
        for (i, item, d) in objects(st, "disks") {
            dups_of(
                out,
                &at.entry("disks", i, item),
                d,
                "partitions",
                KeyBy::Partition,
            );
        }
        for (i, item, f) in objects(st, "files") {
            let at = at.entry("files", i, item);
            for (j, item, r) in objects(f, "append") {
                resource_dups(out, &at.entry("append", j, item), r);
            }
            if let Some(r) = obj(f, "contents") {
                resource_dups(out, &at.child("contents"), r);
            }
        }
        for (i, item, l) in objects(st, "luks") {
            let at = at.entry("luks", i, item);
            dups_of(out, &at, l, "openOptions", KeyBy::Str);
            if let Some(cl) = obj(l, "clevis") {
                dups_of(out, &at.child("clevis"), cl, "tang", KeyBy::Field("url"));
            }
            if let Some(r) = obj(l, "keyFile") {
                resource_dups(out, &at.child("keyFile"), r);
            }
        }
        for (i, item, r) in objects(st, "raid") {
            dups_of(out, &at.entry("raid", i, item), r, "devices", KeyBy::Str);
        }
    }
    if let Some(sd) = obj(c, "systemd") {
        let at = root_child(root, "systemd");
        dups_of(out, &at, sd, "units", KeyBy::Field("name"));
        for (i, item, u) in objects(sd, "units") {
            dups_of(
                out,
                &at.entry("units", i, item),
                u,
                "dropins",
                KeyBy::Field("name"),
            );
        }
    }
}

/// Ignition's `validatePath`.
fn path_error(p: &str) -> Option<&'static str> {
    if p.is_empty() {
        Some("path not specified")
    } else if !p.starts_with('/') {
        Some("path not absolute")
    } else if mco_ignition::path::clean(p) != p {
        Some("path is not fully simplified")
    } else {
        None
    }
}

/// The scheme Go's `url.Parse` finds (lower-cased), `Err` when it refuses the URL.
pub(super) fn url_scheme(u: &str) -> Result<String, ()> {
    for (i, c) in u.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(()),
            ':' => return Ok(u[..i].to_ascii_lowercase()),
            _ => return Ok(String::new()),
        }
    }
    Ok(String::new())
}

/// Ignition's `validateURL`.
fn url_error(u: &str) -> Option<&'static str> {
    match url_scheme(u) {
        Err(()) => Some("unable to parse url"),
        Ok(s) => match s.as_str() {
            "http" | "https" | "tftp" | "gs" | "s3" | "arn" | "data" => None,
            _ => Some("invalid url scheme"),
        },
    }
}

fn validate_resource(out: &mut Vec<Finding>, at: &At, r: &Map<String, Value>) {
    if let Some(c) = s(r, "compression") {
        if !matches!(c, "" | "gzip") {
            err(
                out,
                at.field(r, "compression", false),
                "invalid compression method",
            );
        }
    }
    let hash = obj(r, "verification").and_then(|v| s(v, "hash"));
    if hash.is_some() && !r.contains_key("source") {
        let v = at.child("verification");
        let path = obj(r, "verification").map_or_else(String::new, |vm| v.field(vm, "hash", false));
        err(
            out,
            path,
            "source must be specified if verification is specified",
        );
    }
    if let Some(src) = s(r, "source").filter(|s| !s.is_empty()) {
        if let Some(e) = url_error(src) {
            err(out, at.field(r, "source", false), e);
        }
    }
    let headers = list(r, "httpHeaders");
    if !headers.is_empty() {
        let scheme = s(r, "source").filter(|s| !s.is_empty()).map(url_scheme);
        let e = match scheme {
            None | Some(Err(())) => Some("unable to parse url"),
            Some(Ok(s)) if s == "http" || s == "https" => None,
            Some(Ok(_)) => Some("cannot use HTTP headers with this source scheme"),
        };
        if let Some(e) = e {
            err(out, at.field(r, "httpHeaders", false), e);
        }
    }
    if let (Some(v), Some(h)) = (obj(r, "verification"), hash) {
        let p = at.child("verification").field(v, "hash", false);
        match h.split_once('-') {
            None => err(out, p, "malformed hash specifier"),
            Some((f, sum)) => match f {
                "sha512" if sum.len() != 128 => err(out, p, "incorrect size for hash sum"),
                "sha256" if sum.len() != 64 => err(out, p, "incorrect size for hash sum"),
                "sha512" | "sha256" => {}
                _ => err(out, p, "unrecognized hash function"),
            },
        }
    }
    for (i, item, h) in objects(r, "httpHeaders") {
        let at = at.entry("httpHeaders", i, item);
        if s(h, "name").unwrap_or("").is_empty() {
            err(
                out,
                at.field(h, "name", true),
                "HTTP header name can't be empty",
            );
        }
        if s(h, "value") == Some("") {
            err(
                out,
                at.field(h, "value", false),
                "unable to parse HTTP header",
            );
        }
    }
}

fn required_source(out: &mut Vec<Finding>, at: &At, r: &Map<String, Value>) {
    match s(r, "source").filter(|s| !s.is_empty()) {
        None => err(out, at.path(), "source is required"),
        Some(src) => {
            if let Some(e) = url_error(src) {
                err(out, at.path(), e);
            }
        }
    }
}

fn validate_node_owner(out: &mut Vec<Finding>, at: &At, n: &Map<String, Value>) {
    for key in ["group", "user"] {
        if let Some(o) = obj(n, key) {
            if o.get("id").is_some_and(|v| !v.is_null()) && set(o, "name") {
                err(out, at.child(key).path(), "cannot set both id and name");
            }
        }
    }
}

fn validate_config(out: &mut Vec<Finding>, root: &At, c: &Map<String, Value>, minor: u8) {
    let empty = Map::new();
    let storage = obj(c, "storage").unwrap_or(&empty);
    let systemd = obj(c, "systemd").unwrap_or(&empty);
    // Config: no file, directory or link where a unit or drop-in is written.
    let mut unit_paths = HashSet::new();
    for (_, _, u) in objects(systemd, "units") {
        let name = s(u, "name").unwrap_or("");
        if set(u, "contents") {
            unit_paths.insert(format!("/etc/systemd/system/{name}"));
        }
        for (_, _, d) in objects(u, "dropins") {
            if set(d, "contents") {
                let dname = s(d, "name").unwrap_or("");
                unit_paths.insert(format!("/etc/systemd/system/{name}.d/{dname}"));
            }
        }
    }
    let st = root_child(root, "storage");
    for key in ["files", "directories", "links"] {
        for (i, item, n) in objects(storage, key) {
            if unit_paths.contains(s(n, "path").unwrap_or("")) {
                let at = st.entry(key, i, item);
                err(
                    out,
                    at.field(n, "path", true),
                    "path conflicts with systemd unit or dropin",
                );
            }
        }
    }
    if let Some(ign) = obj(c, "ignition") {
        let at = root_child(root, "ignition");
        if let Some(cfg) = obj(ign, "config") {
            let at = at.child("config");
            for (i, item, r) in objects(cfg, "merge") {
                required_source(out, &at.entry("merge", i, item), r);
            }
            for (i, item, r) in objects(cfg, "merge") {
                validate_resource(out, &at.entry("merge", i, item), r);
            }
            if let Some(r) = obj(cfg, "replace") {
                validate_resource(out, &at.child("replace"), r);
            }
        }
        if let Some(p) = obj(ign, "proxy") {
            let at = at.child("proxy");
            for (key, http_ok) in [("httpProxy", true), ("httpsProxy", false)] {
                let Some(u) = s(p, key) else { continue };
                let path = at.field(p, key, false);
                match url_scheme(u) {
                    Err(()) => err(out, path, "unable to parse url"),
                    Ok(sch) if sch != "http" && sch != "https" => {
                        err(out, path, "proxies must be http(s)")
                    }
                    Ok(sch) if sch == "http" && !http_ok => warn(
                        out,
                        path,
                        "insecure plaintext HTTP proxy specified for HTTPS resources",
                    ),
                    Ok(_) => {}
                }
            }
        }
        if let Some(tls) = obj(ign, "security").and_then(|s| obj(s, "tls")) {
            let at = at.child("security").child("tls");
            for (i, item, r) in objects(tls, "certificateAuthorities") {
                required_source(out, &at.entry("certificateAuthorities", i, item), r);
            }
            for (i, item, r) in objects(tls, "certificateAuthorities") {
                validate_resource(out, &at.entry("certificateAuthorities", i, item), r);
            }
        }
    }
    validate_storage(out, &st, storage, minor);
    validate_systemd(out, &root_child(root, "systemd"), systemd);
}

fn validate_storage(out: &mut Vec<Finding>, at: &At, st: &Map<String, Value>, minor: u8) {
    // Storage: filesystems over disks.
    for (i, item, f) in objects(st, "filesystems") {
        let device = s(f, "device").unwrap_or("");
        let disk = objects(st, "disks")
            .filter(|(_, _, d)| s(d, "device") == Some(device))
            .last();
        if let Some((_, _, d)) = disk {
            let p = at.entry("filesystems", i, item).field(f, "device", true);
            if !list(d, "partitions").is_empty() {
                warn(out, p, "filesystem overwrites partitioned device");
            } else if !truthy(f, "wipeFilesystem") && truthy(d, "wipeTable") {
                warn(
                    out,
                    p,
                    "device matches disk with wipeTable enabled; filesystem will be wiped",
                );
            }
        }
    }
    for (i, item, d) in objects(st, "disks") {
        validate_disk(out, &at.entry("disks", i, item), d);
    }
    for (i, item, f) in objects(st, "files") {
        let at = at.entry("files", i, item);
        if let Some(e) = path_error(s(f, "path").unwrap_or("")) {
            err(out, at.field(f, "path", true), e);
        }
        if let Some(m) = f.get("mode").and_then(Value::as_i64) {
            if !(0..=0o7777).contains(&m) {
                err(out, at.field(f, "mode", false), "illegal file mode");
            }
            if (m as u32) & 0o7000 != 0 {
                warn(
                    out,
                    at.field(f, "mode", false),
                    "setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0",
                );
            }
        }
        let source =
            obj(f, "contents").is_some_and(|c| c.get("source").is_some_and(|v| !v.is_null()));
        if truthy(f, "overwrite") && !source {
            err(
                out,
                at.field(f, "overwrite", false),
                "overwrite must be false if source is unspecified",
            );
        }
        validate_node_owner(out, &at, f);
        for (j, item, r) in objects(f, "append") {
            validate_resource(out, &at.entry("append", j, item), r);
        }
        if let Some(r) = obj(f, "contents") {
            validate_resource(out, &at.child("contents"), r);
        }
    }
    for (i, item, f) in objects(st, "filesystems") {
        validate_filesystem(out, &at.entry("filesystems", i, item), f, minor);
    }
    for (i, item, l) in objects(st, "luks") {
        validate_luks(out, &at.entry("luks", i, item), l, minor);
    }
    for (i, item, r) in objects(st, "raid") {
        let at = at.entry("raid", i, item);
        let level = s(r, "level").unwrap_or("");
        let spares = r.get("spares").and_then(Value::as_i64).unwrap_or(0);
        let e = match level {
            // A plain string up to 4.13: empty is merely unrecognized.
            "" if minor <= 13 => Some("unrecognized raid level"),
            "" => Some("raid level is required"),
            "linear" | "raid0" | "0" | "stripe" if spares != 0 => {
                Some("spares unsupported for linear and raid0 arrays")
            }
            "linear" | "raid0" | "0" | "stripe" | "raid1" | "1" | "mirror" | "raid4" | "4"
            | "raid5" | "5" | "raid6" | "6" | "raid10" | "10" => None,
            _ => Some("unrecognized raid level"),
        };
        if let Some(e) = e {
            err(out, at.field(r, "level", minor <= 13), e);
        }
        if list(r, "devices").is_empty() {
            err(out, at.field(r, "devices", false), "raid devices required");
        }
        for (j, d) in list(r, "devices").iter().enumerate() {
            if let Some(e) = path_error(d.as_str().unwrap_or("")) {
                err(out, at.entry("devices", j, d).path(), e);
            }
        }
    }
}

fn validate_disk(out: &mut Vec<Finding>, at: &At, d: &Map<String, Value>) {
    let device = s(d, "device").unwrap_or("");
    let parts: Vec<(usize, &Value, &Map<String, Value>)> = objects(d, "partitions").collect();
    if device.is_empty() {
        err(out, at.field(d, "device", true), "disk device is required");
    } else {
        disk_checks(out, at, d, device, &parts);
    }
    // Each partition's own checks, whatever the disk's.
    partition_checks(out, at, &parts);
}

/// Ignition's checks of a disk with a device: its path, and its partitions together.
fn disk_checks(
    out: &mut Vec<Finding>,
    at: &At,
    d: &Map<String, Value>,
    device: &str,
    parts: &[(usize, &Value, &Map<String, Value>)],
) {
    if let Some(e) = path_error(device) {
        err(out, at.field(d, "device", true), e);
    }

    let num = |p: &Map<String, Value>| p.get("number").and_then(Value::as_i64).unwrap_or(0);
    let int = |p: &Map<String, Value>, k: &str| p.get(k).and_then(Value::as_i64);
    let part_at = |i: usize| at.entry("partitions", i, &parts[i].1.clone()).path();
    // Numbers: the second entry of the first colliding number (map order: by number here).
    let mut by_number: Vec<(i64, Vec<usize>)> = Vec::new();
    for (i, _, p) in parts {
        let n = num(p);
        if n != 0 {
            match by_number.iter_mut().find(|(k, _)| *k == n) {
                Some((_, v)) => v.push(*i),
                None => by_number.push((n, vec![*i])),
            }
        }
    }
    if let Some((_, v)) = by_number.iter().find(|(_, v)| v.len() > 1) {
        err(out, part_at(v[1]), "partition numbers collide");
    }
    let end = |p: &Map<String, Value>| {
        let (st, sz) = (
            int(p, "startMiB").unwrap_or(0),
            int(p, "sizeMiB").unwrap_or(0),
        );
        if sz == 0 {
            st
        } else {
            st + sz - 1
        }
    };
    'overlap: for (_, pv, p) in parts {
        let (Some(ps), Some(_)) = (int(p, "startMiB"), int(p, "sizeMiB")) else {
            continue;
        };
        if ps == 0 {
            continue;
        }
        for (i, ov, o) in parts {
            let (Some(os), Some(_)) = (int(o, "startMiB"), int(o, "sizeMiB")) else {
                continue;
            };
            if os == 0 || pv == ov {
                continue;
            }
            let (pe, oe) = (end(p), end(o));
            if (ps >= os && ps <= oe) || (pe >= os && pe <= oe) || (ps < os && pe > oe) {
                err(out, part_at(*i), "partitions overlap");
                break 'overlap;
            }
        }
    }
    let has_zero = parts.iter().any(|(_, _, p)| num(p) == 0);
    let not_exist = parts
        .iter()
        .any(|(_, _, p)| p.get("shouldExist").and_then(Value::as_bool) == Some(false));
    if has_zero && not_exist {
        err(
            out,
            at.field(d, "partitions", false),
            "shouldExist is false for a partition and other partition(s) has start or size 0",
        );
    }
    let mut labels = HashSet::new();
    for (i, _, p) in parts {
        if let Some(l) = s(p, "label") {
            if !labels.insert(l) {
                err(
                    out,
                    part_at(*i),
                    "cannot use the same partition label twice",
                );
                break;
            }
        }
    }
}

/// Each partition's own checks.
fn partition_checks(
    out: &mut Vec<Finding>,
    at: &At,
    parts: &[(usize, &Value, &Map<String, Value>)],
) {
    let num = |p: &Map<String, Value>| p.get("number").and_then(Value::as_i64).unwrap_or(0);
    for (i, item, p) in parts {
        let at = at.entry("partitions", *i, item);
        let present = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
        if p.get("shouldExist").and_then(Value::as_bool) == Some(false)
            && (present("label")
                || set(p, "typeGuid")
                || set(p, "guid")
                || present("startMiB")
                || present("sizeMiB"))
        {
            err(
                out,
                at.path(),
                "shouldExist specified false with other options also specified",
            );
        }
        if num(p) == 0 && !present("label") {
            err(
                out,
                at.path(),
                "a partition number >= 1 or a label must be specified",
            );
        }
        if let Some(l) = s(p, "label") {
            if l.len() > 36 {
                err(
                    out,
                    at.field(p, "label", false),
                    "partition labels may not exceed 36 characters",
                );
            } else if l.contains(':') {
                err(
                    out,
                    at.field(p, "label", false),
                    "partition label will be truncated to text before the colon",
                );
            }
        }
        for key in ["guid", "typeGuid"] {
            if let Some(g) = s(p, key) {
                if !is_guid(g) {
                    err(
                        out,
                        at.field(p, key, false),
                        "doesn't match the form \"01234567-89AB-CDEF-EDCB-A98765432101\"",
                    );
                }
            }
        }
    }
}

/// Ignition's GUID pattern: `^(|[[:xdigit:]]{8}-[[:xdigit:]]{4}-[[:xdigit:]]{4}-[[:xdigit:]]{4}-[[:xdigit:]]{12})$`.
fn is_guid(g: &str) -> bool {
    if g.is_empty() {
        return true;
    }
    let parts: Vec<&str> = g.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn validate_filesystem(out: &mut Vec<Finding>, at: &At, f: &Map<String, Value>, minor: u8) {
    if let Some(p) = s(f, "path").filter(|p| !p.is_empty()) {
        if let Some(e) = path_error(p) {
            err(out, at.field(f, "path", false), e);
        }
    }
    if let Some(e) = path_error(s(f, "device").unwrap_or("")) {
        err(out, at.field(f, "device", true), e);
    }
    let format = s(f, "format").unwrap_or("");
    if format.is_empty() {
        if set(f, "path")
            || set(f, "label")
            || set(f, "uuid")
            || truthy(f, "wipeFilesystem")
            || !list(f, "mountOptions").is_empty()
            || !list(f, "options").is_empty()
        {
            err(
                out,
                at.field(f, "format", false),
                "format cannot be empty when path, label, uuid, wipeFilesystem, options, or mountOptions is specified",
            );
        }
    } else if !matches!(format, "ext4" | "btrfs" | "xfs" | "swap" | "vfat")
        && (format != "none" || minor <= 13)
    {
        err(
            out,
            at.field(f, "format", false),
            "invalid filesystem format",
        );
    }
    if let Some(l) = s(f, "label").filter(|l| !l.is_empty()) {
        let limit = match format {
            "" => {
                err(
                    out,
                    at.field(f, "label", false),
                    "filesystem must specify format if label is specified",
                );
                None
            }
            "ext4" => Some((16, "ext4")),
            "btrfs" => Some((256, "btrfs")),
            "xfs" => Some((12, "xfs")),
            "swap" => Some((15, "swap")),
            "vfat" => Some((11, "vfat")),
            _ => None,
        };
        if let Some((n, name)) = limit {
            if l.len() > n {
                err(
                    out,
                    at.field(f, "label", false),
                    &format!(
                        "filesystem labels cannot be longer than {n} characters when using {name}"
                    ),
                );
            }
        }
    }
}

/// A LUKS volume; up to 4.13 (Ignition 3.2) a custom clevis pin is a struct whose presence
/// alone conflicts with other pins, and whose pin and config are plain strings.
fn validate_luks(out: &mut Vec<Finding>, at: &At, l: &Map<String, Value>, minor: u8) {
    let ign32 = minor <= 13;
    let empty = Map::new();
    let clevis = obj(l, "clevis").unwrap_or(&empty);
    let custom = obj(clevis, "custom").unwrap_or(&empty);
    let threshold = clevis.get("threshold").and_then(Value::as_i64).unwrap_or(0);
    let tang = !list(clevis, "tang").is_empty();
    let tpm2 = truthy(clevis, "tpm2");
    if s(l, "name").unwrap_or("").contains('/') {
        err(
            out,
            at.field(l, "name", true),
            "device names cannot contain slashes",
        );
    }
    if s(l, "label").is_some_and(|x| x.len() > 47) {
        err(
            out,
            at.field(l, "label", false),
            "luks device labels cannot be longer than 47 characters",
        );
    }
    match s(l, "device").filter(|d| !d.is_empty()) {
        None => err(out, at.field(l, "device", false), "disk device is required"),
        Some(d) => {
            if let Some(e) = path_error(d) {
                err(out, at.field(l, "device", false), e);
            }
        }
    }
    let custom_set = if ign32 {
        obj(clevis, "custom").is_some()
    } else {
        set(custom, "pin")
    };
    if custom_set && (tang || tpm2 || threshold != 0) {
        err(
            out,
            at.field(l, "clevis", false),
            "cannot use custom clevis config with tpm2, tang, or threshold",
        );
    }
    let key_source = obj(l, "keyFile")
        .and_then(|k| s(k, "source"))
        .filter(|s| !s.is_empty());
    if key_source.is_some_and(|k| url_error(k).is_some()) {
        err(out, at.field(l, "keys", false), "invalid key-file source");
    }
    let cex = obj(l, "cex").is_some_and(|c| truthy(c, "enabled"));
    let clevis_present = set(custom, "pin") || tang || tpm2 || threshold != 0;
    if clevis_present && cex {
        err(out, at.field(l, "cex", false), "cannot use cex with clevis");
    }
    if cex && key_source.is_some() {
        err(
            out,
            at.field(l, "cex", false),
            "cannot use key file with cex",
        );
    }
    if obj(l, "clevis").is_some() {
        let cat = at.child("clevis");
        if ign32 {
            if set(custom, "pin") || set(custom, "config") {
                let cu = cat.child("custom");
                if !matches!(s(custom, "pin"), Some("tpm2" | "tang" | "sss")) {
                    err(out, cu.field(custom, "pin", true), "unsupported clevis pin");
                }
                if !set(custom, "config") {
                    err(
                        out,
                        cu.field(custom, "config", true),
                        "missing required custom clevis config",
                    );
                }
            }
        } else if set(custom, "pin") || set(custom, "config") || truthy(custom, "needsNetwork") {
            let cu = cat.child("custom");
            match s(custom, "pin").filter(|p| !p.is_empty()) {
                Some("tpm2" | "tang" | "sss") => {}
                Some(_) => err(
                    out,
                    cu.field(custom, "pin", false),
                    "unsupported clevis pin",
                ),
                None => err(
                    out,
                    cu.field(custom, "pin", false),
                    "missing required custom clevis pin",
                ),
            }
            if !set(custom, "config") {
                err(
                    out,
                    cu.field(custom, "config", false),
                    "missing required custom clevis config",
                );
            }
        }
        for (i, item, t) in objects(clevis, "tang") {
            let at = cat.entry("tang", i, item);
            let url = s(t, "url").unwrap_or("");
            let e = match url_scheme(url) {
                Err(()) => Some("unable to parse url"),
                Ok(sch) if sch == "http" || sch == "https" => None,
                Ok(_) => Some("invalid url scheme"),
            };
            if let Some(e) = e {
                err(out, at.field(t, "url", true), e);
            }
            if !set(t, "thumbprint") {
                err(
                    out,
                    at.field(t, "thumbprint", false),
                    "thumbprint is required",
                );
            }
            if let Some(adv) = s(t, "advertisement").filter(|a| !a.is_empty()) {
                if serde_json::from_str::<Value>(adv).is_err() {
                    err(
                        out,
                        at.field(t, "advertisement", false),
                        "advertisement is not valid JSON",
                    );
                }
            }
        }
    }
    if let Some(r) = obj(l, "keyFile") {
        validate_resource(out, &at.child("keyFile"), r);
    }
}

/// go-systemd's unit lexer: the section of each option, or why the contents do not parse.
/// Text before the
/// first section is skipped; a section name runs to the next `]` (across lines); an option
/// name must reach `=` on its line.
pub fn unit_sections(contents: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = contents.chars().collect();
    let mut i = 0;
    let mut options = Vec::new();
    let mut section: Option<String> = None;
    // Skips a comment line and the lines it continues with a trailing backslash.
    let skip_comment = |i: &mut usize| loop {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        let mut line: String = chars[start..*i].iter().collect();
        let eof = *i >= chars.len();
        *i += 1;
        if line.ends_with('\r') {
            line.pop();
        }
        if line.ends_with(' ') {
            line.pop();
        }
        if !line.ends_with('\\') || eof {
            break;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c == '[' {
            let Some(end) = chars[i..].iter().position(|&c| c == ']') else {
                return Err("unable to find end of section".into());
            };
            let name: String = chars[i..i + end].iter().collect();
            i += end + 1;
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            let garbage: String = chars[start..i].iter().collect();
            i += 1;
            let garbage = garbage.trim_end_matches('\r').trim();
            if !garbage.is_empty() {
                return Err(format!("found garbage after section name : {garbage:?}"));
            }
            section = Some(name);
        } else if c == '#' || c == ';' {
            skip_comment(&mut i);
        } else if section.is_none() || c.is_whitespace() {
            // Before the first section anything is skipped.
        } else {
            // An option: its name up to `=` on this line, then the value and its
            // continuation lines.
            let mut j = i - 1;
            loop {
                match chars.get(j) {
                    None => return Err("EOF".into()),
                    Some('\n' | '\r') => {
                        return Err(
                            "unexpected newline encountered while parsing option name".into()
                        )
                    }
                    Some('=') => break,
                    Some(_) => j += 1,
                }
            }
            i = j + 1;
            options.push(section.clone().unwrap_or_default());
            loop {
                let start = i;
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                let line: String = chars[start..i].iter().collect();
                let eof = i >= chars.len();
                i += 1;
                let line = line.trim_end_matches('\r');
                if line.trim().is_empty() || !line.ends_with('\\') || eof {
                    break;
                }
            }
        }
    }
    Ok(options)
}

fn unit_extension_ok(name: &str) -> bool {
    // Go's path.Ext: from the last dot of the last element.
    let base = name.rsplit('/').next().unwrap_or(name);
    let ext = base.rfind('.').map_or("", |i| &base[i..]);
    matches!(
        ext,
        ".service"
            | ".socket"
            | ".device"
            | ".mount"
            | ".automount"
            | ".swap"
            | ".target"
            | ".path"
            | ".timer"
            | ".snapshot"
            | ".slice"
            | ".scope"
    )
}

fn validate_systemd(out: &mut Vec<Finding>, at: &At, sd: &Map<String, Value>) {
    // Systemd: enabled instances of a template without an Install section.
    let units: Vec<(usize, &Value, &Map<String, Value>)> = objects(sd, "units").collect();
    for (i, item, u) in &units {
        let name = s(u, "name").unwrap_or("");
        let Some((template, _)) = instance_of(name) else {
            continue;
        };
        if !truthy(u, "enabled") {
            continue;
        }
        let tname = format!("{template}@.service");
        let tpl = units
            .iter()
            .rev()
            .find(|(_, _, t)| s(t, "name") == Some(tname.as_str()));
        if let Some((_, _, t)) = tpl {
            if let Some(c) = s(t, "contents").filter(|c| !c.is_empty()) {
                if let Ok(sections) = unit_sections(c) {
                    if !sections.iter().any(|s| s == "Install") {
                        warn(
                            out,
                            at.entry("units", *i, item).field(u, "contents", false),
                            &format!(
                                "template unit {tname:?} for {name:?} doesn't have Install section"
                            ),
                        );
                    }
                }
            }
        }
    }
    for (i, item, u) in &units {
        let at = at.entry("units", *i, item);
        let name = s(u, "name").unwrap_or("");
        if !unit_extension_ok(name) {
            err(
                out,
                at.field(u, "name", true),
                "invalid systemd unit extension",
            );
        }
        let contents = s(u, "contents");
        let parsed = contents.map(unit_sections).unwrap_or(Ok(Vec::new()));
        let cpath = at.field(u, "contents", false);
        match parsed {
            Err(e) => err(out, cpath, &format!("invalid unit content: {e}")),
            Ok(sections) => {
                let enabled = truthy(u, "enabled");
                if enabled
                    && contents.is_some_and(|c| !c.is_empty())
                    && !sections.iter().any(|s| s == "Install")
                {
                    warn(
                        out,
                        cpath,
                        &format!("unit {name:?} is enabled, but has no install section so enable does nothing"),
                    );
                }
            }
        }
        for (j, item, d) in objects(u, "dropins") {
            let at = at.entry("dropins", j, item);
            if let Some(c) = s(d, "contents") {
                if let Err(e) = unit_sections(c) {
                    err(
                        out,
                        at.field(d, "contents", false),
                        &format!("invalid unit content: {e}"),
                    );
                }
            }
            let dname = s(d, "name").unwrap_or("");
            let base = dname.rsplit('/').next().unwrap_or(dname);
            if base.rfind('.').is_none_or(|i| &base[i..] != ".conf") {
                err(
                    out,
                    at.field(d, "name", true),
                    "invalid systemd drop-in extension",
                );
            }
        }
    }
}

/// `name@instance.service`: the template's name.
fn instance_of(name: &str) -> Option<(&str, &str)> {
    let stem = name.strip_suffix(".service")?;
    let (t, i) = stem.split_once('@')?;
    (!t.is_empty() && !i.is_empty()).then_some((t, i))
}
