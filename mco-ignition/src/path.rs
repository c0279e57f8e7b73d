//! JSON paths that locate a problem inside a config (`$.storage.files.0.path`).

use std::borrow::Cow;
use std::fmt;

/// Go's `path.Clean` (Unix paths): the shortest lexically equivalent path.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// One step of a [`JsonPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// An object key (borrowed when it is a schema field name, as in validation walks).
    Key(Cow<'static, str>),
    /// A list index.
    Index(usize),
}

/// A path from the config root to a value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonPath(pub Vec<Step>);

impl JsonPath {
    /// The root path `$`.
    pub fn root() -> Self {
        JsonPath(Vec::new())
    }

    /// This path extended by a key.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Step::Key(Cow::Owned(k.to_string())));
        p
    }

    /// This path extended by an index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Step::Index(i));
        p
    }

    /// Builds a path from dotted segments, numbers becoming indexes (`storage.files.0`).
    pub fn parse_dotted(s: &str) -> Self {
        let s = s.strip_prefix("$").unwrap_or(s);
        JsonPath(
            s.split('.')
                .filter(|p| !p.is_empty())
                .map(|p| match p.parse::<usize>() {
                    Ok(i) => Step::Index(i),
                    Err(_) => Step::Key(Cow::Owned(p.to_string())),
                })
                .collect(),
        )
    }

    /// The same path below a prefix, for locating a config inside a larger document.
    pub fn prefixed(&self, prefix: &JsonPath) -> Self {
        let mut p = prefix.clone();
        p.0.extend(self.0.iter().cloned());
        p
    }

    /// The path in bracket form (`spec.config.storage.files[2].path`), for people.
    pub fn to_bracketed(&self) -> String {
        let mut out = String::new();
        for step in &self.0 {
            match step {
                Step::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Step::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

impl serde::Serialize for JsonPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl fmt::Display for JsonPath {
    /// Ignition's form: `$.storage.files.0.path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for step in &self.0 {
            match step {
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(i) => write!(f, ".{i}")?,
            }
        }
        Ok(())
    }
}
