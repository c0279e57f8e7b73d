//! The spec 2.2 config types: field names (JSON tags), Go field names and Go kinds, in Go
//! declaration order (embedded structs flattened, as upstream's validator walks them).

/// A Go type in the 2.2 schema.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// `string`.
    Str,
    /// `int`.
    Int,
    /// `bool`.
    Bool,
    /// `*string`.
    PStr,
    /// `*int`.
    PInt,
    /// `*bool`.
    PBool,
    /// A struct value.
    Obj(&'static Struct),
    /// A pointer to a struct.
    PObj(&'static Struct),
    /// A slice of strings (named string types included).
    StrList,
    /// A slice of structs.
    ObjList(&'static Struct),
}

/// A Go struct of the 2.2 schema.
#[derive(Debug)]
pub struct Struct {
    /// Go type name (selects the validation rules).
    pub name: &'static str,
    /// Fields: (JSON tag, Go field name, type).
    pub fields: &'static [(&'static str, &'static str, Ty)],
}

macro_rules! st {
    ($id:ident, $name:literal, [$(($tag:literal, $go:literal, $ty:expr)),* $(,)?]) => {
        /// Schema of the Go struct of that name.
        pub static $id: Struct = Struct { name: $name, fields: &[$(($tag, $go, $ty)),*] };
    };
}

use Ty::*;

st!(
    CONFIG,
    "Config",
    [
        ("ignition", "Ignition", Obj(&IGNITION)),
        ("networkd", "Networkd", Obj(&NETWORKD)),
        ("passwd", "Passwd", Obj(&PASSWD)),
        ("storage", "Storage", Obj(&STORAGE)),
        ("systemd", "Systemd", Obj(&SYSTEMD)),
    ]
);
st!(
    IGNITION,
    "Ignition",
    [
        ("config", "Config", Obj(&IGNITION_CONFIG)),
        ("security", "Security", Obj(&SECURITY)),
        ("timeouts", "Timeouts", Obj(&TIMEOUTS)),
        ("version", "Version", Str),
    ]
);
st!(
    IGNITION_CONFIG,
    "IgnitionConfig",
    [
        ("append", "Append", ObjList(&CONFIG_REFERENCE)),
        ("replace", "Replace", PObj(&CONFIG_REFERENCE)),
    ]
);
st!(
    CONFIG_REFERENCE,
    "ConfigReference",
    [
        ("source", "Source", Str),
        ("verification", "Verification", Obj(&VERIFICATION)),
    ]
);
st!(
    CA_REFERENCE,
    "CaReference",
    [
        ("source", "Source", Str),
        ("verification", "Verification", Obj(&VERIFICATION)),
    ]
);
st!(VERIFICATION, "Verification", [("hash", "Hash", PStr)]);
st!(SECURITY, "Security", [("tls", "TLS", Obj(&TLS))]);
st!(
    TLS,
    "TLS",
    [(
        "certificateAuthorities",
        "CertificateAuthorities",
        ObjList(&CA_REFERENCE)
    )]
);
st!(
    TIMEOUTS,
    "Timeouts",
    [
        ("httpResponseHeaders", "HTTPResponseHeaders", PInt),
        ("httpTotal", "HTTPTotal", PInt),
    ]
);
st!(
    NETWORKD,
    "Networkd",
    [("units", "Units", ObjList(&NETWORKD_UNIT))]
);
st!(
    NETWORKD_UNIT,
    "Networkdunit",
    [
        ("contents", "Contents", Str),
        ("dropins", "Dropins", ObjList(&NETWORKD_DROPIN)),
        ("name", "Name", Str),
    ]
);
st!(
    NETWORKD_DROPIN,
    "NetworkdDropin",
    [("contents", "Contents", Str), ("name", "Name", Str),]
);
st!(
    PASSWD,
    "Passwd",
    [
        ("groups", "Groups", ObjList(&PASSWD_GROUP)),
        ("users", "Users", ObjList(&PASSWD_USER)),
    ]
);
st!(
    PASSWD_GROUP,
    "PasswdGroup",
    [
        ("gid", "Gid", PInt),
        ("name", "Name", Str),
        ("passwordHash", "PasswordHash", Str),
        ("system", "System", Bool),
    ]
);
st!(
    PASSWD_USER,
    "PasswdUser",
    [
        ("create", "Create", PObj(&USERCREATE)),
        ("gecos", "Gecos", Str),
        ("groups", "Groups", StrList),
        ("homeDir", "HomeDir", Str),
        ("name", "Name", Str),
        ("noCreateHome", "NoCreateHome", Bool),
        ("noLogInit", "NoLogInit", Bool),
        ("noUserGroup", "NoUserGroup", Bool),
        ("passwordHash", "PasswordHash", PStr),
        ("primaryGroup", "PrimaryGroup", Str),
        ("sshAuthorizedKeys", "SSHAuthorizedKeys", StrList),
        ("shell", "Shell", Str),
        ("system", "System", Bool),
        ("uid", "UID", PInt),
    ]
);
st!(
    USERCREATE,
    "Usercreate",
    [
        ("gecos", "Gecos", Str),
        ("groups", "Groups", StrList),
        ("homeDir", "HomeDir", Str),
        ("noCreateHome", "NoCreateHome", Bool),
        ("noLogInit", "NoLogInit", Bool),
        ("noUserGroup", "NoUserGroup", Bool),
        ("primaryGroup", "PrimaryGroup", Str),
        ("shell", "Shell", Str),
        ("system", "System", Bool),
        ("uid", "UID", PInt),
    ]
);
st!(
    STORAGE,
    "Storage",
    [
        ("directories", "Directories", ObjList(&DIRECTORY)),
        ("disks", "Disks", ObjList(&DISK)),
        ("files", "Files", ObjList(&FILE)),
        ("filesystems", "Filesystems", ObjList(&FILESYSTEM)),
        ("links", "Links", ObjList(&LINK)),
        ("raid", "Raid", ObjList(&RAID)),
    ]
);
st!(
    DIRECTORY,
    "Directory",
    [
        ("filesystem", "Filesystem", Str),
        ("group", "Group", PObj(&NODE_GROUP)),
        ("overwrite", "Overwrite", PBool),
        ("path", "Path", Str),
        ("user", "User", PObj(&NODE_USER)),
        ("mode", "Mode", PInt),
    ]
);
st!(
    FILE,
    "File",
    [
        ("filesystem", "Filesystem", Str),
        ("group", "Group", PObj(&NODE_GROUP)),
        ("overwrite", "Overwrite", PBool),
        ("path", "Path", Str),
        ("user", "User", PObj(&NODE_USER)),
        ("append", "Append", Bool),
        ("contents", "Contents", Obj(&FILE_CONTENTS)),
        ("mode", "Mode", PInt),
    ]
);
st!(
    LINK,
    "Link",
    [
        ("filesystem", "Filesystem", Str),
        ("group", "Group", PObj(&NODE_GROUP)),
        ("overwrite", "Overwrite", PBool),
        ("path", "Path", Str),
        ("user", "User", PObj(&NODE_USER)),
        ("hard", "Hard", Bool),
        ("target", "Target", Str),
    ]
);
st!(
    NODE_USER,
    "NodeUser",
    [("id", "ID", PInt), ("name", "Name", Str)]
);
st!(
    NODE_GROUP,
    "NodeGroup",
    [("id", "ID", PInt), ("name", "Name", Str)]
);
st!(
    FILE_CONTENTS,
    "FileContents",
    [
        ("compression", "Compression", Str),
        ("source", "Source", Str),
        ("verification", "Verification", Obj(&VERIFICATION)),
    ]
);
st!(
    DISK,
    "Disk",
    [
        ("device", "Device", Str),
        ("partitions", "Partitions", ObjList(&PARTITION)),
        ("wipeTable", "WipeTable", Bool),
    ]
);
st!(
    PARTITION,
    "Partition",
    [
        ("guid", "GUID", Str),
        ("label", "Label", Str),
        ("number", "Number", Int),
        ("size", "Size", Int),
        ("start", "Start", Int),
        ("typeGuid", "TypeGUID", Str),
    ]
);
st!(
    FILESYSTEM,
    "Filesystem",
    [
        ("mount", "Mount", PObj(&MOUNT)),
        ("name", "Name", Str),
        ("path", "Path", PStr),
    ]
);
st!(
    MOUNT,
    "Mount",
    [
        ("create", "Create", PObj(&CREATE)),
        ("device", "Device", Str),
        ("format", "Format", Str),
        ("label", "Label", PStr),
        ("options", "Options", StrList),
        ("uuid", "UUID", PStr),
        ("wipeFilesystem", "WipeFilesystem", Bool),
    ]
);
st!(
    CREATE,
    "Create",
    [("force", "Force", Bool), ("options", "Options", StrList)]
);
st!(
    RAID,
    "Raid",
    [
        ("devices", "Devices", StrList),
        ("level", "Level", Str),
        ("name", "Name", Str),
        ("options", "Options", StrList),
        ("spares", "Spares", Int),
    ]
);
st!(SYSTEMD, "Systemd", [("units", "Units", ObjList(&UNIT))]);
st!(
    UNIT,
    "Unit",
    [
        ("contents", "Contents", Str),
        ("dropins", "Dropins", ObjList(&SYSTEMD_DROPIN)),
        ("enable", "Enable", Bool),
        ("enabled", "Enabled", PBool),
        ("mask", "Mask", Bool),
        ("name", "Name", Str),
    ]
);
st!(
    SYSTEMD_DROPIN,
    "SystemdDropin",
    [("contents", "Contents", Str), ("name", "Name", Str),]
);
