//! The shape of the kubelet's `KubeletConfiguration` (`kubelet.config.k8s.io/v1beta1`) at the
//! version upstream builds with: every field's JSON name, type and `omitempty`, in the order the
//! Go struct declares them.

use crate::gocompat::gostruct::{Field, StructTy, Ty};

const fn f(json: &'static str, ty: Ty) -> Field {
    Field {
        json,
        ty,
        omitempty: true,
    }
}

const fn req(json: &'static str, ty: Ty) -> Field {
    Field {
        json,
        ty,
        omitempty: false,
    }
}

const BOOL: Ty = Ty::Bool;
const I32: Ty = Ty::I32;
const I64: Ty = Ty::I64;
const STR: Ty = Ty::Str;
const DUR: Ty = Ty::Duration;
const P_BOOL: Ty = Ty::Ptr(&BOOL);
const P_I32: Ty = Ty::Ptr(&I32);
const P_I64: Ty = Ty::Ptr(&I64);
const P_STR: Ty = Ty::Ptr(&STR);
const P_DUR: Ty = Ty::Ptr(&DUR);
const P_F64: Ty = Ty::Ptr(&Ty::F64);
const STRS: Ty = Ty::Slice(&STR);
const MAP_STR: Ty = Ty::Map(&STR);
const MAP_BOOL: Ty = Ty::Map(&BOOL);
const MAP_STRS: Ty = Ty::Map(&STRS);
const RESOURCE_LIST: Ty = Ty::Map(&Ty::Quantity);

static X509: StructTy = StructTy {
    name: "v1beta1.KubeletX509Authentication",
    fields: &[f("clientCAFile", STR)],
};

static WEBHOOK_AUTHN: StructTy = StructTy {
    name: "v1beta1.KubeletWebhookAuthentication",
    fields: &[f("enabled", P_BOOL), f("cacheTTL", DUR)],
};

static ANONYMOUS: StructTy = StructTy {
    name: "v1beta1.KubeletAnonymousAuthentication",
    fields: &[f("enabled", P_BOOL)],
};

static AUTHENTICATION: StructTy = StructTy {
    name: "v1beta1.KubeletAuthentication",
    fields: &[
        req("x509", Ty::Struct(&X509)),
        req("webhook", Ty::Struct(&WEBHOOK_AUTHN)),
        req("anonymous", Ty::Struct(&ANONYMOUS)),
    ],
};

static WEBHOOK_AUTHZ: StructTy = StructTy {
    name: "v1beta1.KubeletWebhookAuthorization",
    fields: &[f("cacheAuthorizedTTL", DUR), f("cacheUnauthorizedTTL", DUR)],
};

static AUTHORIZATION: StructTy = StructTy {
    name: "v1beta1.KubeletAuthorization",
    fields: &[f("mode", STR), req("webhook", Ty::Struct(&WEBHOOK_AUTHZ))],
};

static MEMORY_SWAP: StructTy = StructTy {
    name: "v1beta1.MemorySwapConfiguration",
    fields: &[f("swapBehavior", STR)],
};

static OUTPUT_ROUTING: StructTy = StructTy {
    name: "v1.TextOptions",
    fields: &[f("splitStream", BOOL), f("infoBufferSize", Ty::Quantity)],
};

static FORMAT_OPTIONS: StructTy = StructTy {
    name: "v1.FormatOptions",
    fields: &[
        f("text", Ty::Struct(&OUTPUT_ROUTING)),
        f("json", Ty::Struct(&OUTPUT_ROUTING)),
    ],
};

static VMODULE_ITEM: StructTy = StructTy {
    name: "v1.VModuleItem",
    fields: &[req("filePattern", STR), req("verbosity", Ty::U32)],
};

static LOGGING: StructTy = StructTy {
    name: "v1.LoggingConfiguration",
    fields: &[
        f("format", STR),
        req("flushFrequency", Ty::TimeOrMeta),
        req("verbosity", Ty::U32),
        f("vmodule", Ty::Slice(&Ty::Struct(&VMODULE_ITEM))),
        f("options", Ty::Struct(&FORMAT_OPTIONS)),
    ],
};

static SHUTDOWN_BY_PRIORITY: StructTy = StructTy {
    name: "v1beta1.ShutdownGracePeriodByPodPriority",
    fields: &[req("priority", I32), req("shutdownGracePeriodSeconds", I64)],
};

static CRASH_LOOP: StructTy = StructTy {
    name: "v1beta1.CrashLoopBackOffConfig",
    fields: &[f("maxContainerRestartPeriod", P_DUR)],
};

static MEMORY_RESERVATION: StructTy = StructTy {
    name: "v1beta1.MemoryReservation",
    fields: &[req("numaNode", I32), req("limits", RESOURCE_LIST)],
};

static TAINT: StructTy = StructTy {
    name: "v1.Taint",
    fields: &[
        req("key", STR),
        f("value", STR),
        req("effect", STR),
        f("timeAdded", Ty::Ptr(&Ty::Time)),
    ],
};

static TRACING: StructTy = StructTy {
    name: "v1.TracingConfiguration",
    fields: &[f("endpoint", P_STR), f("samplingRatePerMillion", P_I32)],
};

static USER_NAMESPACES: StructTy = StructTy {
    name: "v1beta1.UserNamespaces",
    fields: &[f("idsPerPod", P_I64)],
};

/// `KubeletConfiguration`, with the embedded `TypeMeta` fields first.
pub(crate) static KUBELET_CONFIGURATION: StructTy = StructTy {
    name: "v1beta1.KubeletConfiguration",
    fields: &[
        f("kind", STR),
        f("apiVersion", STR),
        f("enableServer", P_BOOL),
        f("staticPodPath", STR),
        f("podLogsDir", STR),
        f("syncFrequency", DUR),
        f("fileCheckFrequency", DUR),
        f("httpCheckFrequency", DUR),
        f("staticPodURL", STR),
        f("staticPodURLHeader", MAP_STRS),
        f("address", STR),
        f("port", I32),
        f("readOnlyPort", I32),
        f("tlsCertFile", STR),
        f("tlsPrivateKeyFile", STR),
        f("tlsCipherSuites", STRS),
        f("tlsCurvePreferences", Ty::Slice(&I32)),
        f("tlsMinVersion", STR),
        f("rotateCertificates", BOOL),
        f("serverTLSBootstrap", BOOL),
        req("authentication", Ty::Struct(&AUTHENTICATION)),
        req("authorization", Ty::Struct(&AUTHORIZATION)),
        f("registryPullQPS", P_I32),
        f("registryBurst", I32),
        f("imagePullCredentialsVerificationPolicy", STR),
        f("preloadedImagesVerificationAllowlist", STRS),
        f("eventRecordQPS", P_I32),
        f("eventBurst", I32),
        f("enableDebuggingHandlers", P_BOOL),
        f("enableContentionProfiling", BOOL),
        f("healthzPort", P_I32),
        f("healthzBindAddress", STR),
        f("oomScoreAdj", P_I32),
        f("clusterDomain", STR),
        f("clusterDNS", STRS),
        f("streamingConnectionIdleTimeout", DUR),
        f("nodeStatusUpdateFrequency", DUR),
        f("nodeStatusReportFrequency", DUR),
        f("nodeLeaseDurationSeconds", I32),
        f("imageMinimumGCAge", DUR),
        f("imageMaximumGCAge", DUR),
        f("imageGCHighThresholdPercent", P_I32),
        f("imageGCLowThresholdPercent", P_I32),
        f("volumeStatsAggPeriod", DUR),
        f("kubeletCgroups", STR),
        f("systemCgroups", STR),
        f("cgroupRoot", STR),
        f("cgroupsPerQOS", P_BOOL),
        f("cgroupDriver", STR),
        f("cpuManagerPolicy", STR),
        f("singleProcessOOMKill", P_BOOL),
        f("cpuManagerPolicyOptions", MAP_STR),
        f("cpuManagerReconcilePeriod", DUR),
        f("memoryManagerPolicy", STR),
        f("topologyManagerPolicy", STR),
        f("topologyManagerScope", STR),
        f("topologyManagerPolicyOptions", MAP_STR),
        f("qosReserved", MAP_STR),
        f("runtimeRequestTimeout", DUR),
        f("hairpinMode", STR),
        f("maxPods", I32),
        f("podCIDR", STR),
        f("podPidsLimit", P_I64),
        f("resolvConf", P_STR),
        f("runOnce", BOOL),
        f("cpuCFSQuota", P_BOOL),
        f("cpuCFSQuotaPeriod", P_DUR),
        f("nodeStatusMaxImages", P_I32),
        f("maxOpenFiles", I64),
        f("contentType", STR),
        f("kubeAPIQPS", P_I32),
        f("kubeAPIBurst", I32),
        f("serializeImagePulls", P_BOOL),
        f("maxParallelImagePulls", P_I32),
        f("evictionHard", MAP_STR),
        f("evictionSoft", MAP_STR),
        f("evictionSoftGracePeriod", MAP_STR),
        f("evictionPressureTransitionPeriod", DUR),
        f("evictionMaxPodGracePeriod", I32),
        f("evictionMinimumReclaim", MAP_STR),
        f("mergeDefaultEvictionSettings", P_BOOL),
        f("podsPerCore", I32),
        f("enableControllerAttachDetach", P_BOOL),
        f("protectKernelDefaults", BOOL),
        f("makeIPTablesUtilChains", P_BOOL),
        f("iptablesMasqueradeBit", P_I32),
        f("iptablesDropBit", P_I32),
        f("featureGates", MAP_BOOL),
        f("failSwapOn", P_BOOL),
        f("memorySwap", Ty::Struct(&MEMORY_SWAP)),
        f("containerLogMaxSize", STR),
        f("containerLogMaxFiles", P_I32),
        f("containerLogMaxWorkers", P_I32),
        f("containerLogMonitorInterval", P_DUR),
        f("configMapAndSecretChangeDetectionStrategy", STR),
        f("systemReserved", MAP_STR),
        f("kubeReserved", MAP_STR),
        f("reservedSystemCPUs", STR),
        f("showHiddenMetricsForVersion", STR),
        f("systemReservedCgroup", STR),
        f("kubeReservedCgroup", STR),
        f("enforceNodeAllocatable", STRS),
        f("allowedUnsafeSysctls", STRS),
        f("volumePluginDir", STR),
        f("providerID", STR),
        f("kernelMemcgNotification", BOOL),
        f("logging", Ty::Struct(&LOGGING)),
        f("enableSystemLogHandler", P_BOOL),
        f("enableSystemLogQuery", P_BOOL),
        f("shutdownGracePeriod", DUR),
        f("shutdownGracePeriodCriticalPods", DUR),
        f(
            "shutdownGracePeriodByPodPriority",
            Ty::Slice(&Ty::Struct(&SHUTDOWN_BY_PRIORITY)),
        ),
        f("crashLoopBackOff", Ty::Struct(&CRASH_LOOP)),
        f(
            "reservedMemory",
            Ty::Slice(&Ty::Struct(&MEMORY_RESERVATION)),
        ),
        f("enableProfilingHandler", P_BOOL),
        f("enableDebugFlagsHandler", P_BOOL),
        f("seccompDefault", P_BOOL),
        f("memoryThrottlingFactor", P_F64),
        f("memoryReservationPolicy", STR),
        f("registerWithTaints", Ty::Slice(&Ty::Struct(&TAINT))),
        f("registerNode", P_BOOL),
        f("tracing", Ty::Ptr(&Ty::Struct(&TRACING))),
        f("localStorageCapacityIsolation", P_BOOL),
        req("containerRuntimeEndpoint", STR),
        f("imageServiceEndpoint", STR),
        f("failCgroupV1", P_BOOL),
        f("userNamespaces", Ty::Ptr(&Ty::Struct(&USER_NAMESPACES))),
    ],
};

/// The `KubeletConfiguration` type.
pub(crate) const KUBELET_TY: Ty = Ty::Struct(&KUBELET_CONFIGURATION);

/// The fields of a `KubeletConfiguration` (as JSON pointers) and the Kubernetes minor version
/// whose kubelet (or component-base) types brought each: a release vendoring older types
/// drops them when it reads a configuration and never writes them.
const FIELDS_SINCE: &[(&str, u8)] = &[
    ("/imageMaximumGCAge", 29),
    ("/podLogsDir", 30),
    ("/containerLogMaxWorkers", 30),
    ("/containerLogMonitorInterval", 30),
    ("/logging/options/text", 30),
    ("/failCgroupV1", 31),
    ("/singleProcessOOMKill", 32),
    ("/crashLoopBackOff", 32),
    ("/imagePullCredentialsVerificationPolicy", 33),
    ("/preloadedImagesVerificationAllowlist", 33),
    ("/mergeDefaultEvictionSettings", 33),
    ("/userNamespaces", 33),
    ("/tlsCurvePreferences", 35),
    ("/memoryReservationPolicy", 35),
];

/// Removes from a `KubeletConfiguration` object the fields the kubelet types of Kubernetes
/// 1.`types` do not have. Keys match without regard to case, as Go's decoder matches them.
pub(crate) fn drop_unknown_fields(kc: &mut serde_json::Value, types: u8) {
    for (pointer, since) in FIELDS_SINCE {
        if *since > types {
            let parts: Vec<&str> = pointer.split('/').skip(1).collect();
            drop_path(kc, &parts);
        }
    }
}

/// Removes the field at `path` (keys matched without regard to case).
fn drop_path(v: &mut serde_json::Value, path: &[&str]) {
    let (Some((first, rest)), Some(o)) = (path.split_first(), v.as_object_mut()) else {
        return;
    };
    if rest.is_empty() {
        o.retain(|k, _| !k.eq_ignore_ascii_case(first));
        return;
    }
    for (k, child) in o.iter_mut() {
        if k.eq_ignore_ascii_case(first) {
            drop_path(child, rest);
        }
    }
}
