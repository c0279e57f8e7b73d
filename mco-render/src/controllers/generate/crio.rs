//! The ContainerRuntimeConfig controller: validation, `storage.conf` re-encoded with the
//! user's storage settings, CRI-O drop-ins, and the generated MachineConfig
//! `99-<pool>-generated-containerruntime[-N]`.

use serde_json::Value;

use super::names::{self, Kind};
use super::{
    base_config, find_file, ign_config, ign_file, machine_config_values, pools_for,
    resource_condition, template_role, GenerateInput, GenerateOutcome, Sync, Unmet,
};
use crate::gocompat::quantity::Quantity;
use crate::gocompat::quote::go_quote;
use crate::release::Profile;

/// Where the storage configuration goes.
pub const STORAGE_CONF_PATH: &str = "/etc/containers/storage.conf";
/// The registries configuration, which the role's templates must hold.
const REGISTRIES_CONF_PATH: &str = "/etc/containers/registries.conf";
/// The signature policy, which the role's templates must hold.
const POLICY_JSON_PATH: &str = "/etc/containers/policy.json";
/// The feature gate for additional layer, image and artifact stores.
const ADDITIONAL_STORAGE_GATE: &str = "AdditionalStorageConfig";
const MIN_LOG_SIZE: i64 = 8192;
const MIN_PIDS_LIMIT: i64 = 20;

/// The user's settings, as the controller reads `spec.containerRuntimeConfig`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeSettings {
    /// `pidsLimit`.
    pub pids_limit: Option<i64>,
    /// `logLevel`.
    pub log_level: String,
    /// `logSizeMax`.
    pub log_size_max: Option<Quantity>,
    /// `overlaySize`.
    pub overlay_size: Option<Quantity>,
    /// `defaultRuntime`.
    pub default_runtime: String,
    /// `additionalLayerStores[].path`.
    pub layer_stores: Vec<String>,
    /// `additionalImageStores[].path`.
    pub image_stores: Vec<String>,
    /// `additionalArtifactStores[].path`.
    pub artifact_stores: Vec<String>,
}

fn quantity_at(v: &Value, key: &str) -> Result<Option<Quantity>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Quantity::parse(s.trim())
            .map(Some)
            .map_err(|e| e.to_string()),
        Some(other) => Quantity::parse(&other.to_string())
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}

fn paths_at(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| {
                    s.get("path")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

impl RuntimeSettings {
    /// The settings as `release` reads them: its ContainerRuntimeConfig type has the
    /// additional stores only from 4.22 ([`Profile::runtime_additional_stores`]).
    pub fn as_release_reads(mut self, release: &Profile) -> RuntimeSettings {
        if !release.runtime_additional_stores {
            self.layer_stores.clear();
            self.image_stores.clear();
            self.artifact_stores.clear();
        }
        self
    }

    /// Reads `spec.containerRuntimeConfig`.
    pub fn from_json(v: &Value) -> Result<RuntimeSettings, String> {
        Ok(RuntimeSettings {
            pids_limit: v.get("pidsLimit").and_then(Value::as_i64),
            log_level: v
                .get("logLevel")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            log_size_max: quantity_at(v, "logSizeMax")?,
            overlay_size: quantity_at(v, "overlaySize")?,
            default_runtime: v
                .get("defaultRuntime")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            layer_stores: paths_at(v, "additionalLayerStores"),
            image_stores: paths_at(v, "additionalImageStores"),
            artifact_stores: paths_at(v, "additionalArtifactStores"),
        })
    }
}

fn validate_store_path(path: &str, field: &str) -> Option<String> {
    if path.is_empty() {
        return Some(format!("invalid {field}: path must not be empty"));
    }
    let ok_chars = path.len() > 1
        && path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b));
    if !ok_chars {
        return Some(format!(
            "invalid {field} path {}: must be an absolute path containing only alphanumeric characters, '/', '.', '_', and '-'",
            go_quote(path)
        ));
    }
    if path.contains("//") {
        return Some(format!(
            "invalid {field} path {}: must not contain consecutive forward slashes",
            go_quote(path)
        ));
    }
    None
}

/// Upstream's `validateUserContainerRuntimeConfig`.
pub fn validate(s: &RuntimeSettings) -> Result<(), String> {
    if let Some(p) = s.pids_limit {
        if p != 0 && p < MIN_PIDS_LIMIT {
            return Err(format!("invalid PidsLimit {p}"));
        }
    }
    if let Some(q) = &s.log_size_max {
        if q.value() > 0 && q.value() <= MIN_LOG_SIZE {
            return Err(format!(
                "invalid LogSizeMax {}, cannot be less than 8kB",
                go_quote(&q.to_string())
            ));
        }
    }
    if let Some(q) = &s.overlay_size {
        if q.value() < 0 {
            return Err(format!(
                "invalid overlaySize {}, cannot be less than 0",
                go_quote(&q.to_string())
            ));
        }
    }
    if !s.log_level.is_empty()
        && !["error", "fatal", "panic", "warn", "info", "debug", "trace"]
            .contains(&s.log_level.as_str())
    {
        return Err(format!(
            "invalid LogLevel {}, must be one of error, fatal, panic, warn, info, debug, or trace",
            go_quote(&s.log_level)
        ));
    }
    if !["", "runc", "crun"].contains(&s.default_runtime.as_str()) {
        return Err(format!(
            "invalid DefaultRuntime {}, must be one of crun, runc",
            go_quote(&s.default_runtime)
        ));
    }
    let mut errs = Vec::new();
    for (paths, field) in [
        (&s.layer_stores, "AdditionalLayerStores"),
        (&s.image_stores, "AdditionalImageStores"),
        (&s.artifact_stores, "AdditionalArtifactStores"),
    ] {
        errs.extend(paths.iter().filter_map(|p| validate_store_path(p, field)));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n"))
    }
}

/// A TOML value the encoder writes.
enum Tv {
    /// A string left out when empty.
    Str(String),
    /// An integer, always written.
    Int(i64),
    /// A string list left out when empty.
    Strs(Vec<String>),
    /// A boolean left out when false.
    Bool(bool),
}

/// A TOML table: its keys, then its sub-tables.
struct Table {
    name: String,
    keys: Vec<(&'static str, Tv)>,
    /// Entries of a Go map field: string values under dynamic keys, sorted.
    entries: Vec<(String, String)>,
    tables: Vec<Table>,
}

/// A TOML basic string as Go's BurntSushi encoder writes it.
fn toml_string(s: &str) -> String {
    crate::gocompat::toml::quote(s)
}

/// A key, bare when it may be.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

impl Table {
    fn is_empty(&self) -> bool {
        self.keys.iter().all(|(_, v)| match v {
            Tv::Str(s) => s.is_empty(),
            Tv::Strs(l) => l.is_empty(),
            Tv::Bool(b) => !b,
            Tv::Int(_) => false,
        }) && self.entries.is_empty()
            && self.tables.iter().all(Table::is_empty)
    }

    /// Writes the table the way upstream's TOML encoder does: two spaces of indent per
    /// level, keys before sub-tables, empty tables left out.
    fn write(&self, depth: usize, out: &mut String) {
        if self.is_empty() {
            return;
        }
        let pad = "  ".repeat(depth);
        out.push_str(&format!("{pad}[{}]\n", self.name));
        let kpad = "  ".repeat(depth + 1);
        for (k, v) in &self.keys {
            let text = match v {
                Tv::Str(s) if s.is_empty() => continue,
                Tv::Strs(l) if l.is_empty() => continue,
                Tv::Bool(false) => continue,
                Tv::Str(s) => toml_string(s),
                Tv::Int(i) => i.to_string(),
                Tv::Strs(l) => format!(
                    "[{}]",
                    l.iter()
                        .map(|s| toml_string(s))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Tv::Bool(true) => "true".into(),
            };
            out.push_str(&format!("{kpad}{} = {text}\n", toml_key(k)));
        }
        for (k, v) in &self.entries {
            out.push_str(&format!("{kpad}{} = {}\n", toml_key(k), toml_string(v)));
        }
        for t in &self.tables {
            t.write(depth + 1, out);
        }
    }
}

/// Reads and re-encodes `storage.conf` with the user's overlay size and stores.
pub fn update_storage_config(
    base: &[u8],
    s: &RuntimeSettings,
    additional_storage: bool,
) -> Result<Vec<u8>, String> {
    let text = String::from_utf8_lossy(base);
    let doc: toml::Table = text.parse().map_err(|e| {
        format!("could not update container runtime config with new changes: error decoding crio config: {e}")
    })?;
    let empty = toml::Table::new();
    let storage = doc
        .get("storage")
        .and_then(|v| v.as_table())
        .unwrap_or(&empty);
    let options = storage
        .get("options")
        .and_then(|v| v.as_table())
        .unwrap_or(&empty);
    let sub = |t: &toml::Table, k: &str| -> toml::Table {
        t.get(k)
            .and_then(|v| v.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let gs = |t: &toml::Table, k: &str| -> String {
        t.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string()
    };
    let gi =
        |t: &toml::Table, k: &str| -> i64 { t.get(k).and_then(|v| v.as_integer()).unwrap_or(0) };
    let gl = |t: &toml::Table, k: &str| -> Vec<String> {
        t.get(k)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let gb =
        |t: &toml::Table, k: &str| -> bool { t.get(k).and_then(|v| v.as_bool()).unwrap_or(false) };

    let mut size = gs(options, "size");
    if let Some(q) = &s.overlay_size {
        if q.value() < 0 {
            return Err(format!(
                "could not update container runtime config with new changes: invalid overlaySize config {}: the overlaySize should be larger than 0",
                go_quote(&q.to_string())
            ));
        }
        if q.value() != 0 {
            size = q.to_string();
        }
    }
    let mut layer = gl(options, "additionallayerstores");
    if additional_storage && !s.layer_stores.is_empty() {
        layer = s
            .layer_stores
            .iter()
            .map(|p| {
                if p.ends_with(":ref") {
                    p.clone()
                } else {
                    format!("{p}:ref")
                }
            })
            .collect();
    }
    let mut image = gl(options, "additionalimagestores");
    if additional_storage && !s.image_stores.is_empty() {
        image = s.image_stores.clone();
    }
    let (aufs, btrfs, overlay, vfs, zfs) = (
        sub(options, "aufs"),
        sub(options, "btrfs"),
        sub(options, "overlay"),
        sub(options, "vfs"),
        sub(options, "zfs"),
    );
    let mut pull: Vec<(String, String)> = sub(options, "pull_options")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    pull.sort();
    let t = |name: &str, keys: Vec<(&'static str, Tv)>| Table {
        name: name.to_string(),
        keys,
        entries: Vec::new(),
        tables: Vec::new(),
    };
    let pull_table = Table {
        name: "storage.options.pull_options".into(),
        keys: Vec::new(),
        entries: pull,
        tables: Vec::new(),
    };
    let options_table = Table {
        name: "storage.options".into(),
        keys: vec![
            ("additionalimagestores", Tv::Strs(image)),
            ("imagestore", Tv::Str(gs(options, "imagestore"))),
            ("additionallayerstores", Tv::Strs(layer)),
            ("size", Tv::Str(size)),
            (
                "ignore_chown_errors",
                Tv::Str(gs(options, "ignore_chown_errors")),
            ),
            ("use_composefs", Tv::Str(gs(options, "use_composefs"))),
            ("force_mask", Tv::Int(gi(options, "force_mask"))),
            (
                "root-auto-userns-user",
                Tv::Str(gs(options, "root-auto-userns-user")),
            ),
            (
                "auto-userns-min-size",
                Tv::Int(gi(options, "auto-userns-min-size")),
            ),
            (
                "auto-userns-max-size",
                Tv::Int(gi(options, "auto-userns-max-size")),
            ),
            ("skip_mount_home", Tv::Str(gs(options, "skip_mount_home"))),
            ("mount_program", Tv::Str(gs(options, "mount_program"))),
            ("mountopt", Tv::Str(gs(options, "mountopt"))),
            (
                "disable-volatile",
                Tv::Bool(gb(options, "disable-volatile")),
            ),
        ],
        entries: Vec::new(),
        tables: vec![
            t(
                "storage.options.aufs",
                vec![("mountopt", Tv::Str(gs(&aufs, "mountopt")))],
            ),
            t(
                "storage.options.btrfs",
                vec![
                    ("min_space", Tv::Str(gs(&btrfs, "min_space"))),
                    ("size", Tv::Str(gs(&btrfs, "size"))),
                ],
            ),
            t(
                "storage.options.overlay",
                vec![
                    (
                        "ignore_chown_errors",
                        Tv::Str(gs(&overlay, "ignore_chown_errors")),
                    ),
                    ("mountopt", Tv::Str(gs(&overlay, "mountopt"))),
                    ("mount_program", Tv::Str(gs(&overlay, "mount_program"))),
                    ("size", Tv::Str(gs(&overlay, "size"))),
                    ("inodes", Tv::Str(gs(&overlay, "inodes"))),
                    ("skip_mount_home", Tv::Str(gs(&overlay, "skip_mount_home"))),
                    ("use_composefs", Tv::Str(gs(&overlay, "use_composefs"))),
                    ("force_mask", Tv::Str(gs(&overlay, "force_mask"))),
                ],
            ),
            t(
                "storage.options.vfs",
                vec![(
                    "ignore_chown_errors",
                    Tv::Str(gs(&vfs, "ignore_chown_errors")),
                )],
            ),
            t(
                "storage.options.zfs",
                vec![
                    ("mountopt", Tv::Str(gs(&zfs, "mountopt"))),
                    ("fsname", Tv::Str(gs(&zfs, "fsname"))),
                    ("size", Tv::Str(gs(&zfs, "size"))),
                ],
            ),
            pull_table,
        ],
    };
    let mut out = String::new();
    let storage_table = Table {
        name: "storage".into(),
        keys: vec![
            ("driver", Tv::Str(gs(storage, "driver"))),
            ("runroot", Tv::Str(gs(storage, "runroot"))),
            ("graphroot", Tv::Str(gs(storage, "graphroot"))),
        ],
        entries: Vec::new(),
        tables: vec![options_table],
    };
    storage_table.write(0, &mut out);
    Ok(out.into_bytes())
}

/// A CRI-O drop-in: `[crio]` / `[crio.runtime]` with one key.
fn dropin(key: &str, value: &str) -> Vec<u8> {
    format!("[crio]\n  [crio.runtime]\n    {key} = {value}\n").into_bytes()
}

/// The CRI-O drop-in files for the user's settings, in upstream's order.
pub fn crio_dropins(s: &RuntimeSettings, additional_storage: bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let path = |n: &str| format!("/etc/crio/crio.conf.d/01-ctrcfg-{n}");
    if !s.log_level.is_empty() {
        out.push((
            path("logLevel"),
            dropin("log_level", &toml_string(&s.log_level)),
        ));
    }
    if let Some(p) = s.pids_limit {
        out.push((path("pidsLimit"), dropin("pids_limit", &p.to_string())));
    }
    if let Some(q) = &s.log_size_max {
        if q.value() != 0 {
            out.push((
                path("logSizeMax"),
                dropin("log_size_max", &q.value().to_string()),
            ));
        }
    }
    if !s.default_runtime.is_empty() {
        out.push((
            path("defaultRuntime"),
            dropin("default_runtime", &toml_string(&s.default_runtime)),
        ));
    }
    if additional_storage && !s.artifact_stores.is_empty() {
        let list = format!(
            "[{}]",
            s.artifact_stores
                .iter()
                .map(|p| toml_string(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push((
            path("additionalArtifactStores"),
            dropin("additional_artifact_stores", &list),
        ));
    }
    out
}

fn needs_storage_update(s: &RuntimeSettings, additional_storage: bool) -> bool {
    s.overlay_size.as_ref().is_some_and(|q| !q.is_zero())
        || (additional_storage && (!s.layer_stores.is_empty() || !s.image_stores.is_empty()))
}

/// Whether a file is among the role's template MachineConfigs.
fn has_file(configs: &[&Value], path: &str) -> bool {
    configs.iter().any(|mc| {
        mc.pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .is_some_and(|files| {
                files
                    .iter()
                    .any(|f| f.get("path").and_then(Value::as_str) == Some(path))
            })
    })
}

/// Upstream's `generateOriginalContainerRuntimeConfigs` check: the role's templates must hold
/// `storage.conf`, `registries.conf` and `policy.json`, whatever the resource changes.
pub(super) fn check_original_files(configs: &[&Value]) -> Result<(), String> {
    let required: &[(&str, &str)] = &[
        (STORAGE_CONF_PATH, "could not find Storage Config"),
        (REGISTRIES_CONF_PATH, "could not find Registries Config"),
        (POLICY_JSON_PATH, "could not find Policy JSON"),
    ];
    let missing: Vec<&str> = required
        .iter()
        .filter(|(path, _)| !has_file(configs, path))
        .map(|(_, msg)| *msg)
        .collect();
    match missing.as_slice() {
        [] => Ok(()),
        [one] => Err(format!(
            "could not generate old container runtime configs: {one}"
        )),
        many => Err(format!(
            "could not generate old container runtime configs: [{}]",
            many.join(", ")
        )),
    }
}

/// Records a status update the way the ContainerRuntimeConfig controller does.
fn set_status(sync: &mut Sync, err: Option<&str>, message: Option<String>, release: &Profile) {
    let (kind, status, default_msg) = match err {
        Some(e) => (
            "Failure",
            release.runtime_failure_status,
            format!("Error: {e}"),
        ),
        None => ("Success", "True", "Success".to_string()),
    };
    let cond = resource_condition(kind, status, message.unwrap_or(default_msg));
    let conds = &mut sync.after.conditions;
    match conds.last_mut() {
        Some(last) if last.message == cond.message => *last = cond,
        _ => conds.push(cond),
    }
}

/// One sync of the ContainerRuntimeConfig controller, as the input's release runs it.
pub fn sync(input: &GenerateInput) -> GenerateOutcome {
    let release = input.release.profile();
    let release = &release;
    let mut sync = match Sync::new(input) {
        Ok(s) => s,
        Err(e) => {
            return GenerateOutcome {
                error: Some(e.to_string()),
                ..GenerateOutcome::default()
            }
        }
    };
    let version = input.controller_version.as_str();
    let base = machine_config_values(&input.base_machine_configs);
    macro_rules! fail {
        ($err:expr, $msg:expr) => {{
            let err: String = $err;
            set_status(&mut sync, Some(&err), $msg, release);
            return sync.finish(Some(err));
        }};
    }
    if sync.cfg.deleting {
        sync.cascade_delete(false);
        return sync.finish(None);
    }
    let object = input.object.to_json();
    let spec = object
        .pointer("/spec/containerRuntimeConfig")
        .filter(|v| !v.is_null());
    let settings = match spec.map(RuntimeSettings::from_json).transpose() {
        Ok(s) => s.map(|s| s.as_release_reads(release)),
        Err(e) => fail!(e, None),
    };
    if let Some(s) = &settings {
        if let Err(e) = validate(s) {
            fail!(e, None);
        }
    }
    let pools = match pools_for(
        sync.cfg.selector.as_ref(),
        &sync.pools,
        &format!(
            "could not find any MachineConfigPool set for ContainerRuntimeConfig {}",
            sync.cfg.name
        ),
    ) {
        Ok(p) => p,
        Err(e) => {
            sync.unmet = e.unmet();
            fail!(e.to_string(), None)
        }
    };
    let settings = settings.unwrap_or_default();
    let additional = input.feature_gates.is_enabled(ADDITIONAL_STORAGE_GATE);
    for pool in &pools {
        let all = sync.all.clone();
        let own = sync.cfg.clone();
        let key =
            match names::managed_key(Kind::ContainerRuntime, pool, &all, &own, &mut sync.cluster) {
                Ok(k) => k,
                Err(e) => {
                    let e = e.to_string();
                    let msg = format!("could not get ctrcfg key: {e}");
                    fail!(e, Some(msg));
                }
            };
        let existing = sync.cluster.machine_configs.get(&key).cloned();
        if let Some(mc) = &existing {
            let last_success = sync
                .cfg
                .conditions
                .last()
                .is_some_and(|c| c.type_ == "Success");
            let mc_version = mc
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(super::GENERATED_BY_ANNOTATION))
                .and_then(Value::as_str)
                .unwrap_or("");
            if sync.cfg.observed_generation >= sync.cfg.generation
                && last_success
                && mc_version == version
            {
                return sync.finish(None);
            }
        }
        let role = template_role(&pool.name);
        let bases: Vec<&Value> = [
            format!("00-{role}"),
            format!("01-{role}-container-runtime"),
            format!("01-{role}-kubelet"),
        ]
        .iter()
        .filter_map(|n| base_config(&base, n))
        .collect();
        if let Err(e) = check_original_files(&bases) {
            if bases.is_empty() {
                sync.unmet = Some(Unmet::BaseConfig);
            }
            let msg = format!("could not generate origin ContainerRuntime Configs: {e}");
            fail!(e, Some(msg));
        }
        let mut files = Vec::new();
        if needs_storage_update(&settings, additional) {
            let merged = find_file(&bases, STORAGE_CONF_PATH)
                .ok_or_else(|| "original Container Runtime config is empty".to_string())
                .and_then(|b| update_storage_config(&b, &settings, additional));
            match merged {
                Ok(bytes) => {
                    files.push(ign_file(STORAGE_CONF_PATH, &bytes));
                    set_status(&mut sync, None, None, release);
                }
                Err(e) => set_status(&mut sync, Some(&e), None, release),
            }
        }
        for (path, bytes) in crio_dropins(&settings, additional) {
            files.push(ign_file(&path, &bytes));
        }
        sync.record_suffix(&key);
        sync.write_machine_config(
            pool,
            &key,
            ign_config(files, release),
            "ContainerRuntimeConfig",
            version,
        );
        if !sync.after.finalizers.contains(&key) {
            sync.after.finalizers.push(key.clone());
        }
    }
    sync.clean_up_duplicates("generated-containerruntime", "", version);
    set_status(&mut sync, None, None, release);
    sync.finish(None)
}
