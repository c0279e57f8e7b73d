//! The fields of an `openshift` config, their Ignition names and types, and the conversion of
//! parsed YAML into Ignition's JSON shape (snake_case to camelCase, unknown keys reported).

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
    /// A list of strings.
    Strs,
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

use Kind::{Bool, Int, Labels, Obj, Objs, Str, Strs};

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
    f("devices", "devices", Strs),
    f("spares", "spares", Int),
    f("options", "options", Strs),
];
const FILESYSTEM: &[Field] = &[
    f("device", "device", Str),
    f("format", "format", Str),
    f("path", "path", Str),
    f("wipe_filesystem", "wipeFilesystem", Bool),
    f("label", "label", Str),
    f("uuid", "uuid", Str),
    f("options", "options", Strs),
    f("mount_options", "mountOptions", Strs),
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
    f("options", "options", Strs),
    since(14, f("open_options", "openOptions", Strs)),
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
    f("ssh_authorized_keys", "sshAuthorizedKeys", Strs),
    since(14, sugar("ssh_authorized_keys_local", Strs)),
    f("uid", "uid", Int),
    f("gecos", "gecos", Str),
    f("home_dir", "homeDir", Str),
    f("no_create_home", "noCreateHome", Bool),
    f("primary_group", "primaryGroup", Str),
    f("groups", "groups", Strs),
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
    f("should_exist", "shouldExist", Strs),
    f("should_not_exist", "shouldNotExist", Strs),
];
const CONFIG_REF: &[Field] = &[
    f("merge", "merge", Objs(RESOURCE, "Resource")),
    f("replace", "replace", Obj(RESOURCE, "Resource")),
];
const PROXY: &[Field] = &[
    f("http_proxy", "httpProxy", Str),
    f("https_proxy", "httpsProxy", Str),
    f("no_proxy", "noProxy", Strs),
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
const MIRROR: &[Field] = &[f("devices", "devices", Strs)];
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
    f("kernel_arguments", "kernelArguments", Strs),
    f("extensions", "extensions", Strs),
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

/// Types from the openshift package rather than the base schema.
fn go_package(name: &str, base: &str, variant: &str) -> String {
    match name {
        "Metadata" | "OpenShift" => variant.to_string(),
        "BootDevice" | "BootDeviceLuks" | "BootDeviceMirror" | "Grub" | "GrubUser" => {
            "fcos".to_string()
        }
        _ => base.to_string(),
    }
}

/// The Go packages the type errors name.
pub struct GoNames<'a> {
    /// The base schema package (`v0_3`).
    pub base: &'a str,
    /// The openshift package (`v4_9`).
    pub variant: &'a str,
}

/// A key no field takes: its path (`$.metadata.annotations`) and the key.
pub struct Unused {
    /// The Butane path.
    pub path: String,
    /// The key.
    pub key: String,
}

/// A value of the wrong type: its path and yaml.v3's wording after `line N: `.
pub struct TypeMismatch {
    /// The Butane path.
    pub path: String,
    /// `cannot unmarshal !!map into []v0_3.PasswdUser`.
    pub message: String,
}

/// Conversion state.
pub struct Converter<'a> {
    /// Go names for messages.
    pub names: GoNames<'a>,
    /// The spec's minor version: fields of later specs are unknown keys.
    pub minor: u8,
    /// Unknown keys found, in order.
    pub unused: Vec<Unused>,
    /// Type errors found, in order.
    pub mismatches: Vec<TypeMismatch>,
}

fn tag_of(v: &Value) -> String {
    let scalar = |tag: &str, text: String| {
        if text.chars().count() > 10 {
            let head: String = text.chars().take(7).collect();
            format!("{tag} `{head}...`")
        } else {
            format!("{tag} `{text}`")
        }
    };
    match v {
        Value::Object(_) => "!!map".into(),
        Value::Array(_) => "!!seq".into(),
        Value::String(s) => scalar("!!str", s.clone()),
        Value::Bool(b) => scalar("!!bool", b.to_string()),
        Value::Number(n) if n.is_f64() => scalar("!!float", n.to_string()),
        Value::Number(n) => scalar("!!int", n.to_string()),
        Value::Null => "!!null".into(),
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` on a plain scalar, as yaml.v3 resolves integers.
pub fn go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let body = body.replace('_', "");
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(o) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
        i64::from_str_radix(o, 8).ok()?
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

fn join(path: &str, seg: &str) -> String {
    format!("{path}.{seg}")
}

impl Converter<'_> {
    fn go_type(&self, kind: Kind) -> String {
        match kind {
            Str => "string".into(),
            Int => "int".into(),
            Bool => "bool".into(),
            Strs => "[]string".into(),
            Labels => "map[string]string".into(),
            Obj(_, n) => format!("{}.{n}", go_package(n, self.names.base, self.names.variant)),
            Objs(_, n) => format!(
                "[]{}.{n}",
                go_package(n, self.names.base, self.names.variant)
            ),
        }
    }

    fn mismatch(&mut self, path: &str, v: &Value, kind: Kind) {
        let message = format!("cannot unmarshal {} into {}", tag_of(v), self.go_type(kind));
        self.mismatches.push(TypeMismatch {
            path: path.to_string(),
            message,
        });
    }

    /// `v` converted to `kind`'s Ignition shape; `None` for null or a type error.
    pub fn convert(&mut self, v: &Value, kind: Kind, path: &str) -> Option<Value> {
        if v.is_null() {
            return None;
        }
        match kind {
            Str => match v {
                Value::String(_) => Some(v.clone()),
                Value::Bool(b) => Some(Value::String(b.to_string())),
                Value::Number(n) => Some(Value::String(n.to_string())),
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Int => match v {
                Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.clone()),
                Value::String(s)
                    if s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') =>
                {
                    match go_int(s) {
                        Some(i) => Some(Value::from(i)),
                        None => {
                            self.mismatch(path, v, kind);
                            None
                        }
                    }
                }
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Bool => match v {
                Value::Bool(_) => Some(v.clone()),
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Strs => match v {
                Value::Array(items) => {
                    let out = items
                        .iter()
                        .enumerate()
                        .map(|(i, it)| {
                            self.convert(it, Str, &join(path, &i.to_string()))
                                .unwrap_or(Value::Null)
                        })
                        .collect();
                    Some(Value::Array(out))
                }
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Labels => match v {
                Value::Object(m) => {
                    let mut out = Map::new();
                    for (k, val) in m {
                        let c = self
                            .convert(val, Str, &join(path, k))
                            .unwrap_or(Value::String(String::new()));
                        out.insert(k.clone(), c);
                    }
                    Some(Value::Object(out))
                }
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Obj(fields, _) => match v {
                Value::Object(m) => Some(Value::Object(self.object(m, fields, path))),
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
            Objs(fields, name) => match v {
                Value::Array(items) => {
                    let out = items
                        .iter()
                        .enumerate()
                        .map(|(i, it)| {
                            self.convert(it, Obj(fields, name), &join(path, &i.to_string()))
                                .unwrap_or(Value::Object(Map::new()))
                        })
                        .collect();
                    Some(Value::Array(out))
                }
                _ => {
                    self.mismatch(path, v, kind);
                    None
                }
            },
        }
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        fields: &[Field],
        path: &str,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, val) in m {
            let p = join(path, k);
            let Some(field) = fields.iter().find(|f| f.yaml == k && self.minor >= f.since) else {
                self.unused.push(Unused {
                    path: p,
                    key: k.clone(),
                });
                continue;
            };
            let Some(c) = self.convert(val, field.kind, &p) else {
                continue;
            };
            // Sugar keeps its Butane key; the translation consumes it.
            out.insert(field.json.unwrap_or(field.yaml).to_string(), c);
        }
        out
    }
}
