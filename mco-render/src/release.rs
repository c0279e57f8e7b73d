//! The MCO releases whose rendering is reproduced, 4.14 to 4.22, and the behaviours that
//! differ between them.
//!
//! A rendered config's name is a hash of its spec, so a cluster's names are those of its own
//! release's renderer. [`Release`] names a release (`4.16`, parsed from `4.16`, `4.16.3` or a
//! `release-image-version` such as `4.16.0-0.nightly-2024-08-01-082745`); its [`Profile`] holds,
//! each in one field named for what it is, every behaviour of rendering, serving and validation
//! that is not the same in all of them. The code that renders reads the profile; it never
//! compares release numbers itself. The newest release is the default everywhere.

use mco_ignition::SpecVersion;
use std::fmt;
use std::str::FromStr;

/// An MCO release (its minor version; the major is 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    minor: u8,
}

/// A release that is not one of [`Release::all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRelease {
    /// What was given.
    pub given: String,
    /// It names a 4.x release newer than the newest known.
    pub newer: bool,
}

impl fmt::Display for UnknownRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<String> = Release::all().map(|r| r.to_string()).collect();
        write!(
            f,
            "unknown release {:?}: the releases known are {}",
            self.given,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownRelease {}

impl Release {
    /// The oldest release reproduced.
    pub const OLDEST: Release = Release { minor: 14 };
    /// The newest release, the default.
    pub const NEWEST: Release = Release { minor: 22 };

    /// Every release reproduced, oldest first.
    pub fn all() -> impl Iterator<Item = Release> {
        (Release::OLDEST.minor..=Release::NEWEST.minor).map(|minor| Release { minor })
    }

    /// `4.<minor>`, when that release is reproduced.
    pub fn of_minor(minor: u8) -> Option<Release> {
        let r = Release { minor };
        (Release::OLDEST..=Release::NEWEST)
            .contains(&r)
            .then_some(r)
    }

    /// The minor version.
    pub fn minor(self) -> u8 {
        self.minor
    }

    /// The release of a version as clusters write it: `4.16`, `4.16.3`, `v4.16.3`,
    /// `4.16.0-0.nightly-2024-08-01-082745`, `4.16.0-ec.2`.
    pub fn parse(s: &str) -> Result<Release, UnknownRelease> {
        let unknown = || UnknownRelease {
            given: s.to_string(),
            newer: false,
        };
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let core = t.split(['-', '+']).next().unwrap_or("");
        let mut parts = core.split('.');
        let (Some("4"), Some(minor)) = (parts.next(), parts.next()) else {
            return Err(unknown());
        };
        if parts
            .clone()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(unknown());
        }
        let minor: u8 = minor.parse().map_err(|_| unknown())?;
        Release::of_minor(minor).ok_or_else(|| UnknownRelease {
            newer: minor > Release::NEWEST.minor,
            ..unknown()
        })
    }

    /// The release a cluster's version names, as the controller and the server follow it: a
    /// known one, the newest for one newer than known; `None` for an older unknown one or what
    /// names no release.
    pub fn named(version: &str) -> Option<Release> {
        match Release::parse(version) {
            Ok(r) => Some(r),
            Err(e) if e.newer => Some(Release::NEWEST),
            Err(_) => None,
        }
    }

    /// What this release does where releases differ.
    pub fn profile(self) -> Profile {
        let m = self.minor;
        Profile {
            release: self,
            rendered_ignition: if m >= 19 {
                SpecVersion::V3_5
            } else {
                SpecVersion::V3_4
            },
            supported_versions: if m >= 20 {
                "2.2,3.0,3.1,3.2,3.3,3.4,3.5"
            } else if m == 19 {
                "2.2, 3.0, 3.1, 3.2, 3.3, 3.4, 3.5"
            } else {
                "2.2, 3.0, 3.1, 3.2, 3.3, 3.4"
            },
            merge_order: if m >= 15 {
                MergeOrder::WorkerFirst
            } else {
                MergeOrder::Name
            },
            source_order: if m >= 17 || m == 14 {
                SourceOrder::Merge
            } else {
                SourceOrder::Name
            },
            compression_merge: if m >= 20 {
                CompressionMerge::ChildWins
            } else {
                CompressionMerge::PerField
            },
            large_pages_kernel: m >= 15,
            extension_check: match m {
                ..=15 => ExtensionCheck::None,
                16 | 17 => ExtensionCheck::Always,
                _ => ExtensionCheck::WithConfig,
            },
            generated_os_image: if m >= 21 {
                GeneratedOsImage::Ignored
            } else {
                GeneratedOsImage::Honoured
            },
            size_check: m >= 22,
            message_case: if m >= 22 {
                MessageCase::Lower
            } else {
                MessageCase::Capitalised
            },
            selector_values: if m >= 21 {
                ValueStyle::Json
            } else {
                ValueStyle::GoSyntax
            },
            special_mode_bits: if m >= 22 {
                SpecialModeBits::Before36
            } else {
                SpecialModeBits::Before34
            },
            accept: match m {
                ..=19 => AcceptRule::Bands {
                    newest: if m >= 19 {
                        SpecVersion::V3_5
                    } else {
                        SpecVersion::V3_4
                    },
                },
                20 => AcceptRule::FirstDecides {
                    newer_minor_is_newest: false,
                },
                _ => AcceptRule::FirstDecides {
                    newer_minor_is_newest: true,
                },
            },
            served_conversion: match m {
                ..=18 => ServedConversion::Chain {
                    labels: StepLabels::Underscored,
                },
                19 => ServedConversion::Chain {
                    labels: StepLabels::Dotted,
                },
                _ => ServedConversion::Generic,
            },
            encapsulated_empty: if m >= 20 {
                EncapsulatedEmpty::Requested
            } else {
                EncapsulatedEmpty::ReleaseNewest
            },
            // The generated MachineConfigs: the kubelet-config and container-runtime-config
            // controllers (their Ignition version is `rendered_ignition`).
            kubelet_conf_encoding: if m >= 17 {
                KubeletConfEncoding::Yaml
            } else {
                KubeletConfEncoding::IndentedJson
            },
            kubelet_types: match m {
                ..=21 => m + 13,
                _ => 36,
            },
            kubelet_gates_excluded: if m == 14 {
                &["ExternalCloudProvider"]
            } else {
                &[]
            },
            kubelet_tls: if m >= 17 {
                KubeletTls::TemplateUnlessResource
            } else {
                KubeletTls::ResourceElseIntermediate
            },
            tls13_cipher_suites: m >= 18,
            kubelet_log_level: if m >= 22 {
                LogLevelRule::ZeroToTen
            } else {
                LogLevelRule::OneToTenPointer
            },
            static_pod_path: if m >= 22 {
                StaticPodPathRule::PerPool
            } else {
                StaticPodPathRule::Refused
            },
            swap_settings_refused: m >= 21,
            system_reserved_cgroup_rules: m >= 22,
            kubelet_conditions: if m >= 22 {
                KubeletConditions::AcceptedAndLegacy
            } else {
                KubeletConditions::SuccessOrFailure
            },
            runtime_failure_status: if m >= 22 { "True" } else { "False" },
            runtime_additional_stores: m >= 22,
            kubelet_up_to_date: match m {
                ..=19 => UpToDateRule::Generation,
                20 | 21 => UpToDateRule::GenerationAndGates { next_pool: false },
                _ => UpToDateRule::GenerationAndGates { next_pool: true },
            },
            unconfigured_pool_fails: m <= 19,
            kubelet_error_case: if m >= 22 {
                MessageCase::Lower
            } else {
                MessageCase::Capitalised
            },
            registries_auth_helper: m >= 19,
            policy_json_indented: m >= 17,
            policy_transports_always: m <= 15,
            image_policies: match m {
                ..=18 => None,
                19 | 20 => Some(false),
                _ => Some(true),
            },
            image_policies_v1alpha1: m <= 19,
            sigstore_pki_every_field: m <= 19,
            mirror_check: if m >= 16 {
                MirrorCheck::Patterns
            } else {
                MirrorCheck::NoWildcards
            },
            mirror_conflict_lists_icsp: m >= 15,
            cgroup_v2_psi: match m {
                ..=15 => Some("psi=1"),
                16..=20 => Some("psi=0"),
                _ => None,
            },
            cgroup_v1_accepted: m <= 18,
            cgroup_arbiter: m >= 19,
        }
    }
}

impl Default for Release {
    fn default() -> Self {
        Release::NEWEST
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "4.{}", self.minor)
    }
}

impl FromStr for Release {
    type Err = UnknownRelease;

    fn from_str(s: &str) -> Result<Release, UnknownRelease> {
        Release::parse(s)
    }
}

/// The behaviours that differ between releases. Built by [`Release::profile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The release.
    pub release: Release,
    /// The spec version the rendered config (and the generated MachineConfigs) is written in,
    /// which is also the newest version a MachineConfig may be written in: 3.4.0 until 4.18,
    /// 3.5.0 from 4.19.
    pub rendered_ignition: SpecVersion,
    /// The versions an "unknown version" parse error lists (from 4.20 without spaces).
    pub supported_versions: &'static str,
    /// The order MachineConfigs merge in.
    pub merge_order: MergeOrder,
    /// The order the rendered config's sources are listed in.
    pub source_order: SourceOrder,
    /// How a file's `contents.compression` merges.
    pub compression_merge: CompressionMerge,
    /// Whether `kernelType: 64k-pages` is valid (from 4.15).
    pub large_pages_kernel: bool,
    /// When `spec.extensions` is checked ([`Profile::extension_allowed`]).
    pub extension_check: ExtensionCheck,

    /// Whether a generated MachineConfig may set the OS images.
    pub generated_os_image: GeneratedOsImage,
    /// Whether a rendered config larger than etcd's request limit fails the render (4.22).
    pub size_check: bool,
    /// How the render's messages begin (`Ignoring MC …` until 4.21, `ignoring MC …` after).
    pub message_case: MessageCase,
    /// How an invalid selector's values print in its error.
    pub selector_values: ValueStyle,
    /// Which configs get the warning on setuid, setgid and sticky mode bits, and its words.
    pub special_mode_bits: SpecialModeBits,
    /// How the machine-config-server picks the spec version an `Accept` header asks for.
    pub accept: AcceptRule,
    /// How the machine-config-server converts a rendered config to an older spec version.
    pub served_conversion: ServedConversion,
    /// The version of the empty Ignition config in the encapsulated MachineConfig the
    /// machine-config-server serves.
    pub encapsulated_empty: EncapsulatedEmpty,

    // The generated MachineConfigs (the kubelet-config and container-runtime-config
    // controllers). Their Ignition version is `rendered_ignition`.
    /// How `/etc/kubernetes/kubelet.conf` is written: indented JSON until 4.16, YAML from 4.17.
    pub kubelet_conf_encoding: KubeletConfEncoding,
    /// The Kubernetes minor version of the kubelet configuration types the release vendors
    /// (`k8s.io/kubelet` and `k8s.io/component-base`: 27 in 4.14 to 34 in 4.21, 36 in 4.22):
    /// the fields `kubelet.conf` can hold.
    pub kubelet_types: u8,
    /// Feature gates left out of `kubelet.conf`'s `featureGates` (`ExternalCloudProvider` in
    /// 4.14).
    pub kubelet_gates_excluded: &'static [&'static str],
    /// Where `kubelet.conf`'s `tlsMinVersion` and `tlsCipherSuites` come from.
    pub kubelet_tls: KubeletTls,
    /// Whether a TLS profile's cipher suites keep the TLS 1.3 ones (`TLS_AES_128_GCM_SHA256`,
    /// ...) when turned into IANA names (from 4.18; before, only the TLS 1.2 ones remain and the
    /// Modern profile has none).
    pub tls13_cipher_suites: bool,
    /// The values a KubeletConfig's `logLevel` may take, and how its error prints one.
    pub kubelet_log_level: LogLevelRule,
    /// Where a KubeletConfig may set `staticPodPath`.
    pub static_pod_path: StaticPodPathRule,
    /// Whether a KubeletConfig may not set `failSwapOn` or `memorySwap.swapBehavior` (4.21 on).
    pub swap_settings_refused: bool,
    /// Whether `systemReservedCgroup` must match `systemCgroups` (in the KubeletConfig and in
    /// the merged configuration), and is cleared when `enforceNodeAllocatable` leaves out the
    /// system-reserved keys or `reservedSystemCPUs` is set (4.22).
    pub system_reserved_cgroup_rules: bool,
    /// How a KubeletConfig's status conditions are written.
    pub kubelet_conditions: KubeletConditions,
    /// The status of a ContainerRuntimeConfig's `Failure` condition (`False` until 4.21).
    pub runtime_failure_status: &'static str,
    /// Whether a ContainerRuntimeConfig has the additional layer, image and artifact stores
    /// (4.22; before, its type has no such fields and they are ignored).
    pub runtime_additional_stores: bool,
    /// When the KubeletConfig controller leaves a pool's generated MachineConfig as it is.
    pub kubelet_up_to_date: UpToDateRule,
    /// Whether a KubeletConfig's sync fails on a pool without a rendered configuration yet
    /// (`Pool <name> is unconfigured, pausing 5s for renderer to initialize`, until 4.19).
    pub unconfigured_pool_fails: bool,
    /// How the KubeletConfig controller's own errors begin (`Error finding kubelet config`
    /// until 4.21).
    pub kubelet_error_case: MessageCase,
    /// Whether `registries.conf` has the `additional-layer-store-auth-helper` line (4.19 on).
    pub registries_auth_helper: bool,
    /// Whether a rewritten `policy.json` is indented by two spaces (4.17 on) or compact.
    pub policy_json_indented: bool,
    /// Whether a rewritten `policy.json` gets the `docker` and `atomic` transports even with
    /// no scope in them (until 4.15).
    pub policy_transports_always: bool,
    /// Whether the registries MachineConfig carries the ClusterImagePolicies and ImagePolicies
    /// while the `SigstoreImageVerification` gate is on, and whether that gate is on by
    /// default: 4.19 and 4.20 (`Some(false)`: TechPreview), on by default from 4.21
    /// (`Some(true)`). `None`: not read (4.16 to 4.18 read the `v1alpha1` kinds behind
    /// TechPreview with other rules, which this project does not reproduce).
    pub image_policies: Option<bool>,
    /// Whether the policies are the `v1alpha1` kinds (until 4.19; `v1` after), whose
    /// `signedIdentity` is always there: an empty `matchPolicy` is `MatchRepoDigestOrExact`
    /// (from 4.20 it is an unknown match policy).
    pub image_policies_v1alpha1: bool,
    /// Whether a `sigstoreSigned` requirement's `pki` lists all six fields, empty ones as
    /// `""` and `null` (containers/image before v5.35, until 4.19), not only those set.
    pub sigstore_pki_every_field: bool,
    /// How mirror-set sources and mirrors are checked.
    pub mirror_check: MirrorCheck,
    /// Whether the conflicting `mirrorSourcePolicy` error lists ImageContentSourcePolicies
    /// among the objects (4.15 on).
    pub mirror_conflict_lists_icsp: bool,
    /// The pressure-stall kernel argument added with cgroup v2 (`psi=1` until 4.15, `psi=0`
    /// until 4.20, none after).
    pub cgroup_v2_psi: Option<&'static str>,
    /// Whether the Node's `cgroupMode: v1` is honoured (until 4.18; after, an unknown mode).
    pub cgroup_v1_accepted: bool,
    /// Whether the node-config MachineConfig of the `arbiter` pool gets the cgroup kernel
    /// arguments too (4.19 on).
    pub cgroup_arbiter: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Release::NEWEST.profile()
    }
}

impl Profile {
    /// `message` with its first letter as this release writes it.
    pub fn cased(&self, message: &str) -> String {
        match self.message_case {
            MessageCase::Lower => message.to_string(),
            MessageCase::Capitalised => {
                let mut c = message.chars();
                match c.next() {
                    Some(first) => first.to_uppercase().chain(c).collect(),
                    None => String::new(),
                }
            }
        }
    }

    /// Whether a MachineConfig may ask for the extension `name` (when extensions are checked:
    /// [`Profile::extension_check`]).
    pub fn extension_allowed(&self, name: &str) -> bool {
        let m = self.release.minor;
        EXTENSIONS
            .iter()
            .any(|(n, first, last)| *n == name && (*first..=*last).contains(&m))
    }

    /// Whether `kind` is a valid `kernelType`.
    pub fn kernel_type_valid(&self, kind: &str) -> bool {
        matches!(kind, "" | "default" | "realtime")
            || (self.large_pages_kernel && kind == "64k-pages")
    }

    /// Whether a MachineConfig's `kernelType` replaces the merged one.
    pub fn kernel_type_overrides(&self, kind: &str) -> bool {
        kind == "realtime" || (self.large_pages_kernel && kind == "64k-pages")
    }
}

/// The extensions releases allow, with the first and the last release allowing each (from
/// 4.16, when extensions began to be checked).
const EXTENSIONS: [(&str, u8, u8); 8] = [
    ("wasm", 16, 21),
    ("ipsec", 16, 22),
    ("usbguard", 16, 22),
    ("kerberos", 16, 22),
    ("kernel-devel", 16, 22),
    ("sandboxed-containers", 16, 22),
    ("sysstat", 18, 22),
    ("two-node-ha", 19, 22),
];

/// The order MachineConfigs merge in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeOrder {
    /// By name (4.14).
    Name,
    /// Those with role `worker` first, then the others, each by name: a custom pool's own
    /// MachineConfigs override the worker ones (4.15 on).
    WorkerFirst,
}

/// The order a rendered config's `source` lists its MachineConfigs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceOrder {
    /// By name, whatever order they merged in (4.15, 4.16).
    Name,
    /// The merge order (4.14, where that is by name, and 4.17 on).
    Merge,
}

/// How a file's `contents.compression` merges when a later MachineConfig writes the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionMerge {
    /// As its own field: a later file without `compression` keeps the earlier one's (`gzip`, or
    /// `""`, stays). Until 4.19.
    PerField,
    /// With the contents: a later file without `compression` has none. From 4.20.
    ChildWins,
}

/// When `spec.extensions` is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionCheck {
    /// Never (until 4.15).
    None,
    /// On every MachineConfig (4.16, 4.17).
    Always,
    /// On MachineConfigs with an Ignition config (4.18 on).
    WithConfig,
}

/// Whether a MachineConfig generated by the controller may set `osImageURL` and
/// `baseOSExtensionsContainerImage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratedOsImage {
    /// Like any other (until 4.20).
    Honoured,
    /// Skipped (4.21 on).
    Ignored,
}

pub use crate::api::selector::ValueStyle;

/// How the machine-config-server converts a rendered config to an older spec version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedConversion {
    /// One step function per version: the newest served as parsed, each older 3.x minor
    /// from the one above, 2.2 from 3.2 (until 4.19); each step's error in its own words.
    Chain {
        /// How the steps name the versions in their errors.
        labels: StepLabels,
    },
    /// One converter for every target, its errors bare (4.20 on).
    Generic,
}

/// The version of the empty config in the served encapsulated MachineConfig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncapsulatedEmpty {
    /// The release's newest for a 3.x request, 2.2 for a 2.x one (until 4.19).
    ReleaseNewest,
    /// The requested version (4.20 on).
    Requested,
}

/// How the step conversions of [`ServedConversion::Chain`] name versions in their errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepLabels {
    /// Every step says `v3_2 config to v3_1` and 2.2 says it converts from `v3.2` (until 4.18).
    Underscored,
    /// Each step names its versions (`v3.3 config to v3.2`, 2.2 from the newest) (4.19).
    Dotted,
}

/// How the machine-config-server picks the spec version from an `Accept` header's Ignition
/// media ranges (by descending `q`, each with a `version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptRule {
    /// The first range whose version falls in a band decides: `[newest, 4.0.0)`, each older
    /// minor from 3.1 (`[3.y.0, 3.y+1.0)`, pre-releases below their release), `[2.2.0,
    /// 3.0.0)`; ranges outside every band are passed over, and refused only when no range
    /// decides (until 4.19).
    Bands {
        /// The newest version served.
        newest: SpecVersion,
    },
    /// The first range decides: 2.x from 2.2.0 is 2.2, else its major.minor if served (3.0
    /// included), else, when `newer_minor_is_newest` (4.21 on), a newer 3.x minor is the
    /// newest; else refused (4.20 on).
    FirstDecides {
        /// A 3.x minor newer than the newest served is served the newest.
        newer_minor_is_newest: bool,
    },
}

/// Which configs Ignition warns about setuid, setgid and sticky mode bits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialModeBits {
    /// Configs older than 3.4.0, "not supported in spec versions older than 3.4.0" (Ignition
    /// v2.15 and v2.20: until 4.21).
    Before34,
    /// Every 3.x config, "not supported or functional in spec versions older than 3.6.0"
    /// (Ignition v2.26: 4.22).
    Before36,
}

impl SpecialModeBits {
    /// Rewords (or drops) the warning in a report on a config of `version`, from the words
    /// of [`SpecialModeBits::Before36`] that validation writes.
    pub fn reword(self, report: &mut mco_ignition::Report, version: SpecVersion) {
        if self == SpecialModeBits::Before36 {
            return;
        }
        let warning = mco_ignition::validate::SPECIAL_MODE_BITS_WARNING;
        if version >= SpecVersion::V3_4 {
            report.entries.retain(|e| e.message != warning);
            return;
        }
        for e in &mut report.entries {
            if e.message == warning {
                e.message =
                    "setuid/setgid/sticky bits are not supported in spec versions older than 3.4.0"
                        .to_string();
            }
        }
    }
}

/// How the render's messages begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageCase {
    /// `Ignoring MC …`, `Cannot find label …` (until 4.21).
    Capitalised,
    /// `ignoring MC …`, `cannot find label …` (4.22).
    Lower,
}

/// How `kubelet.conf` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletConfEncoding {
    /// The kubelet codec's JSON (fields in struct order), indented by two spaces (until 4.16).
    IndentedJson,
    /// The kubelet codec's YAML (4.17 on).
    Yaml,
}

/// Where `kubelet.conf`'s TLS settings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletTls {
    /// The KubeletConfig's `tlsSecurityProfile`, else Intermediate: the APIServer's profile is
    /// never found (until 4.16).
    ResourceElseIntermediate,
    /// The role template rendered with the APIServer's profile, replaced by the
    /// KubeletConfig's when it has one (4.17 on).
    TemplateUnlessResource,
}

/// The values a KubeletConfig's `logLevel` may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevelRule {
    /// 1 to 10; the error prints the address of the value, as Go prints a pointer (until
    /// 4.21).
    OneToTenPointer,
    /// 0 to 10; the error prints the value (4.22).
    ZeroToTen,
}

/// Where a KubeletConfig may set `staticPodPath`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticPodPathRule {
    /// Nowhere: `staticPodPath is not allowed to be set` (until 4.21).
    Refused,
    /// Never on a control-plane pool, and only empty on the others, each error naming the
    /// pool (4.22).
    PerPool,
}

/// How a KubeletConfig's status conditions are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletConditions {
    /// One condition per sync: `Success` (True) or `Failure` (False) (until 4.21).
    SuccessOrFailure,
    /// `Accepted` (True or False), followed by the legacy `Success` or `Failure` (True) (4.22).
    AcceptedAndLegacy,
}

/// When the KubeletConfig controller leaves a pool's existing generated MachineConfig alone:
/// the resource's generation was seen, its last sync succeeded and the MachineConfig carries
/// this controller version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpToDateRule {
    /// Those alone; the sync then ends there, with no status written (until 4.19).
    Generation,
    /// Also the MachineConfig's feature gates equal the cluster's (4.20 on).
    GenerationAndGates {
        /// The sync goes on with the next pool (4.22) rather than ending there.
        next_pool: bool,
    },
}

/// How mirror-set sources and mirrors are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorCheck {
    /// Not empty and without `*` (until 4.15).
    NoWildcards,
    /// Against the mirror-set API's patterns, `*.` sources allowed (4.16 on).
    Patterns,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_as_clusters_write_them() {
        for (s, minor) in [
            ("4.16", 16),
            ("4.16.3", 16),
            ("v4.16.3", 16),
            ("4.16.0-0.nightly-2024-08-01-082745", 16),
            ("4.20.0-ec.2", 20),
            ("4.14", 14),
            ("4.22.0", 22),
        ] {
            assert_eq!(Release::parse(s).map(Release::minor), Ok(minor), "{s}");
        }
        for s in ["4.13", "4.23", "5.1", "4", "", "4.x", "4.16.a", "latest"] {
            let e = Release::parse(s).unwrap_err();
            assert!(
                e.to_string()
                    .ends_with("4.14, 4.15, 4.16, 4.17, 4.18, 4.19, 4.20, 4.21, 4.22"),
                "{e}"
            );
        }
        assert!(Release::parse("4.99.0").unwrap_err().newer);
        assert!(!Release::parse("4.13.2").unwrap_err().newer);
        assert_eq!(Release::default(), Release::NEWEST);
        assert_eq!(Release::NEWEST.to_string(), "4.22");
    }

    #[test]
    fn each_behaviour_changes_where_upstream_changed_it() {
        let at = |m| Release::of_minor(m).expect("known").profile();
        assert_eq!(at(18).rendered_ignition, SpecVersion::V3_4);
        assert_eq!(at(19).rendered_ignition, SpecVersion::V3_5);
        assert_eq!(at(14).merge_order, MergeOrder::Name);
        assert_eq!(at(15).merge_order, MergeOrder::WorkerFirst);
        assert_eq!(at(19).compression_merge, CompressionMerge::PerField);
        assert_eq!(at(20).compression_merge, CompressionMerge::ChildWins);
        assert!(!at(14).kernel_type_valid("64k-pages"));
        assert!(at(15).kernel_type_valid("64k-pages"));
        assert_eq!(at(20).generated_os_image, GeneratedOsImage::Honoured);
        assert_eq!(at(21).generated_os_image, GeneratedOsImage::Ignored);
        assert_eq!(at(21).cased("ignoring MC x"), "Ignoring MC x");
        assert_eq!(at(22).cased("ignoring MC x"), "ignoring MC x");
        assert!(at(21).extension_allowed("wasm"));
        assert!(!at(22).extension_allowed("wasm"));
        assert!(!at(17).extension_allowed("sysstat"));
        assert!(at(18).extension_allowed("sysstat"));
        assert!(!at(18).extension_allowed("two-node-ha"));
    }
}
