//! The screen `kubectl mco status --watch` redraws: a header with the instant, a progress bar
//! per pool (its completion) with its assessment and the estimated finish, then the same view
//! as `status` prints ([`super::render::text`]) and its notes (what could not be read). A pure
//! function of the [`Cluster`] and the
//! options, so a frame is tested like any other output.

use super::{render, status, Cluster, ClusterStatus, Options, PoolAssessment, PoolStatus};
use jiff::Timestamp;
use std::fmt::Write;

/// The width of a progress bar, in characters between its brackets.
pub const BAR_WIDTH: usize = 30;

/// One frame of the watch.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// What is drawn.
    pub text: String,
    /// The view it draws.
    pub status: ClusterStatus,
}

impl Frame {
    /// Whether every pool shown is Completed (or has no node) and nothing is stuck or waiting.
    pub fn done(&self) -> bool {
        self.status.findings.is_empty()
            && self.status.pools.iter().all(|p| {
                matches!(
                    p.assessment,
                    PoolAssessment::Completed | PoolAssessment::Empty
                )
            })
    }
}

/// `[#########.....................]`: `done` of `total` filled (an empty pool is full).
pub fn bar(done: usize, total: usize) -> String {
    let filled = (done.min(total) * BAR_WIDTH)
        .checked_div(total)
        .unwrap_or(BAR_WIDTH);
    format!("[{}{}]", "#".repeat(filled), ".".repeat(BAR_WIDTH - filled))
}

/// The estimate column: `finish 11:45Z (in 1h45m)`, `done`, or why there is none.
fn finish(p: &PoolStatus, now: Timestamp, stuck: bool) -> String {
    if p.overview.outdated == 0 {
        return "done".into();
    }
    if let Some(f) = &p.finish {
        return match f.parse::<Timestamp>() {
            Ok(t) => format!(
                "finish {f} (in {})",
                super::short_duration(t.duration_since(now))
            ),
            Err(_) => format!("finish {f}"),
        };
    }
    if p.paused {
        "no estimate: paused".into()
    } else if stuck {
        "no estimate: stuck".into()
    } else {
        "no estimate yet".into()
    }
}

/// The progress lines of a view: one per pool.
pub fn progress(s: &ClusterStatus) -> String {
    let now: Timestamp = s.now.parse().unwrap_or(Timestamp::UNIX_EPOCH);
    let rows: Vec<Vec<String>> = s
        .pools
        .iter()
        .map(|p| {
            let stuck = s
                .findings
                .iter()
                .any(|f| f.pool == p.name && f.severity == super::Severity::Stuck);
            let o = &p.overview;
            vec![
                p.name.clone(),
                bar(o.total - o.outdated, o.total),
                p.completion.clone(),
                p.assessment.as_str().to_string(),
                finish(p, now, stuck),
            ]
        })
        .collect();
    render::table(&rows)
}

/// The frame of `c` at `opts.now`, its nodes shown as `text` asks.
pub fn frame(c: &Cluster, opts: &Options, text_opts: &render::TextOptions) -> Frame {
    let s = status(c, opts);
    let mut text = String::new();
    let _ = writeln!(text, "Every change: kubectl mco status --watch   {}", s.now);
    text.push('\n');
    text.push_str(&progress(&s));
    text.push('\n');
    text.push_str(&render::text_with(&s, text_opts));
    for n in &s.notes {
        let _ = writeln!(text, "warning: {n}");
    }
    Frame { text, status: s }
}
