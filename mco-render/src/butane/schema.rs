//! The fields of an `openshift` config, their Ignition names and types, and the conversion of
//! parsed YAML into Ignition's JSON shape (snake_case to camelCase, unknown keys reported).

use super::generated::ORIGIN;
use super::scalar::{resolve_plain, RawScalar, Resolved, Style};
use serde_json::{Map, Value};

/// A field's type, as the Go struct Butane decodes into holds it.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A string (any scalar is taken as its text).
    Str,
    /// An integer (Go's base-prefixed syntax, `0644` is octal).
    Int,
    /// A boolean.
    Bool,
    /// A list of strings, of the named Go string type (`""` for plain `string`).
    Strs(&'static str),
    /// A string-to-string map.
    Labels,
    /// A struct: its fields and its Go type name.
    Obj(&'static [Field], &'static str),
    /// A list of structs.
    Objs(&'static [Field], &'static str),
}

/// One field: its Butane key, its Ignition key (`None` when Butane's sugar consumes it), its
/// type.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The Butane key.
    pub yaml: &'static str,
    /// The Ignition key.
    pub json: Option<&'static str>,
    /// The type.
    pub kind: Kind,
    /// The first `4.N.0` spec whose schema has the field (older specs report it unused).
    pub since: u8,
}

const fn f(yaml: &'static str, json: &'static str, kind: Kind) -> Field {
    Field {
        yaml,
        json: Some(json),
        kind,
        since: 0,
    }
}
const fn sugar(yaml: &'static str, kind: Kind) -> Field {
    Field {
        yaml,
        json: None,
        kind,
        since: 0,
    }
}
/// `field`, known from spec `4.<minor>.0` on.
const fn since(minor: u8, field: Field) -> Field {
    Field {
        since: minor,
        ..field
    }
}

use Kind::{Bool, Int, Labels, Obj, Objs, Str};

/// A list of plain strings.
const STRS: Kind = Kind::Strs("");

const NODE_USER: &[Field] = &[f("id", "id", Int), f("name", "name", Str)];
const VERIFICATION: &[Field] = &[f("hash", "hash", Str)];
const HEADER: &[Field] = &[f("name", "name", Str), f("value", "value", Str)];
/// A resource (`contents`, `append` entries, Ignition config references).
pub const RESOURCE: &[Field] = &[
    f("source", "source", Str),
    sugar("inline", Str),
    sugar("local", Str),
    f("compression", "compression", Str),
    f("http_headers", "httpHeaders", Objs(HEADER, "HTTPHeader")),
    f(
        "verification",
        "verification",
        Obj(VERIFICATION, "Verification"),
    ),
];
const FILE: &[Field] = &[
    f("path", "path", Str),
    f("overwrite", "overwrite", Bool),
    f("user", "user", Obj(NODE_USER, "NodeUser")),
    f("group", "group", Obj(NODE_USER, "NodeGroup")),
    f("mode", "mode", Int),
    f("contents", "contents", Obj(RESOURCE, "Resource")),
    f("append", "append", Objs(RESOURCE, "Resource")),
];
const DIRECTORY: &[Field] = &[
    f("path", "path", Str),
    f("overwrite", "overwrite", Bool),
    f("user", "user", Obj(NODE_USER, "NodeUser")),
    f("group", "group", Obj(NODE_USER, "NodeGroup")),
    f("mode", "mode", Int),
];
const LINK: &[Field] = &[
    f("path", "path", Str),
    f("overwrite", "overwrite", Bool),
    f("user", "user", Obj(NODE_USER, "NodeUser")),
    f("group", "group", Obj(NODE_USER, "NodeGroup")),
    f("target", "target", Str),
    f("hard", "hard", Bool),
];
const PARTITION: &[Field] = &[
    f("label", "label", Str),
    f("number", "number", Int),
    f("size_mib", "sizeMiB", Int),
    f("start_mib", "startMiB", Int),
    f("type_guid", "typeGuid", Str),
    f("guid", "guid", Str),
    f("wipe_partition_entry", "wipePartitionEntry", Bool),
    f("should_exist", "shouldExist", Bool),
    f("resize", "resize", Bool),
];
const DISK: &[Field] = &[
    f("device", "device", Str),
    f("wipe_table", "wipeTable", Bool),
    f("partitions", "partitions", Objs(PARTITION, "Partition")),
];
const RAID: &[Field] = &[
    f("name", "name", Str),
    f("level", "level", Str),
    f("devices", "devices", Kind::Strs("Device")),
    f("spares", "spares", Int),
    f("options", "options", Kind::Strs("RaidOption")),
];
const FILESYSTEM: &[Field] = &[
    f("device", "device", Str),
    f("format", "format", Str),
    f("path", "path", Str),
    f("wipe_filesystem", "wipeFilesystem", Bool),
    f("label", "label", Str),
    f("uuid", "uuid", Str),
    f("options", "options", STRS),
    f("mount_options", "mountOptions", STRS),
    sugar("with_mount_unit", Bool),
];
const TANG: &[Field] = &[
    f("url", "url", Str),
    f("thumbprint", "thumbprint", Str),
    since(14, f("advertisement", "advertisement", Str)),
];
const CUSTOM: &[Field] = &[
    f("pin", "pin", Str),
    f("config", "config", Str),
    f("needs_network", "needsNetwork", Bool),
];
const CLEVIS: &[Field] = &[
    f("tang", "tang", Objs(TANG, "Tang")),
    f("tpm2", "tpm2", Bool),
    f("threshold", "threshold", Int),
    f("custom", "custom", Obj(CUSTOM, "ClevisCustom")),
];
const CEX: &[Field] = &[f("enabled", "enabled", Bool)];
const LUKS: &[Field] = &[
    f("name", "name", Str),
    f("device", "device", Str),
    f("key_file", "keyFile", Obj(RESOURCE, "Resource")),
    f("label", "label", Str),
    f("uuid", "uuid", Str),
    f("wipe_volume", "wipeVolume", Bool),
    f("options", "options", Kind::Strs("LuksOption")),
    since(14, f("open_options", "openOptions", STRS)),
    since(14, f("discard", "discard", Bool)),
    f("clevis", "clevis", Obj(CLEVIS, "Clevis")),
    since(19, f("cex", "cex", Obj(CEX, "Cex"))),
];
const TREE: &[Field] = &[f("local", "local", Str), f("path", "path", Str)];
const STORAGE: &[Field] = &[
    f("disks", "disks", Objs(DISK, "Disk")),
    f("raid", "raid", Objs(RAID, "Raid")),
    f("filesystems", "filesystems", Objs(FILESYSTEM, "Filesystem")),
    f("files", "files", Objs(FILE, "File")),
    f("directories", "directories", Objs(DIRECTORY, "Directory")),
    f("links", "links", Objs(LINK, "Link")),
    f("luks", "luks", Objs(LUKS, "Luks")),
    sugar("trees", Objs(TREE, "Tree")),
];
const DROPIN: &[Field] = &[
    f("name", "name", Str),
    f("contents", "contents", Str),
    since(14, sugar("contents_local", Str)),
];
const UNIT: &[Field] = &[
    f("name", "name", Str),
    f("enabled", "enabled", Bool),
    f("mask", "mask", Bool),
    f("contents", "contents", Str),
    since(14, sugar("contents_local", Str)),
    f("dropins", "dropins", Objs(DROPIN, "Dropin")),
];
const SYSTEMD: &[Field] = &[f("units", "units", Objs(UNIT, "Unit"))];
const USER: &[Field] = &[
    f("name", "name", Str),
    f("password_hash", "passwordHash", Str),
    f(
        "ssh_authorized_keys",
        "sshAuthorizedKeys",
        Kind::Strs("SSHAuthorizedKey"),
    ),
    since(14, sugar("ssh_authorized_keys_local", STRS)),
    f("uid", "uid", Int),
    f("gecos", "gecos", Str),
    f("home_dir", "homeDir", Str),
    f("no_create_home", "noCreateHome", Bool),
    f("primary_group", "primaryGroup", Str),
    f("groups", "groups", Kind::Strs("Group")),
    f("no_user_group", "noUserGroup", Bool),
    f("no_log_init", "noLogInit", Bool),
    f("shell", "shell", Str),
    f("should_exist", "shouldExist", Bool),
    f("system", "system", Bool),
];
const GROUP: &[Field] = &[
    f("name", "name", Str),
    f("gid", "gid", Int),
    f("password_hash", "passwordHash", Str),
    f("should_exist", "shouldExist", Bool),
    f("system", "system", Bool),
];
const PASSWD: &[Field] = &[
    f("users", "users", Objs(USER, "PasswdUser")),
    f("groups", "groups", Objs(GROUP, "PasswdGroup")),
];
const KARGS: &[Field] = &[
    f("should_exist", "shouldExist", Kind::Strs("KernelArgument")),
    f(
        "should_not_exist",
        "shouldNotExist",
        Kind::Strs("KernelArgument"),
    ),
];
const CONFIG_REF: &[Field] = &[
    f("merge", "merge", Objs(RESOURCE, "Resource")),
    f("replace", "replace", Obj(RESOURCE, "Resource")),
];
const PROXY: &[Field] = &[
    f("http_proxy", "httpProxy", Str),
    f("https_proxy", "httpsProxy", Str),
    f("no_proxy", "noProxy", STRS),
];
const TLS: &[Field] = &[f(
    "certificate_authorities",
    "certificateAuthorities",
    Objs(RESOURCE, "Resource"),
)];
const SECURITY: &[Field] = &[f("tls", "tls", Obj(TLS, "TLS"))];
const TIMEOUTS: &[Field] = &[
    f("http_response_headers", "httpResponseHeaders", Int),
    f("http_total", "httpTotal", Int),
];
const IGNITION: &[Field] = &[
    f("config", "config", Obj(CONFIG_REF, "IgnitionConfig")),
    f("proxy", "proxy", Obj(PROXY, "Proxy")),
    f("security", "security", Obj(SECURITY, "Security")),
    f("timeouts", "timeouts", Obj(TIMEOUTS, "Timeouts")),
];
const MIRROR: &[Field] = &[f("devices", "devices", STRS)];
const BD_LUKS: &[Field] = &[
    since(19, f("device", "device", Str)),
    since(14, f("discard", "discard", Bool)),
    f("tang", "tang", Objs(TANG, "Tang")),
    f("threshold", "threshold", Int),
    f("tpm2", "tpm2", Bool),
    since(19, f("cex", "cex", Obj(CEX, "Cex"))),
];
const BOOT_DEVICE: &[Field] = &[
    f("layout", "layout", Str),
    f("luks", "luks", Obj(BD_LUKS, "BootDeviceLuks")),
    f("mirror", "mirror", Obj(MIRROR, "BootDeviceMirror")),
];
const GRUB_USER: &[Field] = &[
    f("name", "name", Str),
    f("password_hash", "passwordHash", Str),
];
const GRUB: &[Field] = &[f("users", "users", Objs(GRUB_USER, "GrubUser"))];
const METADATA: &[Field] = &[f("name", "name", Str), f("labels", "labels", Labels)];
const OPENSHIFT: &[Field] = &[
    f("kernel_arguments", "kernelArguments", STRS),
    f("extensions", "extensions", STRS),
    f("fips", "fips", Bool),
    f("kernel_type", "kernelType", Str),
];
/// A whole `openshift` config.
pub const CONFIG: &[Field] = &[
    sugar("variant", Str),
    sugar("version", Str),
    f("ignition", "ignition", Obj(IGNITION, "Ignition")),
    since(
        14,
        f(
            "kernel_arguments",
            "kernelArguments",
            Obj(KARGS, "KernelArguments"),
        ),
    ),
    f("passwd", "passwd", Obj(PASSWD, "Passwd")),
    f("storage", "storage", Obj(STORAGE, "Storage")),
    f("systemd", "systemd", Obj(SYSTEMD, "Systemd")),
    f("boot_device", "boot_device", Obj(BOOT_DEVICE, "BootDevice")),
    since(14, f("grub", "grub", Obj(GRUB, "Grub"))),
    f("metadata", "metadata", Obj(METADATA, "Metadata")),
    f("openshift", "openshift", Obj(OPENSHIFT, "OpenShift")),
];

/// The Go package a type of the config lives in: the openshift package (`v4_9`), the fcos one
/// the boot device comes from (`v1_3`), or the base schema (`v0_3`).
fn go_package<'a>(name: &str, names: &GoNames<'a>) -> &'a str {
    match name {
        "Metadata" | "OpenShift" => names.variant,
        "BootDevice" | "BootDeviceLuks" | "BootDeviceMirror" | "Grub" | "GrubUser" => names.fcos,
        _ => names.base,
    }
}

/// The Go packages the type errors name.
pub struct GoNames<'a> {
    /// The base schema package (`v0_3`).
    pub base: &'a str,
    /// The fcos package the variant embeds (`v1_3`).
    pub fcos: &'a str,
    /// The openshift package (`v4_9`).
    pub variant: &'a str,
}

/// A warning of the unused-key check: a key no field takes (`unused key annotations`), or a
/// list entry the check cannot match to its source node.
pub struct Unused {
    /// The Butane path.
    pub path: String,
    /// The message.
    pub message: String,
    /// Where the check meets it in its walk of the Go structs (fields in declaration order).
    pub rank: Vec<usize>,
}

/// The fields of a struct in Go declaration order, where it differs from the table's.
fn go_order(name: &str) -> &'static [&'static str] {
    match name {
        "Config" => &[
            "version",
            "variant",
            "ignition",
            "kernel_arguments",
            "passwd",
            "storage",
            "systemd",
            "boot_device",
            "grub",
            "metadata",
            "openshift",
        ],
        "Resource" => &[
            "compression",
            "http_headers",
            "source",
            "inline",
            "local",
            "verification",
        ],
        "File" => &[
            "group",
            "overwrite",
            "path",
            "user",
            "append",
            "contents",
            "mode",
        ],
        "Directory" => &["group", "overwrite", "path", "user", "mode"],
        "Link" => &["group", "overwrite", "path", "user", "hard", "target"],
        "Partition" => &[
            "guid",
            "label",
            "number",
            "resize",
            "should_exist",
            "size_mib",
            "start_mib",
            "type_guid",
            "wipe_partition_entry",
        ],
        "Disk" => &["device", "partitions", "wipe_table"],
        "Raid" => &["devices", "level", "name", "options", "spares"],
        "Filesystem" => &[
            "device",
            "format",
            "label",
            "mount_options",
            "options",
            "path",
            "uuid",
            "wipe_filesystem",
            "with_mount_unit",
        ],
        "Tang" => &["thumbprint", "url", "advertisement"],
        "ClevisCustom" => &["config", "needs_network", "pin"],
        "Clevis" => &["custom", "tang", "threshold", "tpm2"],
        "Luks" => &[
            "cex",
            "clevis",
            "device",
            "discard",
            "key_file",
            "label",
            "name",
            "open_options",
            "options",
            "uuid",
            "wipe_volume",
        ],
        "Storage" => &[
            "directories",
            "disks",
            "files",
            "filesystems",
            "links",
            "luks",
            "raid",
            "trees",
        ],
        "Dropin" => &["contents", "contents_local", "name"],
        "Unit" => &[
            "contents",
            "contents_local",
            "dropins",
            "enabled",
            "mask",
            "name",
        ],
        "PasswdUser" => &[
            "gecos",
            "groups",
            "home_dir",
            "name",
            "no_create_home",
            "no_log_init",
            "no_user_group",
            "password_hash",
            "primary_group",
            "should_exist",
            "ssh_authorized_keys",
            "ssh_authorized_keys_local",
            "shell",
            "system",
            "uid",
        ],
        "PasswdGroup" => &["gid", "name", "password_hash", "should_exist", "system"],
        "Passwd" => &["groups", "users"],
        "BootDeviceLuks" => &["cex", "discard", "device", "tang", "threshold", "tpm2"],
        _ => &[],
    }
}

/// The keys given twice in a mapping, by the mapping's path (without `$.`): each pair of
/// equal keys (the key, the earlier line, the later line), in yaml.v3's order.
pub type DuplicateKeys = std::collections::HashMap<String, Vec<(String, usize, usize)>>;

/// A value of the wrong type: its path and yaml.v3's wording after `line N: `.
pub struct TypeMismatch {
    /// The Butane path.
    pub path: String,
    /// The line, when not the value's own (a key given twice).
    pub line: Option<usize>,
    /// `cannot unmarshal !!map into []v0_3.PasswdUser`.
    pub message: String,
}

/// How each scalar of the source was written, by Butane path without `$.`
/// (`storage.files.0.mode`): its style, and for plain scalars its text when the line shows
/// it whole.
pub type ScalarSource = std::collections::HashMap<String, (Style, Option<String>)>;

/// Conversion state.
pub struct Converter<'a> {
    /// Go names for messages.
    pub names: GoNames<'a>,
    /// The spec's minor version: fields of later specs are unknown keys.
    pub minor: u8,
    /// How the scalars were written (empty: taken from the parsed values alone).
    pub scalars: &'a ScalarSource,
    /// Keys given twice, by mapping.
    pub duplicate_keys: &'a DuplicateKeys,
    /// Explicit tags of scalars, by path without `$.`.
    pub tags: &'a std::collections::HashMap<String, String>,
    /// Set when a scalar does not resolve to its explicit tag: yaml.v3 then stops decoding
    /// with this message.
    pub fatal: Option<String>,
    /// Unknown keys found, in order.
    pub unused: Vec<Unused>,
    /// Type errors found, in order.
    pub mismatches: Vec<TypeMismatch>,
    /// The walk position of the node being converted (see [`Unused::rank`]).
    pub rank: Vec<usize>,
}

/// A scalar as a plain scalar of the text the parsed value prints as.
fn fallback_scalar(v: &Value) -> RawScalar {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Null => "~".into(),
        other => other.to_string(),
    };
    RawScalar {
        style: Style::Plain,
        text,
        tag: None,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` on a plain scalar, as yaml.v3 resolves integers.
pub fn go_int(s: &str) -> Option<i64> {
    match resolve_plain(s) {
        Resolved::Int(i) => i64::try_from(i).ok(),
        _ => None,
    }
}

/// vcontext's warning when a struct's source node is no mapping.
fn context_mismatch(path: &str) -> String {
    format!("context tree does not match content tree at {path}. Line and column reporting may be inconsistent. Unused keys may not be reported")
}

fn join(path: &str, seg: &str) -> String {
    format!("{path}.{seg}")
}

impl Converter<'_> {
    fn go_type(&self, kind: Kind) -> String {
        let base = self.names.base;
        match kind {
            Str => "string".into(),
            Int => "int".into(),
            Bool => "bool".into(),
            Kind::Strs(_) => format!("[]{}", self.elem_type(kind)),
            Labels => "map[string]string".into(),
            Obj(_, "ClevisCustom") if base == "v0_3" => format!("{base}.Custom"),
            Obj(_, n) => format!("{}.{n}", go_package(n, &self.names)),
            Objs(_, "HTTPHeader") => format!("{base}.HTTPHeaders"),
            Objs(_, n) => format!("[]{}.{n}", go_package(n, &self.names)),
        }
    }

    /// Whether the struct is held by pointer (the oldest base schema's clevis and custom pin),
    /// which a null leaves nil.
    fn pointer_struct(&self, kind: Kind) -> bool {
        self.names.base == "v0_3" && matches!(kind, Obj(_, "Clevis" | "ClevisCustom"))
    }

    /// The Go type of a list's items.
    fn elem_type(&self, kind: Kind) -> String {
        let base = self.names.base;
        match kind {
            Kind::Strs("") => "string".into(),
            // Named option types only in the oldest base schema.
            Kind::Strs("LuksOption" | "RaidOption") if base != "v0_3" => "string".into(),
            Kind::Strs(n) => format!("{base}.{n}"),
            _ => self.go_type(kind),
        }
    }

    fn mismatch(&mut self, path: &str, what: String, go_type: String) {
        self.mismatches.push(TypeMismatch {
            path: path.to_string(),
            line: None,
            message: format!("cannot unmarshal {what} into {go_type}"),
        });
    }

    /// The scalar at `path` as the decoder sees it: its style and text from the source when
    /// they agree with the parsed value, else from the parsed value.
    fn scalar(&mut self, v: &Value, path: &str) -> RawScalar {
        let key = path.strip_prefix("$.").unwrap_or("");
        let mut raw = self.untagged_scalar(v, key);
        raw.tag = self.tags.get(key).cloned();
        if let Err(e) = raw.check_tag() {
            self.fatal.get_or_insert(e);
        }
        raw
    }

    fn untagged_scalar(&self, v: &Value, key: &str) -> RawScalar {
        match self.scalars.get(key) {
            Some((Style::Quoted, _)) => match v {
                Value::String(s) => RawScalar {
                    style: Style::Quoted,
                    text: s.clone(),
                    tag: None,
                },
                _ => fallback_scalar(v),
            },
            Some((Style::Plain, Some(text))) => {
                let agrees = serde_yaml_ng::from_str::<Value>(text).is_ok_and(|p| p == *v);
                if agrees {
                    RawScalar {
                        style: Style::Plain,
                        text: text.clone(),
                        tag: None,
                    }
                } else {
                    fallback_scalar(v)
                }
            }
            _ => fallback_scalar(v),
        }
    }

    /// `v` converted to `kind`'s Ignition shape; `None` for null or a type error.
    pub fn convert(&mut self, v: &Value, kind: Kind, path: &str) -> Option<Value> {
        if self.fatal.is_some() {
            return None;
        }
        let collection = |v: &Value| match v {
            Value::Object(_) => Some("!!map".to_string()),
            Value::Array(_) => Some("!!seq".to_string()),
            _ => None,
        };
        // A scalar where a collection belongs (nulls leave it unset).
        if matches!(kind, Kind::Strs(_) | Labels | Obj(..) | Objs(..))
            && !v.is_array()
            && !v.is_object()
        {
            let raw = self.scalar(v, path);
            if raw.resolve() != Resolved::Null {
                self.mismatch(path, raw.describe(), self.go_type(kind));
            } else if matches!(kind, Obj(..)) && !self.pointer_struct(kind) {
                // The struct stays; the unused-key check then meets a null, not a mapping.
                let mut rank = self.rank.clone();
                rank.push(0);
                self.unused.push(Unused {
                    message: context_mismatch(path),
                    path: path.to_string(),
                    rank,
                });
            }
            return None;
        }
        // A mapping holding a key twice is refused whole, before its type is looked at.
        if v.is_object() {
            let key = path.strip_prefix("$.").unwrap_or("");
            if let Some(pairs) = self.duplicate_keys.get(key).filter(|p| !p.is_empty()) {
                for (k, first, second) in pairs {
                    self.mismatches.push(TypeMismatch {
                        path: path.to_string(),
                        line: Some(*second),
                        message: format!("mapping key {k:?} already defined at line {first}"),
                    });
                }
                return None;
            }
        }
        let wrong_collection = match kind {
            Kind::Strs(_) | Objs(..) => v.is_object(),
            Labels | Obj(..) => v.is_array(),
            _ => false,
        };
        if wrong_collection {
            let what = collection(v).unwrap_or_default();
            self.mismatch(path, what, self.go_type(kind));
            return None;
        }
        match kind {
            Str | Int | Bool => {
                if let Some(what) = collection(v) {
                    self.mismatch(path, what, self.go_type(kind));
                    return None;
                }
                let raw = self.scalar(v, path);
                let out = match kind {
                    Str => Ok(raw.to_str().map(Value::String)),
                    Int => raw.to_int().map(|i| i.map(Value::from)),
                    _ => raw.to_bool().map(|b| b.map(Value::Bool)),
                };
                match out {
                    Ok(out) => out,
                    Err(_) => {
                        self.mismatch(path, raw.describe(), self.go_type(kind));
                        None
                    }
                }
            }
            Kind::Strs(_) => {
                let items = v.as_array()?;
                let elem = self.elem_type(kind);
                let mut out = Vec::new();
                for (i, it) in items.iter().enumerate() {
                    let p = join(path, &i.to_string());
                    if let Some(what) = collection(it) {
                        self.mismatch(&p, what, elem.clone());
                        continue;
                    }
                    // Nulls and refused items are left out of the list.
                    if let Some(s) = self.convert(it, Str, &p) {
                        out.push(s);
                    }
                }
                Some(Value::Array(out))
            }
            Labels => {
                let m = v.as_object()?;
                let mut out = Map::new();
                for (k, val) in m {
                    let c = self
                        .convert(val, Str, &join(path, k))
                        .unwrap_or(Value::String(String::new()));
                    out.insert(k.clone(), c);
                }
                Some(Value::Object(out))
            }
            Obj(fields, name) => {
                let m = v.as_object()?;
                Some(Value::Object(self.object(m, fields, name, path)))
            }
            Objs(fields, name) => {
                let items = v.as_array()?;
                let mut out = Vec::new();
                for (i, it) in items.iter().enumerate() {
                    if it.is_null() {
                        continue;
                    }
                    let p = join(path, &i.to_string());
                    self.rank.push(out.len());
                    let converted = self.convert(it, Obj(fields, name), &p);
                    self.rank.pop();
                    if let Some(mut o) = converted {
                        // Null entries are left out; later checks name the entries by their
                        // index in what is left, as Butane does.
                        let at = join(path, &out.len().to_string());
                        if let Value::Object(m) = &mut o {
                            m.insert(ORIGIN.into(), Value::String(at));
                        }
                        out.push(o);
                    }
                }
                // The unused-key check then finds a source node that is no mapping.
                for (j, it) in items.iter().enumerate().take(out.len()) {
                    if !it.is_object() {
                        let p = join(path, &j.to_string());
                        let mut rank = self.rank.clone();
                        rank.extend([j, 0]);
                        self.unused.push(Unused {
                            message: context_mismatch(&p),
                            path: p,
                            rank,
                        });
                    }
                }
                Some(Value::Array(out))
            }
        }
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        fields: &[Field],
        name: &str,
        path: &str,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        let order = go_order(name);
        for (k, val) in m {
            let p = join(path, k);
            let Some(fi) = fields
                .iter()
                .position(|f| f.yaml == k && self.minor >= f.since)
            else {
                // Unknown keys come up when the check reaches the struct, before its fields.
                let mut rank = self.rank.clone();
                rank.push(0);
                self.unused.push(Unused {
                    path: p,
                    message: format!("unused key {k}"),
                    rank,
                });
                continue;
            };
            let field = fields[fi];
            let go_index = order.iter().position(|o| *o == k).unwrap_or(fi);
            self.rank.push(go_index + 1);
            let converted = self.convert(val, field.kind, &p);
            self.rank.pop();
            let Some(c) = converted else {
                continue;
            };
            // Sugar keeps its Butane key; the translation consumes it.
            out.insert(field.json.unwrap_or(field.yaml).to_string(), c);
        }
        if let Some(merge) = m.get("<<") {
            self.merge_keys(m, merge, fields, path, &mut out);
        }
        out
    }

    /// YAML's merge key (`<<: *base`, or a list of them), as yaml.v3 applies it to a struct:
    /// after the mapping's own keys, each merged mapping sets the fields nothing set before.
    fn merge_keys(
        &mut self,
        own: &Map<String, Value>,
        merge: &Value,
        fields: &[Field],
        path: &str,
        out: &mut Map<String, Value>,
    ) {
        let maps: Vec<&Map<String, Value>> = match merge {
            Value::Object(m) => vec![m],
            Value::Array(items) if items.iter().all(Value::is_object) => {
                items.iter().filter_map(Value::as_object).collect()
            }
            _ => {
                self.fatal.get_or_insert_with(|| {
                    "map merge requires map or sequence of maps as the value".into()
                });
                return;
            }
        };
        let mut set: std::collections::HashSet<String> = own.keys().cloned().collect();
        for m in maps {
            for (k, val) in m {
                if !set.insert(k.clone()) {
                    continue;
                }
                let Some(field) = fields.iter().find(|f| f.yaml == k && self.minor >= f.since)
                else {
                    continue;
                };
                if let Some(c) = self.convert(val, field.kind, &join(path, k)) {
                    out.insert(field.json.unwrap_or(field.yaml).to_string(), c);
                }
            }
        }
    }
}
