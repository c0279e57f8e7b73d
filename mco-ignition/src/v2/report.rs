//! Spec 2 validation reports, printed as upstream's spec 2 report type prints them.

use std::fmt;

/// Severity of a report entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fatal.
    Error,
    /// Not fatal.
    Warning,
    /// A hint (e.g. a likely key typo).
    Info,
    /// A deprecated construct.
    Deprecated,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Error => "error",
            Kind::Warning => "warning",
            Kind::Info => "info",
            Kind::Deprecated => "deprecated",
        }
    }
}

/// Where an entry points: a byte offset in the serialised config and the highlight text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// Line (always 1 for the compact serialisation).
    pub line: usize,
    /// Column as upstream counts it: the number of bytes before the offset on its line.
    pub column: usize,
    /// The quoted source line(s) with a caret, possibly empty.
    pub highlight: String,
}

/// One report entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Severity.
    pub kind: Kind,
    /// Message text.
    pub message: String,
    /// Location, when known.
    pub position: Option<Position>,
}

impl Entry {
    /// An unlocated entry.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Entry {
            kind,
            message: message.into(),
            position: None,
        }
    }
}

/// A list of entries in the order the validator found them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Report {
    /// True when any entry is an error.
    pub fn is_fatal(&self) -> bool {
        self.entries.iter().any(|e| e.kind == Kind::Error)
    }

    /// True when any entry is a deprecation.
    pub fn is_deprecated(&self) -> bool {
        self.entries.iter().any(|e| e.kind == Kind::Deprecated)
    }

    /// Gives every unlocated entry this position.
    pub(crate) fn add_position(&mut self, pos: Option<&Position>) {
        if let Some(p) = pos {
            for e in self.entries.iter_mut().filter(|e| e.position.is_none()) {
                e.position = Some(p.clone());
            }
        }
    }

    /// Appends another report's entries.
    pub(crate) fn merge(&mut self, other: Report) {
        self.entries.extend(other.entries);
    }

    /// Adds one entry.
    pub(crate) fn add(&mut self, e: Entry) {
        self.entries.push(e);
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.position {
            Some(p) if p.line != 0 => write!(
                f,
                "{} at line {}, column {}\n{}{}",
                self.kind.as_str(),
                p.line,
                p.column,
                p.highlight,
                self.message
            ),
            _ => write!(f, "{}: {}", self.kind.as_str(), self.message),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Line, column and highlight for byte offset `pos` of `src`, as upstream computes them: the
/// bytes before `pos` are counted, the previous line (if any) and the current line up to `pos`
/// are quoted, and a caret is placed under the offset.
pub fn highlight(src: &[u8], pos: usize, with_text: bool) -> Position {
    let mut line = 1;
    let mut col = 0;
    let mut last_line: &[u8] = &[];
    let mut start = 0;
    let end = pos.min(src.len());
    for (i, b) in src[..end].iter().enumerate() {
        if *b == b'\n' {
            last_line = &src[start..i];
            start = i + 1;
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    let this_line = &src[start..end];
    let mut h = String::new();
    if with_text {
        if line > 1 {
            h.push_str(&format!(
                "{:>5}: {}\n",
                line - 1,
                String::from_utf8_lossy(last_line)
            ));
        }
        h.push_str(&format!(
            "{:>5}: {}\n",
            line,
            String::from_utf8_lossy(this_line)
        ));
        h.push_str(&" ".repeat(col + 5));
        h.push_str("^\n");
    }
    Position {
        line,
        column: col,
        highlight: h,
    }
}
