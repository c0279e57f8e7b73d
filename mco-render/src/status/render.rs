//! The text view: the pools table and a block per pool (its move, counts and nodes) with the
//! columns and words of `oc adm upgrade status`'s worker section, then the findings, stuck ones
//! first, each with what to do.

use super::{
    ClusterStatus, NodeAssessment, NodePhase, NodeStatus, PoolAssessment, PoolStatus, Severity,
};
use jiff::Timestamp;
use serde::Serialize;
use std::fmt::Write;

/// Columns as Go's `tabwriter` (padding 3) aligns them; the last column is not padded and
/// lines carry no trailing blanks.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] + 3 - cell.chars().count();
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn cells(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn with_version(config: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{config} ({v})"),
        None => config.to_string(),
    }
}

/// How much of the view the text shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Every node of every pool (`--details nodes`). Otherwise, as `oc adm upgrade status`
    /// does, a pool's first ten nodes and past them only those in an undesired state
    /// (degraded, or unavailable and not updating); the others are counted in one line.
    pub all_nodes: bool,
}

/// What `--details` adds to the view, as `oc adm upgrade status --details` names it: `none`
/// (the default), `nodes` (every node), `all` (everything there is: every node).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Details {
    /// The short view.
    #[default]
    None,
    /// Every node.
    Nodes,
    /// Everything: every node.
    All,
}

impl std::str::FromStr for Details {
    type Err = String;

    fn from_str(s: &str) -> Result<Details, String> {
        match s {
            "none" => Ok(Details::None),
            "nodes" => Ok(Details::Nodes),
            "all" => Ok(Details::All),
            _ => Err(format!("unknown details {s:?}: none, nodes or all")),
        }
    }
}

impl Details {
    /// The text options it asks for.
    pub fn text_options(self) -> TextOptions {
        TextOptions {
            all_nodes: self != Details::None,
        }
    }
}

/// How many nodes a pool lists before it lists only those in an undesired state.
const NODES_SHOWN: usize = 10;

/// The nodes past the first ten that the short view leaves out, counted as `oc` counts them.
#[derive(Default)]
struct Omitted {
    total: usize,
    completed: usize,
    available: usize,
    progressing: usize,
    outdated: usize,
    draining: usize,
    excluded: usize,
}

impl Omitted {
    fn count(&mut self, n: &NodeStatus) {
        self.total += 1;
        if n.updated {
            self.completed += 1;
        } else {
            self.outdated += 1;
        }
        if !n.unavailable {
            self.available += 1;
        }
        if n.phase == NodePhase::Draining {
            self.draining += 1;
        }
        if n.phase == NodePhase::Paused {
            self.excluded += 1;
        }
        if n.assessment == NodeAssessment::Progressing {
            self.progressing += 1;
        }
    }

    fn line(&self) -> String {
        format!(
            "...\nOmitted additional {} Total, {} Completed, {} Available, {} Progressing, {} Outdated, {} Draining, {} Excluded, and 0 Degraded nodes.\nPass along --details=nodes to see all information.\n",
            self.total,
            self.completed,
            self.available,
            self.progressing,
            self.outdated,
            self.draining,
            self.excluded
        )
    }
}

fn pool_block(out: &mut String, p: &PoolStatus, now: Timestamp, opts: &TextOptions) {
    let _ = writeln!(out, "\n= Pool {} =", p.name);
    let to = with_version(&p.to, p.to_version.as_deref());
    let config = match &p.from {
        Some(from) => format!("{} -> {to}", with_version(from, p.from_version.as_deref())),
        None if p.to.is_empty() => "none yet".to_string(),
        None => to,
    };
    let mut lines: Vec<(&str, String)> = vec![("Config", config)];
    if let Some(m) = &p.disruption {
        lines.push(("Disruption", format!("{}: {}", m.kind.as_str(), m.summary)));
    }
    let c = &p.counts;
    lines.push((
        "Pool status",
        format!(
            "{} machines, {} updated, {} degraded, {} unavailable; maxUnavailable {}",
            c.total, c.updated, c.degraded, c.unavailable, p.max_unavailable
        ),
    ));
    lines.push(("Paused", if p.paused { "yes" } else { "no" }.to_string()));
    if let Some(r) = &p.rollout {
        lines.push(("Rollout", r.clone()));
    }
    if let Some(l) = &p.layering {
        lines.push(("Layering", l.clone()));
    }
    if let Some(f) = &p.finish {
        let when = f
            .parse::<Timestamp>()
            .map(|t| format!(" (in {})", super::short_duration(t.duration_since(now))))
            .unwrap_or_default();
        lines.push(("Estimated finish", format!("{f}{when}")));
    }
    for (k, v) in lines {
        let _ = writeln!(out, "{:<18}{v}", format!("{k}:"));
    }
    if p.nodes.is_empty() {
        return;
    }
    let mut rows = vec![cells(&[
        "NAME",
        "ASSESSMENT",
        "PHASE",
        "VERSION",
        "EST",
        "MESSAGE",
    ])];
    let mut omitted = Omitted::default();
    for (i, n) in p.nodes.iter().enumerate() {
        let undesired = n.degraded || (n.unavailable && !n.updating);
        if !opts.all_nodes && i >= NODES_SHOWN && !undesired {
            omitted.count(n);
            continue;
        }
        rows.push(vec![
            n.name.clone(),
            n.assessment.as_str().to_string(),
            n.phase.as_str().to_string(),
            n.version.clone().unwrap_or_else(|| "?".into()),
            n.estimate.clone(),
            n.message.clone(),
        ]);
    }
    out.push('\n');
    out.push_str(&table(&rows));
    if omitted.total > 0 {
        out.push_str(&omitted.line());
    }
}

/// The whole view as text, each pool's nodes cut as `oc` cuts them ([`TextOptions`]).
pub fn text(s: &ClusterStatus) -> String {
    text_with(s, &TextOptions::default())
}

/// The whole view as text, showing what `opts` asks.
pub fn text_with(s: &ClusterStatus, opts: &TextOptions) -> String {
    let now: Timestamp = s.now.parse().unwrap_or(Timestamp::UNIX_EPOCH);
    let mut out = String::new();
    if let Some(from) = s.now_from {
        let _ = writeln!(out, "As of {} ({})\n", s.now, from.describe());
    }
    let mut rows = vec![cells(&["POOL", "ASSESSMENT", "COMPLETION", "STATUS"])];
    for p in &s.pools {
        rows.push(if p.assessment == PoolAssessment::Empty {
            vec![
                p.name.clone(),
                p.assessment.as_str().into(),
                String::new(),
                format!("{} Total", p.overview.total),
            ]
        } else {
            vec![
                p.name.clone(),
                p.assessment.as_str().into(),
                p.completion.clone(),
                p.status.clone(),
            ]
        });
    }
    out.push_str(&table(&rows));
    for p in &s.pools {
        pool_block(&mut out, p, now, opts);
    }
    for (severity, title) in [(Severity::Stuck, "Stuck"), (Severity::Waiting, "Waiting")] {
        let mut found = s
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .peekable();
        if found.peek().is_none() {
            continue;
        }
        let _ = writeln!(out, "\n= {title} =");
        for f in found {
            let _ = writeln!(out, "{}", f.message);
            let _ = writeln!(out, "  do: {}", f.action);
        }
    }
    if !s.stuck {
        out.push_str("\nNothing is stuck.\n");
    }
    out
}

/// How a view is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Format {
    /// Tables and findings, for a terminal ([`text`]).
    Text,
    /// The same view as a value, for programs (pretty JSON, one newline after it).
    Json,
}

/// The view as both `status` commands print it on standard output.
pub fn output(s: &ClusterStatus, format: Format) -> Result<String, serde_json::Error> {
    output_with(s, format, &TextOptions::default())
}

/// [`output`], the text showing what `opts` asks (JSON always holds every node).
pub fn output_with(
    s: &ClusterStatus,
    format: Format,
    opts: &TextOptions,
) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Text => text_with(s, opts),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(s)?),
    })
}
