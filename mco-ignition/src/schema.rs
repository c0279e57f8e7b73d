//! The shape of spec 3.0-3.5 configs, as data.
//!
//! One description covers every 3.x minor version: each field carries the range of minors that
//! know it and how it is represented (a Go pointer is present only when set; a plain string is
//! always present). Parsing, validation traversal, merging and emission all walk this description,
//! so a field is declared once. Fields are listed in upstream's struct order, which is the order
//! validation reports follow.

/// What a value holds.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A JSON string.
    Str,
    /// A JSON integer (Go `int`: a float is a type error).
    Int,
    /// A JSON boolean.
    Bool,
    /// A nested object.
    Obj(&'static Obj),
    /// A list of objects.
    ObjList(&'static Obj),
    /// A list of strings.
    StrList(StrListRule),
}

/// How a list of strings merges and checks for duplicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrListRule {
    /// Keyed by value: merging keeps one of each, duplicates are errors.
    ByValue,
    /// Concatenated when merging; duplicates allowed.
    Concat,
}

/// How a field is represented when set or unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A Go pointer or list: present only when set.
    Optional,
    /// A plain Go value without omitempty: always present, zero when unset.
    Required,
    /// A plain Go value with omitempty: present only when not zero.
    OmitZero,
}

/// One field of an object.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The JSON name.
    pub name: &'static str,
    /// The value's kind.
    pub kind: Kind,
    /// How the field is represented.
    pub presence: Presence,
    /// First 3.x minor version with this field.
    pub since: u64,
    /// Last 3.x minor version with this field (inclusive).
    pub until: u64,
}

/// How entries of a list of objects are identified, for merging and duplicate checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRule {
    /// Not a list element, or a list without keys.
    None,
    /// The string value of one field.
    Field(&'static str),
    /// Partitions: the number when non-zero, else the label.
    Partition,
}

/// An object type.
#[derive(Debug)]
pub struct Obj {
    /// The upstream type name, for messages.
    pub name: &'static str,
    /// Its fields in upstream's struct order.
    pub fields: &'static [Field],
    /// The key of list entries of this type.
    pub key: KeyRule,
    /// Sibling lists sharing one key space (storage files, directories and links).
    pub shared_keys: &'static [&'static str],
    /// Lists of this object that are neither merged by key nor checked for duplicates.
    pub no_dups: &'static [&'static str],
}

impl Obj {
    /// The fields known to a 3.x minor version.
    pub fn fields_for(&'static self, minor: u64) -> impl Iterator<Item = &'static Field> {
        self.fields
            .iter()
            .filter(move |f| f.since <= minor && minor <= f.until)
    }

    /// The field of this name known to a minor version.
    pub fn field(&'static self, name: &str, minor: u64) -> Option<&'static Field> {
        self.fields_for(minor)
            .find(|f| crate::small_map::key_eq(f.name, name))
    }
}

const MAX: u64 = 5;

const fn f(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        presence: Presence::Optional,
        since: 0,
        until: MAX,
    }
}

const fn req(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        presence: Presence::Required,
        since: 0,
        until: MAX,
    }
}

const fn omitzero(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        presence: Presence::OmitZero,
        since: 0,
        until: MAX,
    }
}

const fn since(mut field: Field, minor: u64) -> Field {
    field.since = minor;
    field
}

const fn until(mut field: Field, minor: u64) -> Field {
    field.until = minor;
    field
}

const fn obj(name: &'static str, fields: &'static [Field]) -> Obj {
    Obj {
        name,
        fields,
        key: KeyRule::None,
        shared_keys: &[],
        no_dups: &[],
    }
}

const fn keyed(name: &'static str, key: &'static str, fields: &'static [Field]) -> Obj {
    Obj {
        name,
        fields,
        key: KeyRule::Field(key),
        shared_keys: &[],
        no_dups: &[],
    }
}

use Kind::{Bool, Int, Obj as O, ObjList as L, Str};

const SV: Kind = Kind::StrList(StrListRule::ByValue);
const SC: Kind = Kind::StrList(StrListRule::Concat);

/// `verification`.
pub static VERIFICATION: Obj = obj("Verification", &[f("hash", Str)]);
/// `httpHeaders` entries.
pub static HTTP_HEADER: Obj = keyed("HTTPHeader", "name", &[req("name", Str), f("value", Str)]);
/// A resource (3.1+), or a 3.0 file contents / config reference.
pub static RESOURCE: Obj = keyed(
    "Resource",
    "source",
    &[
        f("compression", Str),
        since(f("httpHeaders", L(&HTTP_HEADER)), 1),
        f("source", Str),
        f("verification", O(&VERIFICATION)),
    ],
);
/// `ignition.config`.
pub static IGNITION_CONFIG: Obj = obj(
    "IgnitionConfig",
    &[f("merge", L(&RESOURCE)), f("replace", O(&RESOURCE))],
);
/// `ignition.proxy`.
pub static PROXY: Obj = obj(
    "Proxy",
    &[f("httpProxy", Str), f("httpsProxy", Str), f("noProxy", SV)],
);
/// `ignition.security.tls`.
pub static TLS: Obj = obj("TLS", &[f("certificateAuthorities", L(&RESOURCE))]);
/// `ignition.security`.
pub static SECURITY: Obj = obj("Security", &[f("tls", O(&TLS))]);
/// `ignition.timeouts`.
pub static TIMEOUTS: Obj = obj(
    "Timeouts",
    &[f("httpResponseHeaders", Int), f("httpTotal", Int)],
);
/// `ignition`.
pub static IGNITION: Obj = obj(
    "Ignition",
    &[
        f("config", O(&IGNITION_CONFIG)),
        since(f("proxy", O(&PROXY)), 1),
        f("security", O(&SECURITY)),
        f("timeouts", O(&TIMEOUTS)),
        req("version", Str),
    ],
);
/// `kernelArguments` (3.3+); both lists share one key space.
pub static KERNEL_ARGUMENTS: Obj = Obj {
    name: "KernelArguments",
    fields: &[f("shouldExist", SV), f("shouldNotExist", SV)],
    key: KeyRule::None,
    shared_keys: &["shouldExist", "shouldNotExist"],
    no_dups: &[],
};
/// `passwd.groups` entries.
pub static PASSWD_GROUP: Obj = keyed(
    "PasswdGroup",
    "name",
    &[
        f("gid", Int),
        req("name", Str),
        f("passwordHash", Str),
        since(f("shouldExist", Bool), 2),
        f("system", Bool),
    ],
);
/// `passwd.users` entries.
pub static PASSWD_USER: Obj = keyed(
    "PasswdUser",
    "name",
    &[
        f("gecos", Str),
        f("groups", SV),
        f("homeDir", Str),
        req("name", Str),
        f("noCreateHome", Bool),
        f("noLogInit", Bool),
        f("noUserGroup", Bool),
        f("passwordHash", Str),
        f("primaryGroup", Str),
        f("sshAuthorizedKeys", SV),
        f("shell", Str),
        since(f("shouldExist", Bool), 2),
        f("system", Bool),
        f("uid", Int),
    ],
);
/// `passwd`.
pub static PASSWD: Obj = obj(
    "Passwd",
    &[f("groups", L(&PASSWD_GROUP)), f("users", L(&PASSWD_USER))],
);
/// A node's `user` or `group`.
pub static NODE_OWNER: Obj = obj("NodeOwner", &[f("id", Int), f("name", Str)]);
/// `storage.directories` entries.
pub static DIRECTORY: Obj = keyed(
    "Directory",
    "path",
    &[
        f("group", O(&NODE_OWNER)),
        f("overwrite", Bool),
        req("path", Str),
        f("user", O(&NODE_OWNER)),
        f("mode", Int),
    ],
);
/// `storage.files` entries.
pub static FILE: Obj = Obj {
    name: "File",
    fields: &[
        f("group", O(&NODE_OWNER)),
        f("overwrite", Bool),
        req("path", Str),
        f("user", O(&NODE_OWNER)),
        f("append", L(&RESOURCE)),
        f("contents", O(&RESOURCE)),
        f("mode", Int),
    ],
    key: KeyRule::Field("path"),
    shared_keys: &[],
    no_dups: &["append"],
};
/// `storage.links` entries.
pub static LINK: Obj = keyed(
    "Link",
    "path",
    &[
        f("group", O(&NODE_OWNER)),
        f("overwrite", Bool),
        req("path", Str),
        f("user", O(&NODE_OWNER)),
        f("hard", Bool),
        until(req("target", Str), 2),
        since(f("target", Str), 3),
    ],
);
/// `storage.disks[].partitions` entries.
pub static PARTITION: Obj = Obj {
    name: "Partition",
    fields: &[
        f("guid", Str),
        f("label", Str),
        omitzero("number", Int),
        since(f("resize", Bool), 2),
        f("shouldExist", Bool),
        f("sizeMiB", Int),
        f("startMiB", Int),
        f("typeGuid", Str),
        f("wipePartitionEntry", Bool),
    ],
    key: KeyRule::Partition,
    shared_keys: &[],
    no_dups: &[],
};
/// `storage.disks` entries.
pub static DISK: Obj = keyed(
    "Disk",
    "device",
    &[
        req("device", Str),
        f("partitions", L(&PARTITION)),
        f("wipeTable", Bool),
    ],
);
/// `storage.filesystems` entries.
pub static FILESYSTEM: Obj = keyed(
    "Filesystem",
    "device",
    &[
        req("device", Str),
        f("format", Str),
        f("label", Str),
        since(f("mountOptions", SC), 1),
        f("options", SC),
        f("path", Str),
        f("uuid", Str),
        f("wipeFilesystem", Bool),
    ],
);
/// `clevis.custom`.
pub static CLEVIS_CUSTOM: Obj = obj(
    "ClevisCustom",
    &[
        until(req("config", Str), 2),
        since(f("config", Str), 3),
        f("needsNetwork", Bool),
        until(req("pin", Str), 2),
        since(f("pin", Str), 3),
    ],
);
/// `clevis.tang` entries.
pub static TANG: Obj = keyed(
    "Tang",
    "url",
    &[
        since(f("advertisement", Str), 4),
        f("thumbprint", Str),
        omitzero("url", Str),
    ],
);
/// `luks[].clevis`.
pub static CLEVIS: Obj = obj(
    "Clevis",
    &[
        f("custom", O(&CLEVIS_CUSTOM)),
        f("tang", L(&TANG)),
        f("threshold", Int),
        f("tpm2", Bool),
    ],
);
/// `luks[].cex` (3.5).
pub static CEX: Obj = obj("Cex", &[f("enabled", Bool)]);
/// `storage.luks` entries (3.2+).
pub static LUKS: Obj = keyed(
    "Luks",
    "name",
    &[
        since(f("cex", O(&CEX)), 5),
        f("clevis", O(&CLEVIS)),
        f("device", Str),
        since(f("discard", Bool), 4),
        f("keyFile", O(&RESOURCE)),
        f("label", Str),
        req("name", Str),
        since(f("openOptions", SC), 4),
        f("options", SC),
        f("uuid", Str),
        f("wipeVolume", Bool),
    ],
);
/// `storage.raid` entries.
pub static RAID: Obj = keyed(
    "Raid",
    "name",
    &[
        f("devices", SV),
        until(req("level", Str), 2),
        since(f("level", Str), 3),
        req("name", Str),
        f("options", SC),
        f("spares", Int),
    ],
);
/// `storage`.
pub static STORAGE: Obj = Obj {
    name: "Storage",
    fields: &[
        f("directories", L(&DIRECTORY)),
        f("disks", L(&DISK)),
        f("files", L(&FILE)),
        f("filesystems", L(&FILESYSTEM)),
        f("links", L(&LINK)),
        since(f("luks", L(&LUKS)), 2),
        f("raid", L(&RAID)),
    ],
    key: KeyRule::None,
    shared_keys: &["directories", "files", "links"],
    no_dups: &[],
};
/// `systemd.units[].dropins` entries.
pub static DROPIN: Obj = keyed("Dropin", "name", &[f("contents", Str), req("name", Str)]);
/// `systemd.units` entries.
pub static UNIT: Obj = keyed(
    "Unit",
    "name",
    &[
        f("contents", Str),
        f("dropins", L(&DROPIN)),
        f("enabled", Bool),
        f("mask", Bool),
        req("name", Str),
    ],
);
/// `systemd`.
pub static SYSTEMD: Obj = obj("Systemd", &[f("units", L(&UNIT))]);
/// The config root.
pub static CONFIG: Obj = obj(
    "Config",
    &[
        req("ignition", O(&IGNITION)),
        since(f("kernelArguments", O(&KERNEL_ARGUMENTS)), 3),
        f("passwd", O(&PASSWD)),
        f("storage", O(&STORAGE)),
        f("systemd", O(&SYSTEMD)),
    ],
);
