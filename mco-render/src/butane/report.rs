//! Butane's findings: errors and warnings located by Butane path and source position, printed
//! as Butane prints them (a snippet of two lines either side, the node underlined up to the
//! next white space).

use super::locate::Pos;
use std::fmt::Write as _;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Translation fails.
    Error,
    /// Translation succeeds (fails under `--strict`).
    Warning,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Error or warning.
    pub severity: Severity,
    /// The Butane path, `$.storage.files.0.path` (empty for the whole config).
    pub path: String,
    /// Where in the source the node starts, when known.
    pub pos: Option<Pos>,
    /// The message, worded as Butane words it.
    pub message: String,
}

/// The findings of one translation, in Butane's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Report {
    /// Whether any entry is an error.
    pub fn is_fatal(&self) -> bool {
        self.entries.iter().any(|e| e.severity == Severity::Error)
    }

    /// The entries as Butane prints them for the input named `file_name`.
    pub fn render(&self, file_name: &str, source: &str) -> String {
        let lines: Vec<&str> = source.split('\n').collect();
        let mut out = String::new();
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            render_entry(&mut out, e, file_name, &lines);
        }
        out
    }
}

fn render_entry(out: &mut String, e: &Entry, file_name: &str, lines: &[&str]) {
    let kind = match e.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let path = if e.path.is_empty() {
        String::new()
    } else {
        format!("[{}]", e.path)
    };
    let shown = e.pos.filter(|p| {
        p.line >= 1 && p.line <= lines.len() && p.column >= 1 && p.column <= lines[p.line - 1].len()
    });
    let Some(pos) = shown else {
        // vcontext's plain form: the path and the position, when known.
        let mut at = Vec::new();
        if !e.path.is_empty() {
            at.push(e.path.clone());
        }
        if let Some(p) = e.pos {
            at.push(format!("line {} col {}", p.line, p.column));
        }
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" at {}", at.join(", "))
        };
        let _ = writeln!(out, "{kind}{at}: {}", e.message);
        return;
    };
    let _ = writeln!(out, "{kind}{path}:");
    let _ = writeln!(out, "  --> {file_name}:{}:{}", pos.line, pos.column);
    let first = pos.line.saturating_sub(2).max(1);
    let last = (pos.line + 2).min(lines.len());
    let width = last.to_string().len();
    let gutter = " ".repeat(width);
    let _ = writeln!(out, " {gutter} |");
    for n in first..=last {
        let text = lines[n - 1];
        let _ = writeln!(out, " {n:>width$} | {text}");
        if n == pos.line {
            let start = pos.column - 1;
            let rest = text.get(start..).unwrap_or("");
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let _ = writeln!(
                out,
                " {gutter} | {}{} {}",
                " ".repeat(start),
                "^".repeat(len),
                e.message
            );
        }
    }
    let _ = writeln!(out, " {gutter} |");
}
