//! The translation of a parsed `openshift` config into a MachineConfig, in Butane's order:
//! unknown keys and source checks, the translation (contents, sugar), the variant's field
//! filters, then Ignition's checks of the result.

use super::checks::{self, Finding};
use super::contents::make_data_url;
use super::files::{FileSet, LocalError};
use super::generated::{self, FLAT, ORIGIN, SSH_ORIGINS};
use super::schema::{Converter, DuplicateKeys, GoNames, Kind, ScalarSource, CONFIG};
use super::sugar;
use super::version::SpecVersion;
use serde_json::{json, Map, Value};

const NO_FILES_DIR: &str =
    "local file paths are relative to a files directory that must be specified with -d/--files-dir";

/// What a translation gives before its findings are located.
pub(super) enum Step {
    /// yaml.v3 refused the types: the lines of its message after `yaml: unmarshal errors:`
    /// (the path, the line when not the value's, the text after `line N: `).
    Types(Vec<(String, Option<usize>, String)>),
    /// yaml.v3 stopped decoding: a scalar that does not resolve to its explicit tag.
    Fatal(String),
    /// Findings (Butane path, message, warning?), the MachineConfig when none is an error,
    /// and the error line Butane ends with otherwise.
    Done {
        findings: Vec<Finding>,
        output: Option<Value>,
        failure: Option<&'static str>,
    },
}

struct Ctx<'a> {
    files: Option<&'a FileSet>,
    version: SpecVersion,
    findings: Vec<Finding>,
}

fn error(path: String, msg: impl Into<String>) -> Finding {
    (path, msg.into(), false)
}

impl Ctx<'_> {
    fn read_local(&mut self, local: &str, path: String) -> Option<Vec<u8>> {
        let Some(files) = self.files else {
            self.findings.push(error(path, NO_FILES_DIR));
            return None;
        };
        match files.read(local) {
            Ok(f) => Some(f.bytes.clone()),
            Err(e) => {
                self.findings.push(error(path, e.message()));
                None
            }
        }
    }

    /// `inline:`/`local:` turned into `source` (and `compression`).
    fn resource(&mut self, res: &mut Map<String, Value>, path: &str) {
        let auto = self.version.auto_compression();
        let local = res.remove("local");
        let inline = res.remove("inline");
        let current = res
            .get("compression")
            .and_then(Value::as_str)
            .map(str::to_string);
        let apply = |res: &mut Map<String, Value>, bytes: &[u8]| {
            let url = make_data_url(bytes, current.as_deref(), auto);
            res.insert("source".into(), Value::String(url.source));
            if let Some(c) = url.compression {
                res.insert("compression".into(), Value::String(c.into()));
            }
        };
        if let Some(Value::String(l)) = local {
            match self.read_local(&l, format!("{path}.local")) {
                Some(bytes) => apply(res, &bytes),
                None => return,
            }
        }
        if let Some(Value::String(i)) = inline {
            apply(res, i.as_bytes());
        }
    }

    fn contents_local(&mut self, obj: &mut Map<String, Value>, path: &str) {
        if let Some(Value::String(l)) = obj.remove("contents_local") {
            if let Some(bytes) = self.read_local(&l, format!("{path}.contents_local")) {
                obj.insert(
                    "contents".into(),
                    Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                );
            }
        }
    }
}

fn take_obj(m: &mut Map<String, Value>, k: &str) -> Map<String, Value> {
    match m.remove(k) {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

fn arr_mut<'a>(
    m: &'a mut Map<String, Value>,
    k: &str,
) -> impl Iterator<Item = (usize, &'a mut Map<String, Value>)> {
    m.get_mut(k)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| v.as_object_mut().map(|o| (i, o)))
}

/// Drops the plain Go fields Ignition marks `omitempty` when at their zero: a partition's
/// `number` 0, a Tang server's empty `url`.
fn omit_empty_plain_fields(config: &mut Value) {
    let Some(storage) = config.get_mut("storage").and_then(Value::as_object_mut) else {
        return;
    };
    for (_, disk) in arr_mut(storage, "disks") {
        for (_, part) in arr_mut(disk, "partitions") {
            if part.get("number").and_then(Value::as_i64) == Some(0) {
                part.remove("number");
            }
        }
    }
    for (_, luks) in arr_mut(storage, "luks") {
        let Some(clevis) = luks.get_mut("clevis").and_then(Value::as_object_mut) else {
            continue;
        };
        for (_, tang) in arr_mut(clevis, "tang") {
            if tang.get("url").and_then(Value::as_str) == Some("") {
                tang.remove("url");
            }
        }
    }
}

/// Drops empty objects and lists, as Butane's output omits them.
fn prune(v: &mut Value) -> bool {
    match v {
        Value::Object(m) => {
            m.retain(|_, c| !prune(c));
            m.is_empty()
        }
        Value::Array(a) => {
            for c in a.iter_mut() {
                prune(c);
            }
            a.is_empty()
        }
        _ => false,
    }
}

fn nonzero(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
        _ => true,
    }
}

/// The variant's field filters: fields the MCO does not take, by Butane path.
fn filters(cfg: &Map<String, Value>, grub_users: bool, v: SpecVersion, out: &mut Vec<Finding>) {
    const USER_FIELDS: &[(&str, &str)] = &[
        ("gecos", "gecos"),
        ("groups", "groups"),
        ("homeDir", "home_dir"),
        ("noCreateHome", "no_create_home"),
        ("noLogInit", "no_log_init"),
        ("noUserGroup", "no_user_group"),
        ("passwordHash", "password_hash"),
        ("primaryGroup", "primary_group"),
        ("shell", "shell"),
        ("shouldExist", "should_exist"),
        ("system", "system"),
        ("uid", "uid"),
    ];
    const USER_MSG: &str = "fields other than \"name\", \"ssh_authorized_keys\", and \"password_hash\" (4.13.0+) are not supported in this spec version";
    if v.refuses_ignition_kargs() && cfg.get("kernelArguments").is_some_and(nonzero) {
        out.push(error(
            "$.kernel_arguments".into(),
            "this section cannot be used for kernel arguments in this spec version; use openshift.kernel_arguments instead",
        ));
    }
    let passwd = cfg.get("passwd");
    if passwd.and_then(|p| p.get("groups")).is_some_and(nonzero) {
        out.push(error(
            "$.passwd.groups".into(),
            "groups are not supported in this spec version",
        ));
    }
    for (i, u) in passwd
        .and_then(|p| p.get("users"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (json, yaml) in USER_FIELDS {
            if *json == "passwordHash" && v.password_hash_allowed() {
                continue;
            }
            if u.get(*json).is_some_and(nonzero) {
                out.push(error(format!("$.passwd.users.{i}.{yaml}"), USER_MSG));
            }
        }
    }
    let storage = cfg.get("storage");
    if storage
        .and_then(|s| s.get("directories"))
        .is_some_and(nonzero)
    {
        out.push(error(
            "$.storage.directories".into(),
            "directories are not supported in this spec version",
        ));
    }
    // GRUB's users become the first file, appended to.
    if grub_users {
        out.push(error(
            "$.grub.users".into(),
            "appending to files is not supported in this spec version",
        ));
    }
    for (i, f) in storage
        .and_then(|s| s.get("files"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if f.get("append").is_some_and(nonzero) {
            out.push(error(
                format!("$.storage.files.{i}.append"),
                "appending to files is not supported in this spec version",
            ));
        }
        let c = f.get("contents");
        if !v.compression_allowed() && c.and_then(|c| c.get("compression")).is_some_and(nonzero) {
            out.push(error(
                format!("$.storage.files.{i}.contents.compression"),
                "file compression is not supported in this spec version",
            ));
        }
        if c.and_then(|c| c.get("httpHeaders")).is_some_and(nonzero) {
            out.push(error(
                format!("$.storage.files.{i}.contents.http_headers"),
                "file HTTP headers are not supported in this spec version",
            ));
        }
    }
    if storage.and_then(|s| s.get("links")).is_some_and(nonzero) {
        out.push(error(
            "$.storage.links".into(),
            "links are not supported in this spec version",
        ));
    }
}

/// The MCO's own refusals (after the filters).
/// `minor` is the spec's minor version: format `none` is refused from 4.14 (Ignition 3.2 has
/// no such format), special mode bits from 4.10. `merged`: whether the translations went
/// through a merge of configs (see `generated::check`).
///
/// `filesystems`: the filesystems once the boot device's are merged in, each naming its
/// source.
fn mco_support(
    cfg: &Map<String, Value>,
    filesystems: &[Value],
    minor: u8,
    merged: bool,
    out: &mut Vec<Finding>,
) {
    let storage = cfg.get("storage");
    let format_at = |fs: &Value, i: usize| {
        fs.get(ORIGIN)
            .and_then(Value::as_str)
            .map_or_else(|| format!("$.storage.filesystems.{i}"), str::to_string)
            + ".format"
    };
    // RHCOS first (no mkfs.btrfs), then the MCO.
    for (i, fs) in filesystems.iter().enumerate() {
        if fs.get("format").and_then(Value::as_str) == Some("btrfs") {
            out.push(error(
                format_at(fs, i),
                "btrfs is not supported in this spec version",
            ));
        }
    }
    for (i, fs) in filesystems.iter().enumerate() {
        if minor >= 14 && fs.get("format").and_then(Value::as_str) == Some("none") {
            out.push(error(
                format_at(fs, i),
                "format \"none\" is not supported in this spec version",
            ));
        }
    }
    for (i, f) in storage
        .and_then(|s| s.get("files"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(src) = f
            .get("contents")
            .and_then(|c| c.get("source"))
            .and_then(Value::as_str)
        {
            // Any URL Go parses whose scheme is not `data`, none included.
            if generated::url_scheme(src).is_ok_and(|s| s != "data") {
                out.push(error(
                    format!("$.storage.files.{i}.contents.source"),
                    "file contents source must be data URL in this spec version",
                ));
            }
        }
        if minor >= 10
            && f.get("mode")
                .and_then(Value::as_i64)
                .is_some_and(|m| m & !0o777 != 0)
        {
            out.push(error(
                format!("$.storage.files.{i}.mode"),
                "special mode bits are not supported in this spec version",
            ));
        }
    }
    for (i, u) in cfg
        .get("passwd")
        .and_then(|p| p.get("users"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = u.get("name").and_then(Value::as_str).unwrap_or("");
        if name != "core" {
            // An empty name has no source once the translations went through a merge.
            let path = if merged && name.is_empty() {
                format!("$.spec.config.passwd.users.{i}.name")
            } else {
                format!("$.passwd.users.{i}.name")
            };
            out.push(error(
                path,
                "users other than \"core\" are not supported in this spec version",
            ));
        }
    }
}

/// FIPS 140-2 forbids LUKS's default XTS mode: up to 4.19, every volume without a cipher
/// option gets `--cipher aes-cbc-essiv:sha256`.
fn fips_luks_options(config: &mut Map<String, Value>) {
    let Some(Value::Object(storage)) = config.get_mut("storage") else {
        return;
    };
    for (_, luks) in arr_mut(storage, "luks") {
        let options = luks
            .entry("options")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(options) = options else {
            continue;
        };
        let has_cipher = options
            .iter()
            .filter_map(Value::as_str)
            .any(|o| o == "--cipher" || o == "-c" || o.starts_with("--cipher="));
        if !has_cipher {
            options.push(json!("--cipher"));
            options.push(json!("aes-cbc-essiv:sha256"));
        }
    }
}

/// Translates the parsed config `root` of spec `version`.
pub(super) fn run(
    root: &Value,
    scalars: &ScalarSource,
    duplicate_keys: &DuplicateKeys,
    tags: &std::collections::HashMap<String, String>,
    version: SpecVersion,
    files: Option<&FileSet>,
) -> Step {
    let variant_pkg = format!("v4_{}", version.minor());
    let mut conv = Converter {
        names: GoNames {
            base: version.base_package(),
            fcos: version.fcos_package(),
            variant: &variant_pkg,
        },
        minor: version.minor(),
        scalars,
        duplicate_keys,
        tags,
        fatal: None,
        unused: Vec::new(),
        mismatches: Vec::new(),
        rank: Vec::new(),
    };
    let converted = conv.convert(root, Kind::Obj(CONFIG, "Config"), "$");
    if let Some(fatal) = conv.fatal {
        return Step::Fatal(fatal);
    }
    if !conv.mismatches.is_empty() {
        return Step::Types(
            conv.mismatches
                .into_iter()
                .map(|m| (m.path, m.line, m.message))
                .collect(),
        );
    }
    let mut cfg = match converted {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    // In the order the unused-key check walks the Go structs.
    conv.unused.sort_by(|a, b| a.rank.cmp(&b.rank));
    let mut findings: Vec<Finding> = conv
        .unused
        .into_iter()
        .map(|u| (u.path, u.message, true))
        .collect();
    findings.extend(checks::source(&cfg, version.minor()));
    let done = |findings: Vec<Finding>, failure| Step::Done {
        findings,
        output: None,
        failure: Some(failure),
    };
    if findings.iter().any(|f| !f.2) {
        return done(findings, "source config is invalid");
    }

    cfg.remove("variant");
    cfg.remove("version");
    let metadata = take_obj(&mut cfg, "metadata");
    let openshift = take_obj(&mut cfg, "openshift");
    let boot_device = take_obj(&mut cfg, "boot_device");
    let grub = take_obj(&mut cfg, "grub");
    let mut ctx = Ctx {
        files,
        version,
        findings,
    };

    let mut ignition = take_obj(&mut cfg, "ignition");
    ignition.insert("version".into(), json!(version.ignition_version()));
    if let Some(Value::Object(c)) = ignition.get_mut("config") {
        if let Some(Value::Object(r)) = c.get_mut("replace") {
            ctx.resource(r, "$.ignition.config.replace");
        }
        for (i, r) in arr_mut(c, "merge") {
            ctx.resource(r, &format!("$.ignition.config.merge.{i}"));
        }
    }
    if let Some(Value::Object(tls)) = ignition.get_mut("security").and_then(|s| s.get_mut("tls")) {
        for (i, r) in arr_mut(tls, "certificateAuthorities") {
            ctx.resource(
                r,
                &format!("$.ignition.security.tls.certificate_authorities.{i}"),
            );
        }
    }

    // Butane's translation order: passwd, storage, systemd.
    let mut passwd = take_obj(&mut cfg, "passwd");
    for (i, u) in arr_mut(&mut passwd, "users") {
        let Some(Value::Array(locals)) = u.remove("ssh_authorized_keys_local") else {
            continue;
        };
        let p = format!("$.passwd.users.{i}.ssh_authorized_keys_local");
        if ctx.files.is_none() {
            ctx.findings.push(error(p, NO_FILES_DIR));
            continue;
        }
        let mut keys: Vec<Value> = u
            .get("sshAuthorizedKeys")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // Each key's Butane path: inline keys where written, file keys at their file.
        let mut origins: Vec<Value> = (0..keys.len())
            .map(|k| json!(format!("$.passwd.users.{i}.ssh_authorized_keys.{k}")))
            .collect();
        for (j, l) in locals.iter().enumerate() {
            let Some(l) = l.as_str() else { continue };
            if let Some(bytes) = ctx.read_local(l, format!("{p}.{j}")) {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                for k in text
                    .split('\n')
                    .map(|k| k.strip_suffix('\r').unwrap_or(k))
                    .filter(|k| !k.is_empty())
                {
                    keys.push(json!(k));
                    origins.push(json!(format!("{p}.{j}")));
                }
            }
        }
        u.insert("sshAuthorizedKeys".into(), Value::Array(keys));
        u.insert(SSH_ORIGINS.into(), Value::Array(origins));
    }

    let mut storage = take_obj(&mut cfg, "storage");
    let trees = storage.remove("trees");
    for (i, f) in arr_mut(&mut storage, "files") {
        let p = format!("$.storage.files.{i}");
        if let Some(Value::Object(c)) = f.get_mut("contents") {
            ctx.resource(c, &format!("{p}.contents"));
        }
        for (j, a) in arr_mut(f, "append") {
            ctx.resource(a, &format!("{p}.append.{j}"));
        }
    }
    for (i, l) in arr_mut(&mut storage, "luks") {
        if let Some(Value::Object(k)) = l.get_mut("keyFile") {
            ctx.resource(k, &format!("$.storage.luks.{i}.key_file"));
        }
    }
    let mut systemd = take_obj(&mut cfg, "systemd");
    for (i, u) in arr_mut(&mut systemd, "units") {
        let p = format!("$.systemd.units.{i}");
        // The drop-ins are translated with the unit's fields, its own contents after.
        for (j, d) in arr_mut(u, "dropins") {
            ctx.contents_local(d, &format!("{p}.dropins.{j}"));
        }
        ctx.contents_local(u, &p);
    }
    // Mount units for `with_mount_unit`, merged in as a parent config.
    let luks_tang: Vec<String> = storage
        .get("luks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|l| {
            l.get("clevis")
                .and_then(|c| c.get("tang"))
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
        })
        .filter_map(|l| l.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let mut mount_units = Vec::new();
    for (i, fs) in arr_mut(&mut storage, "filesystems") {
        if fs.remove("with_mount_unit").and_then(|v| v.as_bool()) != Some(true) {
            continue;
        }
        let device = fs.get("device").and_then(Value::as_str).unwrap_or("");
        let remote = luks_tang.iter().any(|n| {
            device == format!("/dev/mapper/{n}") || device == format!("/dev/disk/by-id/dm-name-{n}")
        });
        let mut unit = sugar::mount_unit(fs, remote, version.minor() >= 14);
        if let Value::Object(u) = &mut unit {
            u.insert(
                ORIGIN.into(),
                json!(format!("$.storage.filesystems.{i}.with_mount_unit")),
            );
            u.insert(FLAT.into(), json!(true));
        }
        mount_units.push(unit);
    }

    // Trees: files appended after the config's own.
    let mut tree_files: Vec<(String, Value)> = Vec::new();
    if let Some(Value::Array(trees)) = trees {
        for (i, t) in trees.iter().enumerate() {
            let p = format!("$.storage.trees.{i}");
            let Some(fs) = ctx.files else {
                ctx.findings.push(error(p, NO_FILES_DIR));
                break;
            };
            let local = t.get("local").and_then(Value::as_str).unwrap_or("");
            match fs.is_dir(local) {
                None => {
                    ctx.findings.push(error(p, LocalError::Escapes.message()));
                    continue;
                }
                Some(false) => {
                    let msg = if fs.exists(local) {
                        "root of tree must be a directory".to_string()
                    } else {
                        format!(
                            "stat {}/{}: no such file or directory",
                            fs.root.trim_end_matches('/'),
                            local
                        )
                    };
                    ctx.findings.push(error(p, msg));
                    continue;
                }
                Some(true) => {}
            }
            let dest = t
                .get("path")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
                .unwrap_or("/");
            for (rel, file) in fs.walk(local) {
                let path = format!("{}/{rel}", dest.trim_end_matches('/'));
                let files_list = storage
                    .entry("files")
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(files_list) = files_list else {
                    continue;
                };
                let at = files_list
                    .iter()
                    .position(|f| f.get("path").and_then(Value::as_str) == Some(path.as_str()));
                let has_source = |f: &Value| {
                    f.get("contents")
                        .and_then(|c| c.get("source"))
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                };
                if at.is_some_and(|i| has_source(&files_list[i]))
                    || tree_files.iter().any(|(tp, _)| *tp == path)
                {
                    ctx.findings.push(error(
                        p.clone(),
                        "matching filesystem node has existing contents or different type",
                    ));
                    continue;
                }
                let entry = match at {
                    Some(i) => &mut files_list[i],
                    None => {
                        tree_files
                            .push((path.clone(), json!({"path": path, ORIGIN: p, FLAT: true})));
                        let Some(last) = tree_files.last_mut() else {
                            continue;
                        };
                        &mut last.1
                    }
                };
                let Value::Object(entry) = entry else {
                    continue;
                };
                let contents = entry.entry("contents").or_insert_with(|| json!({}));
                let Value::Object(contents) = contents else {
                    continue;
                };
                let current = contents.get("compression").and_then(Value::as_str);
                let url = make_data_url(&file.bytes, current, version.auto_compression());
                if let Some(c) = url.compression {
                    contents.insert("compression".into(), json!(c));
                }
                contents.insert("source".into(), json!(url.source));
                if !entry.contains_key("mode") {
                    let mode = if file.mode & 0o111 != 0 { 0o755 } else { 0o644 };
                    entry.insert("mode".into(), json!(mode));
                }
            }
        }
    }
    if ctx.findings.iter().any(|f| !f.2) {
        return done(ctx.findings, "source config is invalid");
    }
    if !tree_files.is_empty() {
        let list = storage
            .entry("files")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.extend(tree_files.into_iter().map(|(_, f)| f));
        }
    }

    let mut config = Map::new();
    config.insert("ignition".into(), Value::Object(ignition));
    for (k, v) in [
        ("passwd", passwd),
        ("storage", storage),
        ("systemd", systemd),
    ] {
        config.insert(k.into(), Value::Object(v));
    }
    for (k, v) in cfg {
        config.insert(k, v);
    }
    let grub_users = grub.get("users").is_some_and(nonzero);
    // The fcos translation's warnings on the partitions of the disks, the boot device's
    // merged in.
    let mut preview = Map::new();
    if let Some(bd) = sugar::boot_device(&boot_device) {
        preview.insert("storage".into(), Value::Object(bd));
    }
    let mut user_storage = Map::new();
    for key in ["disks", "filesystems"] {
        if let Some(user) = config.get("storage").and_then(|s| s.get(key)) {
            user_storage.insert(key.into(), user.clone());
        }
    }
    sugar::merge(
        &mut preview,
        Map::from_iter([("storage".into(), Value::Object(user_storage))]),
    );
    let merged_list = |key: &str| {
        preview
            .get("storage")
            .and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    ctx.findings
        .extend(checks::partitions(merged_list("disks")));
    // The RHCOS and MCO checks are part of the translation; the field filters come after.
    // Up to 4.13 the translations go through a merge only for filesystems (mount units) and
    // a boot device that renders anything; from 4.14 GRUB's merge always runs.
    let merged = version.minor() >= 14
        || config
            .get("storage")
            .and_then(|s| s.get("filesystems"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
        || sugar::boot_device(&boot_device).is_some();
    mco_support(
        &config,
        merged_list("filesystems"),
        version.minor(),
        merged,
        &mut ctx.findings,
    );
    if ctx.findings.iter().any(|f| !f.2) {
        return done(ctx.findings, "source config is invalid");
    }
    filters(&config, grub_users, version, &mut ctx.findings);
    if ctx.findings.iter().any(|f| !f.2) {
        return done(ctx.findings, "source config is invalid");
    }
    let mut parent = Map::new();
    if !mount_units.is_empty() {
        parent.insert("systemd".into(), json!({"units": mount_units}));
    }
    if let Some(bd) = sugar::boot_device(&boot_device) {
        sugar::merge(
            &mut parent,
            json!({"storage": bd})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
    }
    sugar::merge(&mut parent, config);
    let mut config = parent;
    // Up to 4.19 only: later specs leave LUKS options as written.
    if version.minor() <= 19 && openshift.get("fips").and_then(Value::as_bool) == Some(true) {
        fips_luks_options(&mut config);
    }
    ctx.findings.extend(generated::check(
        &openshift,
        &config,
        version.minor(),
        merged,
    ));
    if ctx.findings.iter().any(|f| !f.2) {
        return done(ctx.findings, "config generated was invalid");
    }

    let mut spec = Map::new();
    let mut config = Value::Object(config);
    generated::strip_origins(&mut config);
    // Ignition 3.2 (up to 4.13) holds a LUKS volume's clevis, and its custom pin, by
    // pointer: once given they are printed even when empty, the custom pin with its plain
    // string fields.
    let kept: Vec<(usize, Option<Map<String, Value>>)> = if version.minor() <= 13 {
        config
            .get("storage")
            .and_then(|s| s.get("luks"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, l)| l.get("clevis").is_some_and(Value::is_object))
            .map(|(i, l)| {
                let custom = l["clevis"]
                    .get("custom")
                    .and_then(Value::as_object)
                    .map(|c| {
                        let mut c = c.clone();
                        for k in ["config", "pin"] {
                            c.entry(k).or_insert_with(|| json!(""));
                        }
                        c
                    });
                (i, custom)
            })
            .collect()
    } else {
        Vec::new()
    };
    omit_empty_plain_fields(&mut config);
    prune(&mut config);
    for (i, custom) in kept {
        let luks = config
            .get_mut("storage")
            .and_then(|s| s.get_mut("luks"))
            .and_then(|l| l.get_mut(i))
            .and_then(Value::as_object_mut);
        if let Some(luks) = luks {
            let clevis = luks.entry("clevis").or_insert_with(|| json!({}));
            if let (Some(c), Some(custom)) = (clevis.as_object_mut(), custom) {
                c.insert("custom".into(), Value::Object(custom));
            }
        }
    }
    if let Value::Object(c) = &mut config {
        c.entry("ignition")
            .or_insert_with(|| json!({"version": version.ignition_version()}));
    }
    spec.insert("config".into(), config);
    for key in ["kernelArguments", "extensions", "fips", "kernelType"] {
        if let Some(v) = openshift.get(key) {
            if !v.is_array() || nonzero(v) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    let mut meta = Map::new();
    meta.insert(
        "name".into(),
        metadata.get("name").cloned().unwrap_or(json!("")),
    );
    if let Some(Value::Object(l)) = metadata.get("labels") {
        if !l.is_empty() {
            meta.insert("labels".into(), Value::Object(l.clone()));
        }
    }
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": meta,
        "spec": spec,
    });
    Step::Done {
        findings: ctx.findings,
        output: Some(mc),
        failure: None,
    }
}
