//! Where each value of a decoded YAML or JSON document stands in its file: the 1-based line and
//! column of every node, keyed by its JSON pointer (RFC 6901: `/spec/config/storage/files/0/mode`).
//! The YAML decoder fills it; findings about a field (unknown fields, type errors, lints) read the
//! line of the field from it instead of the line of the document.

use std::collections::BTreeMap;

/// A line and column in a file, both 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column.
    pub column: usize,
}

/// The position of every node of one document, by JSON pointer (`""` is the document itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Positions {
    by_pointer: BTreeMap<String, Position>,
}

impl Positions {
    /// Records where the node at `pointer` starts (a mapping value: where its key starts).
    pub fn insert(&mut self, pointer: String, at: Position) {
        self.by_pointer.insert(pointer, at);
    }

    /// Where the node at `pointer` starts; for a pointer into something absent (a field that
    /// is missing, an index past the end), where its nearest present ancestor starts. `None`
    /// when nothing was recorded (JSON documents, or manifests built in memory).
    pub fn position_of(&self, pointer: &str) -> Option<Position> {
        let mut p = pointer;
        loop {
            if let Some(at) = self.by_pointer.get(p) {
                return Some(*at);
            }
            if p.is_empty() {
                return None;
            }
            p = p.rfind('/').map_or("", |i| &p[..i]);
        }
    }

    /// The line of [`Positions::position_of`].
    pub fn line_of(&self, pointer: &str) -> Option<usize> {
        self.position_of(pointer).map(|p| p.line)
    }

    /// The positions under `prefix` (a JSON pointer), re-rooted there: `/items/0/spec` under
    /// `/items/0` is `/spec`.
    pub fn under(&self, prefix: &str) -> Positions {
        let by_pointer = self
            .by_pointer
            .iter()
            .filter_map(|(k, v)| {
                let rest = k.strip_prefix(prefix)?;
                (rest.is_empty() || rest.starts_with('/')).then(|| (rest.to_string(), *v))
            })
            .collect();
        Positions { by_pointer }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.by_pointer.is_empty()
    }

    /// Every recorded pointer with its position, in pointer order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Position)> {
        self.by_pointer.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

/// The JSON pointer of a dotted field path as findings print it (`spec.config.storage.files[0].mode`
/// gives `/spec/config/storage/files/0/mode`); `~` and `/` inside a key are escaped as RFC 6901 says.
pub fn pointer_of_path(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        let key_end = rest.find('[').unwrap_or(rest.len());
        let key = &rest[..key_end];
        if !key.is_empty() {
            out.push('/');
            out.push_str(&key.replace('~', "~0").replace('/', "~1"));
        }
        rest = &rest[key_end..];
        while let Some(close) = rest.find(']') {
            out.push('/');
            out.push_str(rest.get(1..close).unwrap_or(""));
            rest = &rest[close + 1..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_falls_back_to_its_nearest_ancestor() {
        let mut p = Positions::default();
        p.insert(String::new(), Position { line: 3, column: 1 });
        p.insert("/spec".into(), Position { line: 6, column: 1 });
        p.insert(
            "/spec/kernelArguments".into(),
            Position { line: 7, column: 3 },
        );
        assert_eq!(p.line_of("/spec/kernelArguments"), Some(7));
        assert_eq!(p.line_of("/spec/kernelArguments/4"), Some(7));
        assert_eq!(p.line_of("/spec/fips"), Some(6));
        assert_eq!(p.line_of("/metadata/name"), Some(3));
        assert_eq!(Positions::default().line_of("/spec"), None);
    }

    #[test]
    fn dotted_paths_become_pointers() {
        assert_eq!(
            pointer_of_path("spec.config.storage.files[0].mode"),
            "/spec/config/storage/files/0/mode"
        );
        assert_eq!(
            pointer_of_path("spec.kernelArguments"),
            "/spec/kernelArguments"
        );
        assert_eq!(pointer_of_path("a[1][2].b"), "/a/1/2/b");
        assert_eq!(pointer_of_path(""), "");
    }
}
