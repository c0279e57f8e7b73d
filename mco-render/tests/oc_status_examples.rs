//! `status` against `oc adm upgrade status`'s own examples: dumps of real clusters (pools,
//! Nodes, MachineConfigs, the ClusterVersion) with the output `oc` printed for each. Where our
//! columns are `oc`'s worker-section columns (per pool: assessment, completion, status; per
//! node: assessment, phase, version, estimate, message), they must say the same thing.
//!
//! The examples belong to the `oc` repository and are not copied here: point
//! `OC_STATUS_EXAMPLES` at its `pkg/cli/admin/upgrade/status/examples` folder (for example
//! `git clone https://github.com/openshift/oc` and
//! `OC_STATUS_EXAMPLES=$PWD/oc/pkg/cli/admin/upgrade/status/examples cargo test -p mco-render
//! --test oc_status_examples`). Without it the test says so loudly and checks nothing.

use mco_render::status::{render, status, Cluster, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One table row, its cells as `oc`'s tabwriter separates them (three spaces or more).
fn cells(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut spaces = 0;
    for c in line.chars() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        if spaces >= 2 && !cell.is_empty() {
            out.push(std::mem::take(&mut cell));
        } else {
            cell.push_str(&" ".repeat(spaces));
        }
        spaces = 0;
        cell.push(c);
    }
    if !cell.is_empty() {
        out.push(cell);
    }
    out
}

/// The worker section of an `oc` output: pool rows (name, assessment, completion, status)
/// and node rows per pool (name, assessment, phase, version, estimate, message), the control
/// plane's nodes under `master`.
#[derive(Debug, Default, PartialEq)]
struct Section {
    pools: Vec<Vec<String>>,
    nodes: BTreeMap<String, Vec<Vec<String>>>,
    /// Nodes left out and counted in an `Omitted additional ...` line, per pool.
    omitted: BTreeMap<String, String>,
    /// The version every control plane node is updated to, which `oc` says in one line
    /// instead of their table.
    control_plane_done: Option<String>,
}

fn parse_oc(text: &str) -> Section {
    let mut s = Section::default();
    let mut table: Option<(String, &str)> = None;
    let mut last_pool = String::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with("= ") {
            table = None;
            continue;
        }
        if let Some(v) = line.strip_prefix("All control plane nodes successfully updated to ") {
            s.control_plane_done = Some(v.to_string());
            continue;
        }
        if line.starts_with("Control Plane Nodes") {
            table = Some(("master".into(), "nodes"));
            last_pool = "master".into();
            continue;
        }
        if let Some(pool) = line.strip_prefix("Worker Pool Nodes: ") {
            table = Some((pool.to_string(), "nodes"));
            last_pool = pool.to_string();
            continue;
        }
        if line.starts_with("WORKER POOL") {
            table = Some((String::new(), "pools"));
            continue;
        }
        if let Some(rest) = line.strip_prefix("Omitted additional ") {
            s.omitted.insert(last_pool.clone(), rest.to_string());
            continue;
        }
        match &table {
            Some((_, "pools")) => s.pools.push(cells(line)),
            Some((pool, "nodes"))
                if !line.starts_with("NAME ")
                    && line != "..."
                    && !line.starts_with("Pass along ") =>
            {
                let mut row = cells(line);
                // A message's further lines: the first is compared.
                if row.len() < 5 {
                    continue;
                }
                row.resize(6, String::new());
                s.nodes.entry(pool.clone()).or_default().push(row);
            }
            _ => {}
        }
    }
    s
}

/// Our view of the same example, in the same shape.
fn ours(dir: &Path, example: &str, details: bool) -> Section {
    let files: Vec<PathBuf> = ["mcp", "node", "mc", "cv"]
        .iter()
        .map(|k| dir.join(format!("{example}-{k}.yaml")))
        .filter(|p| p.exists())
        .collect();
    let m = mco_render::load::read_manifests(&files).unwrap_or_else(|e| panic!("{example}: {e}"));
    let c = Cluster::from_manifests(m);
    let view = status(
        &c,
        &Options {
            now: "2026-01-01T00:00:00Z".parse().unwrap(),
            per_node: Duration::from_secs(15 * 60),
            pool: None,
        },
    );
    let text = render::text_with(&view, &render::TextOptions { all_nodes: details });
    let mut s = Section::default();
    let mut current: Option<String> = None;
    let mut in_pools = true;
    for line in text.lines() {
        if line.starts_with("POOL ") {
            continue;
        }
        if line.trim().is_empty() {
            in_pools = false;
            continue;
        }
        if in_pools {
            let row = cells(line);
            if row.first().map(String::as_str) != Some("master") {
                s.pools.push(row);
            }
            continue;
        }
        if let Some(name) = line
            .strip_prefix("= Pool ")
            .and_then(|l| l.strip_suffix(" ="))
        {
            current = Some(name.to_string());
            continue;
        }
        if line.starts_with("= ") {
            current = None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("Omitted additional ") {
            if let Some(p) = &current {
                s.omitted.insert(p.clone(), rest.to_string());
            }
            continue;
        }
        let Some(pool) = &current else { continue };
        if line.starts_with("NAME ") || line.contains(":  ") || line == "..." {
            continue;
        }
        if line.contains(": ") && !line.starts_with(char::is_alphanumeric) {
            continue;
        }
        let mut row = cells(line);
        if row.len() < 5 {
            continue;
        }
        row.resize(6, String::new());
        s.nodes.entry(pool.clone()).or_default().push(row);
    }
    // A control plane all Completed on one version is one line in `oc`.
    if let Some(rows) = s.nodes.get("master") {
        let version = &rows[0][3];
        if rows.iter().all(|r| r[1] == "Completed" && r[3] == *version) {
            s.control_plane_done = Some(version.clone());
            s.nodes.remove("master");
        }
    }
    // `oc` prints its worker section only when a worker pool has nodes.
    if !s.nodes.keys().any(|p| p != "master") {
        s.pools.clear();
    }
    s
}

/// Where `oc` has no estimate for a node waiting its turn (`?`) and we give one from the
/// pool's maxUnavailable and the nodes ahead (`+30m`), the one deliberate difference: the
/// row is taken as `oc`'s. Returns how many rows differed so.
fn accept_refined_estimates(got: &mut Section, want: &Section) -> usize {
    let mut n = 0;
    for (pool, rows) in &mut got.nodes {
        let Some(theirs) = want.nodes.get(pool) else {
            continue;
        };
        for row in rows.iter_mut() {
            let Some(t) = theirs.iter().find(|t| t[0] == row[0]) else {
                continue;
            };
            if row[2] == "Pending" && t[4] == "?" && row[4].starts_with('+') {
                row[4] = "?".into();
                n += 1;
            }
        }
    }
    n
}

#[test]
fn worker_columns_say_what_oc_says_on_its_examples() {
    let Some(dir) = std::env::var_os("OC_STATUS_EXAMPLES").map(PathBuf::from) else {
        eprintln!(
            "SKIP: OC_STATUS_EXAMPLES is not set; `oc adm upgrade status`'s examples were not compared"
        );
        return;
    };
    let mut examples: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".detailed-output").map(str::to_string)
        })
        .collect();
    examples.sort();
    assert!(!examples.is_empty(), "no examples in {}", dir.display());
    let mut compared = 0;
    let mut refined = 0;
    let mut not_updating = 0;
    for example in &examples {
        for (details, suffix) in [(true, "detailed-output"), (false, "output")] {
            let want_text = std::fs::read_to_string(dir.join(format!("{example}.{suffix}")))
                .unwrap_or_else(|e| panic!("{example}.{suffix}: {e}"));
            // `oc` shows nothing outside a release update; we show the MCO's rollouts then too.
            if want_text.starts_with("The cluster is not updating.") {
                not_updating += 1;
                continue;
            }
            let want = parse_oc(&want_text);
            let mut got = ours(&dir, example, details);
            refined += accept_refined_estimates(&mut got, &want);
            assert_eq!(got, want, "{example}.{suffix}");
            compared += 1;
        }
    }
    eprintln!(
        "{compared} outputs of {} examples compared ({not_updating} not, the cluster not updating); {refined} Pending nodes' `?` estimated",
        examples.len()
    );
    assert!(compared > 0);
}
