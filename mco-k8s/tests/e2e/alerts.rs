//! `manifests/optional/prometheus-rules.yaml` against what the components serve: every metric
//! an alert's expression names is served at `/metrics` by machine-config-controller, the node
//! agent or machine-config-server (each started on 127.0.0.1 and read over HTTP), each alert
//! carries what a PrometheusRule needs (severity, summary, description, a runbook that
//! manifests/README.md has), and upstream's alerts keep their names, severities and `for:`.
//! Upstream's alerts on other exporters' series (cAdvisor, kube-state-metrics, node-exporter,
//! CRI-O) may name those, and only those ([`EXTERNAL`]); upstream's recording rules keep their
//! names and expressions.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mco_k8s::mcs::access::AccessPolicy;
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config, Source};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MANIFESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
const RULES: &str = "optional/prometheus-rules.yaml";
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster");
/// Generous: CI machines are shared.
const TEST_LIMIT: Duration = Duration::from_secs(300);

/// Upstream's alerts on the MCO's own metrics: name, severity, `for:`. Runbooks and silences
/// are keyed on these.
const UPSTREAM: &[(&str, &str, Option<&str>)] = &[
    ("MCCDrainError", "warning", None),
    ("MCCPoolAlert", "warning", None),
    ("MCDRebootError", "critical", Some("5m")),
    ("MCDPivotError", "warning", Some("2m")),
    ("KubeletHealthState", "warning", None),
    ("RuncDeprecated", "info", Some("10m")),
    ("SystemMemoryExceedsReservation", "warning", Some("15m")),
    ("HighOverallControlPlaneMemory", "warning", Some("1h")),
    (
        "ExtremelyHighIndividualControlPlaneMemory",
        "critical",
        Some("45m"),
    ),
];
/// Upstream's recording rules, under its names and expressions (dashboards and telemetry read
/// them).
const UPSTREAM_RECORDS: &[(&str, &str)] = &[
    ("os_image_url_override:sum", "sum(os_image_url_override)"),
    ("mco_mosc_count:sum", "mco_mosc_count"),
    (
        "cluster:mcd_nodes_with_unsupported_packages:count",
        "count(mcd_local_unsupported_packages > 0)",
    ),
    (
        "cluster:mcd_total_unsupported_packages:sum",
        "sum(mcd_local_unsupported_packages)",
    ),
];
/// Metrics of other exporters that upstream's alerts read, with who serves them: the only
/// names an expression may use that no component of this project serves.
const EXTERNAL: &[(&str, &str)] = &[
    ("container_memory_rss", "the kubelet's cAdvisor"),
    ("kube_node_status_capacity", "kube-state-metrics"),
    ("kube_node_status_allocatable", "kube-state-metrics"),
    ("kube_node_role", "kube-state-metrics"),
    ("node_memory_MemFree_bytes", "node-exporter"),
    ("node_memory_Buffers_bytes", "node-exporter"),
    ("node_memory_Cached_bytes", "node-exporter"),
    ("node_memory_MemTotal_bytes", "node-exporter"),
    ("container_runtime_crio_default_runtime", "CRI-O"),
];
/// The project's own alerts (no upstream counterpart).
const OURS: &[&str] = &["MachineConfigPoolNodesDegraded"];

// ---------------------------------------------------------------------------------------------
// A PromQL metric-name extractor: the identifiers that are metric names, i.e. not functions or
// aggregations (followed by `(`, or for aggregations by `by`/`without`), not keywords, not label
// names inside `{}` or the lists of `by`/`without`/`on`/`ignoring`/`group_left`/`group_right`,
// not inside strings, and not numbers or durations. `{__name__="x"}` names `x`.
// ---------------------------------------------------------------------------------------------

const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan",
];
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The index after the string literal starting at `i` (a quote).
fn skip_string(s: &[char], i: usize) -> usize {
    let q = s[i];
    let mut j = i + 1;
    while j < s.len() && s[j] != q {
        if s[j] == '\\' && q != '`' {
            j += 1;
        }
        j += 1;
    }
    j + 1
}

/// The text of the string literal starting at `i` (escapes left as written).
fn string_value(s: &[char], i: usize) -> String {
    let close = (skip_string(s, i) - 1).min(s.len());
    s[i + 1..close.max(i + 1)].iter().collect()
}

/// The identifier starting at `i` (empty when none does), lowercased.
fn word_at(s: &[char], i: usize) -> String {
    let end = (i..s.len()).find(|&e| !is_ident(s[e])).unwrap_or(s.len());
    s[i..end].iter().collect::<String>().to_ascii_lowercase()
}

fn skip_ws(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i].is_whitespace() {
        i += 1;
    }
    i
}

/// The index after the bracket group starting at `i` (`(`, `{` or `[`), strings skipped;
/// `__name__="x"` matchers inside braces add `x` to `names`.
fn skip_group(s: &[char], i: usize, names: &mut BTreeSet<String>) -> usize {
    let (open, close) = match s[i] {
        '(' => ('(', ')'),
        '{' => ('{', '}'),
        _ => ('[', ']'),
    };
    let mut depth = 0;
    let mut j = i;
    while j < s.len() {
        let c = s[j];
        if c == '"' || c == '\'' || c == '`' {
            j = skip_string(s, j);
            continue;
        }
        if open == '{' && s[j..].starts_with(&['_', '_', 'n', 'a', 'm', 'e', '_', '_']) {
            let k = skip_ws(s, j + 8);
            if k < s.len() && s[k] == '=' && s.get(k + 1) != Some(&'~') {
                let v = skip_ws(s, k + 1);
                if v < s.len() && matches!(s[v], '"' | '\'' | '`') {
                    names.insert(string_value(s, v));
                }
            }
        }
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
        j += 1;
    }
    j
}

/// The metric names `expr` selects.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let s: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&s, i);
        } else if c == '#' {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '{' || c == '[' {
            i = skip_group(&s, i, &mut names);
        } else if c.is_ascii_digit() || (c == '.' && s.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            // Numbers and durations: 2, 0.5, 1e3, 0x1f, 5m, 1h30m.
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '.' || s[i] == '_') {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            let lower = word.to_ascii_lowercase();
            let next = skip_ws(&s, i);
            if LABEL_LISTS.contains(&lower.as_str()) {
                if next < s.len() && s[next] == '(' {
                    i = skip_group(&s, next, &mut names);
                }
            } else if KEYWORDS.contains(&lower.as_str()) {
                // An operator or modifier.
            } else if next < s.len() && s[next] == '(' {
                // A function or an aggregation: its arguments are read on.
            } else if AGGREGATIONS.contains(&lower.as_str())
                && ["by", "without"].contains(&word_at(&s, next).as_str())
            {
                // `sum by (x) (...)`.
            } else {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_extractor_finds_metric_names_only() {
    assert_eq!(metric_names("mcc_drain_err > 0"), set(&["mcc_drain_err"]));
    assert_eq!(
        metric_names(
            r#"sum by (node, pool) (rate(mcd_reboots_failed_total{job="mcd", node=~"w.*|m{2}"}[5m] offset 1h)) > on(node) group_left(pool) mco_machine_count"#
        ),
        set(&["mcd_reboots_failed_total", "mco_machine_count"])
    );
    assert_eq!(
        metric_names(
            "max without(instance) (mcd_state) unless ignoring (pod) mcd_update_state and bool 1"
        ),
        set(&["mcd_state", "mcd_update_state"])
    );
    assert_eq!(
        metric_names("count(a_metric) by (pool) + sum(b_metric) WITHOUT (x) / avg by(p)(c_metric)"),
        set(&["a_metric", "b_metric", "c_metric"])
    );
    assert_eq!(
        metric_names(r#"{__name__="mcd_kubelet_state", node!="x"} > 2"#),
        set(&["mcd_kubelet_state"])
    );
    assert_eq!(
        metric_names(
            r#"label_replace(kube_node_role{role="master"}, "instance", "$1", "node", "(.+)")"#
        ),
        set(&["kube_node_role"])
    );
    assert_eq!(
        metric_names("histogram_quantile(0.9, x_bucket) @ start() > 1e3 + 0x1F + .5 + Inf"),
        set(&["x_bucket"])
    );
    assert_eq!(
        metric_names("mco_degraded_machine_count > 0 # a comment naming no_metric"),
        set(&["mco_degraded_machine_count"])
    );
    assert_eq!(metric_names("vector(1)"), BTreeSet::new());
}

// ---------------------------------------------------------------------------------------------
// What the components serve.
// ---------------------------------------------------------------------------------------------

/// The metric names an exposition serves: every sample's, and for every `# TYPE` line the
/// names its samples take (a family with no series yet is served all the same).
fn served_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            match kind {
                "counter" if !name.ends_with("_total") => {
                    out.insert(format!("{name}_total"));
                }
                "histogram" | "gaugehistogram" => {
                    for suffix in ["_bucket", "_sum", "_count"] {
                        out.insert(format!("{name}{suffix}"));
                    }
                }
                "summary" => {
                    out.insert(name.to_string());
                    out.insert(format!("{name}_sum"));
                    out.insert(format!("{name}_count"));
                }
                _ => {
                    out.insert(name.to_string());
                }
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            out.insert(line[..end].to_string());
        }
    }
    out
}

/// The names in `expr` that `served` lacks.
fn unserved(expr: &str, served: &BTreeSet<String>) -> BTreeSet<String> {
    metric_names(expr)
        .into_iter()
        .filter(|n| !served.contains(n))
        .collect()
}

/// `GET /metrics` on a new connection: the body of a 200.
async fn scrape(addr: SocketAddr) -> String {
    let mut conn = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap_or_else(|e| panic!("send to {addr}: {e}"));
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply)
        .await
        .unwrap_or_else(|e| panic!("read from {addr}: {e}"));
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{addr}: no HTTP answer: {reply}"));
    assert!(head.starts_with("HTTP/1.1 200"), "{addr}: {head}");
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{addr}: {head}"
    );
    body.to_string()
}

/// The three components' `/metrics`, each served on 127.0.0.1: component name to exposition.
async fn expositions() -> BTreeMap<&'static str, String> {
    let mut out = BTreeMap::new();

    // machine-config-controller, as its binary serves it once it has synced a pool with a
    // node (a family shows in the exposition once it has a series).
    let controller = mco_k8s::metrics::ControllerMetrics::new();
    let mut pool = mco_render::api::MachineConfigPool::default();
    pool.metadata.name = "worker".into();
    let mut selector = mco_render::api::LabelSelector::default();
    selector
        .match_labels
        .insert("node-role.kubernetes.io/worker".into(), String::new());
    pool.spec.node_selector = Some(selector);
    let mut node = mco_render::api::Node::default();
    node.metadata.name = "worker-0".into();
    node.metadata
        .labels
        .insert("node-role.kubernetes.io/worker".into(), String::new());
    controller.set_pool("worker", mco_k8s::metrics::PoolCounts::default());
    controller.set_drain_failed("worker-0", false);
    controller.set_pool_alerts(&[pool], &[&node]);
    controller.set_os_image_url_override("worker", false);
    controller.set_mosc_count(0);
    controller.set_pool_state(
        "worker",
        &["worker-0"],
        &mco_render::controllers::pool_metrics::PoolState::default(),
        0,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let m = controller.clone();
    let task = tokio::spawn(mco_k8s::metrics::serve(
        listener,
        Arc::new(move || m.render()),
    ));
    out.insert("machine-config-controller", scrape(addr).await);
    task.abort();

    // The node agent (machine-config-daemon).
    let agent = mco_node::agent::metrics::AgentMetrics::new();
    agent.set_state("Done", "");
    agent.set_update("rendered-worker-1", "");
    agent.set_host_facts(
        "worker-0",
        &mco_node::agent::host_facts::HostFacts {
            os: mco_node::agent::host_facts::HostOs {
                os: "RHCOS".into(),
                version: "9.6.20250101-0".into(),
            },
            unsupported_packages: Some(0),
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let task = tokio::spawn(agent.clone().serve(listener));
    out.insert("machine-config-daemon", scrape(addr).await);
    task.abort();

    // machine-config-server, in file mode on a copy of the example cluster.
    let dir = tempfile::tempdir().expect("temp dir");
    for e in std::fs::read_dir(EXAMPLE).expect("example cluster") {
        let p = e.expect("entry").path();
        if let Some(n) = p.file_name() {
            std::fs::copy(&p, dir.path().join(n)).expect("copy manifest");
        }
    }
    let running = server::start(Config {
        source: Source::Dir(dir.path().to_path_buf()),
        listen: "127.0.0.1".parse().expect("loopback"),
        secure_port: None,
        insecure_port: Some(0),
        tls: None,
        build: BuildOptions::default(),
        access: AccessPolicy::default(),
        poll_interval: Duration::from_secs(60),
        limits: mco_k8s::limits::ConnLimits::default(),
        bootstrap: None,
    })
    .await
    .expect("machine-config-server starts");
    let addr = running.insecure_addr.expect("plain port");
    out.insert("machine-config-server", scrape(addr).await);
    running.stop().await;
    out
}

// ---------------------------------------------------------------------------------------------
// The rules.
// ---------------------------------------------------------------------------------------------

/// The rule file's objects.
fn rule_objects() -> Vec<Value> {
    let path = Path::new(MANIFESTS).join(RULES);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{RULES}: {e}"));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            let v: Value = serde::Deserialize::deserialize(d)
                .unwrap_or_else(|e| panic!("{RULES}: not YAML: {e}"));
            v
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// One alerting rule and where it is.
struct Alert {
    object: String,
    at: String,
    rule: Value,
}

impl Alert {
    fn name(&self) -> &str {
        self.rule["alert"].as_str().unwrap_or("")
    }
    fn is_record(&self) -> bool {
        self.rule["record"].is_string()
    }
    fn record(&self) -> &str {
        self.rule["record"].as_str().unwrap_or("")
    }
    fn expr(&self) -> &str {
        self.rule["expr"].as_str().unwrap_or("")
    }
    fn str_at(&self, pointer: &str) -> Option<&str> {
        self.rule.pointer(pointer).and_then(Value::as_str)
    }
}

/// Every alert of the rule file, checking the objects' shape on the way.
fn alerts() -> Vec<Alert> {
    rules().into_iter().filter(|r| !r.is_record()).collect()
}

/// Every recording rule of the rule file.
fn records() -> Vec<Alert> {
    rules().into_iter().filter(Alert::is_record).collect()
}

/// Every rule of the rule file (alerting and recording), checking the objects' shape on the
/// way.
fn rules() -> Vec<Alert> {
    let mut out = Vec::new();
    let objects = rule_objects();
    assert!(!objects.is_empty(), "{RULES}: no objects");
    for (d, obj) in objects.iter().enumerate() {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{RULES} document {d}: no metadata.name"))
            .to_string();
        let here = format!("{RULES} PrometheusRule {name}");
        assert_eq!(obj["apiVersion"], "monitoring.coreos.com/v1", "{here}");
        assert_eq!(obj["kind"], "PrometheusRule", "{here}");
        assert_eq!(
            obj.pointer("/metadata/namespace").and_then(Value::as_str),
            Some("openshift-machine-config-operator"),
            "{here}: metadata.namespace"
        );
        let groups = obj
            .pointer("/spec/groups")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{here}: no spec.groups"));
        let mut group_names = BTreeSet::new();
        for (g, group) in groups.iter().enumerate() {
            let gname = group["name"]
                .as_str()
                .unwrap_or_else(|| panic!("{here}: spec.groups[{g}].name"));
            assert!(group_names.insert(gname), "{here}: group {gname} twice");
            let rules = group["rules"]
                .as_array()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| panic!("{here}: spec.groups[{g}].rules is empty"));
            for (r, rule) in rules.iter().enumerate() {
                let at = format!("{here}: spec.groups[{g}].rules[{r}]");
                assert!(
                    rule["alert"].is_string() != rule["record"].is_string(),
                    "{at}: neither an alert nor a recording rule, or both"
                );
                out.push(Alert {
                    object: name.clone(),
                    at,
                    rule: rule.clone(),
                });
            }
        }
    }
    out
}

/// Prometheus's duration syntax (`5m`, `1h30m`).
fn is_duration(s: &str) -> bool {
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "s", "m", "h", "d", "w", "y"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        let Some(u) = unit else { return false };
        rest = &rest[u.len()..];
    }
    true
}

#[test]
fn every_alert_has_what_a_prometheus_rule_needs() {
    let readme = std::fs::read_to_string(Path::new(MANIFESTS).join("README.md"))
        .expect("manifests/README.md");
    let alerts = alerts();
    let mut names = BTreeSet::new();
    for a in &alerts {
        let (name, at) = (a.name(), &a.at);
        assert!(names.insert(name.to_string()), "{at}: alert {name} twice");
        assert!(
            name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric()),
            "{at}: alert name {name:?}"
        );
        assert!(!a.expr().trim().is_empty(), "{at}: expr");
        assert!(
            !metric_names(a.expr()).is_empty(),
            "{at}: expr names no metric"
        );
        if let Some(f) = a.rule.get("for") {
            let f = f.as_str().unwrap_or_default();
            assert!(is_duration(f), "{at}: for {f:?} is not a duration");
        }
        let severity = a.str_at("/labels/severity").unwrap_or_default();
        assert!(
            ["critical", "warning", "info"].contains(&severity),
            "{at}: labels.severity {severity:?}"
        );
        assert_eq!(
            a.str_at("/labels/namespace"),
            Some("openshift-machine-config-operator"),
            "{at}: labels.namespace"
        );
        for key in ["summary", "description", "runbook_url"] {
            let text = a
                .str_at(&format!("/annotations/{key}"))
                .unwrap_or_else(|| panic!("{at}: annotations.{key} missing"));
            assert!(!text.trim().is_empty(), "{at}: annotations.{key} empty");
            assert_eq!(
                text.matches("{{").count(),
                text.matches("}}").count(),
                "{at}: annotations.{key}: unbalanced template"
            );
        }
        // The runbook is a section of manifests/README.md.
        let runbook = a.str_at("/annotations/runbook_url").unwrap_or_default();
        let anchor = format!("manifests/README.md#{}", name.to_ascii_lowercase());
        assert!(runbook.ends_with(&anchor), "{at}: runbook_url {runbook}");
        assert!(
            readme.lines().any(|l| l.trim() == format!("### {name}")),
            "{at}: manifests/README.md has no section \"### {name}\""
        );
    }
    // Upstream's alerts, as upstream names, grades and delays them; besides them only ours.
    for (name, severity, for_) in UPSTREAM {
        let a = alerts
            .iter()
            .find(|a| a.name() == *name)
            .unwrap_or_else(|| panic!("{RULES}: upstream's alert {name} is missing"));
        assert_eq!(a.str_at("/labels/severity"), Some(*severity), "{}", a.at);
        assert_eq!(a.str_at("/for"), *for_, "{}: for", a.at);
    }
    // Upstream's recording rules, as upstream writes them; and only those.
    let records = records();
    for (name, expr) in UPSTREAM_RECORDS {
        let r = records
            .iter()
            .find(|r| r.record() == *name)
            .unwrap_or_else(|| panic!("{RULES}: upstream's recording rule {name} is missing"));
        assert_eq!(r.expr().trim(), *expr, "{}", r.at);
    }
    for r in &records {
        assert!(
            UPSTREAM_RECORDS.iter().any(|u| u.0 == r.record()),
            "{}: recording rule {} is not upstream's",
            r.at,
            r.record()
        );
    }
    // Only upstream's alerts read other exporters' metrics.
    let external: BTreeSet<String> = EXTERNAL.iter().map(|(m, _)| m.to_string()).collect();
    for name in OURS {
        let a = alerts
            .iter()
            .find(|a| a.name() == *name)
            .expect("listed alert");
        assert!(
            metric_names(a.expr()).is_disjoint(&external),
            "{}: our alert {name} reads another exporter's metrics",
            a.at
        );
    }
    for a in &alerts {
        assert!(
            UPSTREAM.iter().any(|u| u.0 == a.name()) || OURS.contains(&a.name()),
            "{}: {} is neither upstream's nor listed as ours",
            a.at,
            a.name()
        );
    }
}

#[test]
fn every_expression_names_metrics_the_components_serve() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let served = rt.block_on(async {
        tokio::time::timeout(TEST_LIMIT, expositions())
            .await
            .expect("the endpoints answered in time")
    });
    let by_component: BTreeMap<&str, BTreeSet<String>> = served
        .iter()
        .map(|(c, text)| (*c, served_names(text)))
        .collect();
    // The scrapes read real expositions: each shows a metric it is known for.
    for (component, known) in [
        ("machine-config-controller", "mco_machine_count"),
        ("machine-config-daemon", "mcd_reboots_failed_total"),
        ("machine-config-server", "mcs_requests_total"),
    ] {
        assert!(
            by_component[component].contains(known),
            "{component} does not serve {known}: {}",
            served[component]
        );
    }
    let all: BTreeSet<String> = by_component.values().flatten().cloned().collect();
    let external: BTreeSet<String> = EXTERNAL.iter().map(|(m, _)| m.to_string()).collect();
    let known: BTreeSet<String> = all.union(&external).cloned().collect();
    // Another exporter's metric that a component of ours serves is ours, not external.
    for m in &external {
        assert!(
            !all.contains(m),
            "{m} is served here: not an external metric"
        );
    }

    let mut wrong = Vec::new();
    for a in rules() {
        let name = if a.is_record() { a.record() } else { a.name() };
        let lacking = unserved(a.expr(), &known);
        if !lacking.is_empty() {
            wrong.push(format!(
                "{}: {name} names {lacking:?}, which no component serves",
                a.at,
            ));
        }
        // Each PrometheusRule is about the component it is named after.
        let own = by_component
            .get(a.object.as_str())
            .unwrap_or_else(|| panic!("{}: no component is named {}", a.at, a.object));
        let elsewhere: BTreeSet<String> = unserved(a.expr(), own)
            .difference(&lacking)
            .filter(|m| !external.contains(*m))
            .cloned()
            .collect();
        if !elsewhere.is_empty() {
            wrong.push(format!(
                "{}: {name} names {elsewhere:?}, which {} does not serve",
                a.at, a.object
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // The check fails on a metric nobody serves.
    assert_eq!(
        unserved("mcd_pivot_errors_total > 0 or mcd_no_such_metric > 0", &all),
        set(&["mcd_no_such_metric"])
    );
}

#[test]
fn the_exposition_reader_knows_each_type() {
    let text = "# HELP a x\n# TYPE a counter\n# TYPE b_total counter\nb_total 1\n\
                # TYPE c gauge\n# TYPE d histogram\n# TYPE e summary\nf{x=\"1\"} 2\n";
    assert_eq!(
        served_names(text),
        set(&[
            "a_total", "b_total", "c", "d_bucket", "d_count", "d_sum", "e", "e_count", "e_sum", "f"
        ])
    );
}
