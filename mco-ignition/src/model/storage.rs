//! The `storage` section: files, directories, links, disks, RAID, filesystems and LUKS.

use serde::{Deserialize, Serialize};

use super::is_default;
use super::resource::Resource;

/// The `storage` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Storage {
    /// Directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<Directory>,
    /// Disks and their partitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<Disk>,
    /// Files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<File>,
    /// Filesystems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filesystems: Vec<Filesystem>,
    /// Links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// LUKS volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub luks: Vec<Luks>,
    /// Software RAID arrays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raid: Vec<Raid>,
}

/// Owner of a node, by id or name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeOwner {
    /// Numeric id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A regular file (node fields inline).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct File {
    /// Owning group.
    #[serde(default, skip_serializing_if = "is_default")]
    pub group: NodeOwner,
    /// Replace an existing node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    #[serde(default)]
    pub path: String,
    /// Owning user.
    #[serde(default, skip_serializing_if = "is_default")]
    pub user: NodeOwner,
    /// Fragments appended to the file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append: Vec<Resource>,
    /// File contents.
    #[serde(default, skip_serializing_if = "is_default")]
    pub contents: Resource,
    /// Permission bits (decimal in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<i64>,
}

/// A directory (node fields inline).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Directory {
    /// Owning group.
    #[serde(default, skip_serializing_if = "is_default")]
    pub group: NodeOwner,
    /// Replace an existing node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    #[serde(default)]
    pub path: String,
    /// Owning user.
    #[serde(default, skip_serializing_if = "is_default")]
    pub user: NodeOwner,
    /// Permission bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<i64>,
}

/// A symbolic or hard link (node fields inline).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Link {
    /// Owning group.
    #[serde(default, skip_serializing_if = "is_default")]
    pub group: NodeOwner,
    /// Replace an existing node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// Absolute path.
    #[serde(default)]
    pub path: String,
    /// Owning user.
    #[serde(default, skip_serializing_if = "is_default")]
    pub user: NodeOwner,
    /// Hard link instead of symbolic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard: Option<bool>,
    /// Link target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A disk to partition.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    /// Device path.
    #[serde(default)]
    pub device: String,
    /// Partitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<Partition>,
    /// Wipe the partition table first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe_table: Option<bool>,
}

/// A GPT partition.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Partition {
    /// Partition GUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
    /// Partition label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Partition number (0: next free).
    #[serde(default, skip_serializing_if = "is_default")]
    pub number: i64,
    /// Allow resizing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resize: Option<bool>,
    /// Whether the partition should exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_exist: Option<bool>,
    /// Size in MiB.
    #[serde(default, rename = "sizeMiB", skip_serializing_if = "Option::is_none")]
    pub size_mib: Option<i64>,
    /// Start in MiB.
    #[serde(default, rename = "startMiB", skip_serializing_if = "Option::is_none")]
    pub start_mib: Option<i64>,
    /// Partition type GUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_guid: Option<String>,
    /// Wipe the partition entry when it does not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe_partition_entry: Option<bool>,
}

/// A software RAID array.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Raid {
    /// Member devices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// RAID level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Array name.
    #[serde(default)]
    pub name: String,
    /// Extra mdadm options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Number of spares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spares: Option<i64>,
}

/// A filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filesystem {
    /// Device path.
    #[serde(default)]
    pub device: String,
    /// Filesystem type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Filesystem label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Mount options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mount_options: Vec<String>,
    /// mkfs options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Mount point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Filesystem UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Wipe an existing filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe_filesystem: Option<bool>,
}

/// A LUKS volume.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Luks {
    /// IBM CEX binding.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cex: Cex,
    /// Clevis binding.
    #[serde(default, skip_serializing_if = "is_default")]
    pub clevis: Clevis,
    /// Underlying device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Allow discards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<bool>,
    /// Key file.
    #[serde(default, skip_serializing_if = "is_default")]
    pub key_file: Resource,
    /// LUKS label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Mapper name.
    #[serde(default)]
    pub name: String,
    /// Options for opening.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_options: Vec<String>,
    /// Options for cryptsetup luksFormat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// LUKS UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Wipe an existing volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe_volume: Option<bool>,
}

/// IBM CEX binding of a LUKS volume.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cex {
    /// Enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// Clevis binding of a LUKS volume.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Clevis {
    /// Custom pin.
    #[serde(default, skip_serializing_if = "is_default")]
    pub custom: ClevisCustom,
    /// Tang servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tang: Vec<Tang>,
    /// Shamir threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// Bind to the TPM2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm2: Option<bool>,
}

/// Custom clevis pin.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClevisCustom {
    /// Pin configuration (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// Whether the pin needs networking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_network: Option<bool>,
    /// Pin name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

/// A Tang server.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tang {
    /// Pre-fetched advertisement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertisement: Option<String>,
    /// Key thumbprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbprint: Option<String>,
    /// Server URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}
