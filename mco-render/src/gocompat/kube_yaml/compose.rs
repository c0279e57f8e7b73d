//! A YAML document's node tree, built from the parser's events as gopkg.in/yaml.v2's parser
//! builds it: only the first document of the text, anchors bound when their node starts (so a
//! node can hold an alias to itself), aliases bound to the latest node of their anchor, and
//! parse errors worded as that library words them (`line N: problem`, the line counted its way).

use libyaml_safer::{ErrorKind, EventData, Parser};

/// Deeper nesting than this is refused, as the scanner upstream refuses it.
const MAX_DEPTH: usize = 10_000;

/// What a node is.
#[derive(Debug, Clone)]
pub(crate) enum NodeKind {
    /// A scalar: its text, its tag (as the parser resolved it), and whether it was plain with
    /// no tag or the non-specific `!` (which makes its type implicit).
    Scalar {
        value: String,
        tag: Option<String>,
        implicit: bool,
    },
    /// A sequence's items.
    Sequence(Vec<usize>),
    /// A mapping's keys and values, in order.
    Mapping(Vec<(usize, usize)>),
    /// An alias: the anchor's name and the node it names.
    Alias { name: String, target: usize },
}

/// A node and where it starts (0-based line and column of the document text).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub line: usize,
    pub column: usize,
}

/// A document's nodes; the root is `root` (none for an empty document).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    pub root: Option<usize>,
}

/// A YAML error: the library's message (without the `yaml: ` prefix) and, when it names one,
/// the 1-based line of the document text it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub message: String,
    pub line: Option<usize>,
}

impl ParseError {
    pub(crate) fn plain(message: impl Into<String>) -> Self {
        ParseError {
            message: message.into(),
            line: None,
        }
    }
}

/// The message upstream's parser gives for a parser error: the problem mark's 0-based line
/// for parser errors, one more for scanner errors, the context mark's line when the problem
/// is on line 0, nothing when both are 0.
fn parse_error(e: &libyaml_safer::Error) -> ParseError {
    let problem_line = e.problem_mark().map_or(0, |m| m.line as usize);
    let line = if problem_line != 0 {
        if e.kind() == ErrorKind::Scanner {
            problem_line + 1
        } else {
            problem_line
        }
    } else {
        e.context_mark().map_or(0, |m| m.line as usize)
    };
    let problem = e.problem();
    let problem = if problem.is_empty() {
        "unknown problem parsing YAML content"
    } else {
        problem
    };
    if line != 0 {
        ParseError {
            message: format!("line {line}: {problem}"),
            line: Some(line),
        }
    } else {
        ParseError::plain(problem)
    }
}

/// The library reads YAML 1.1 documents only: a `%YAML` directive naming another version
/// (1.2 among them) is refused.
fn check_version(text: &str) -> Result<(), ParseError> {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end();
        if t.is_empty() || t.starts_with('#') || t.starts_with("%TAG") {
            continue;
        }
        let Some(version) = t.strip_prefix("%YAML") else {
            return Ok(());
        };
        let version = version.split('#').next().unwrap_or("").trim();
        if version != "1.1" && version.split('.').count() == 2 {
            let problem = "found incompatible YAML document";
            return Err(if i == 0 {
                ParseError::plain(problem)
            } else {
                ParseError {
                    message: format!("line {i}: {problem}"),
                    line: Some(i),
                }
            });
        }
        return Ok(());
    }
    Ok(())
}

/// A collection being built.
enum Open {
    Sequence(usize, Vec<usize>),
    Mapping(usize, Vec<usize>),
}

/// The first document of `text` as a node tree.
pub(crate) fn compose(text: &str) -> Result<Tree, ParseError> {
    check_version(text)?;
    let mut input = text.as_bytes();
    let mut parser = Parser::new();
    parser.set_input_string(&mut input);
    let mut next = move || parser.parse().map_err(|e| parse_error(&e));
    let mut tree = Tree::default();
    // Stream start, then a document start or the stream's end.
    next()?;
    let first = next()?;
    if !matches!(first.data, EventData::DocumentStart { .. }) {
        return Ok(tree);
    }
    let mut anchors: std::collections::HashMap<String, usize> = Default::default();
    let mut stack: Vec<Open> = Vec::new();
    loop {
        let event = next()?;
        let (line, column) = (
            event.start_mark.line as usize,
            event.start_mark.column as usize,
        );
        let node = |kind| Node { kind, line, column };
        let done = match event.data {
            EventData::Scalar {
                anchor,
                tag,
                value,
                plain_implicit,
                ..
            } => {
                let id = tree.nodes.len();
                tree.nodes.push(node(NodeKind::Scalar {
                    value,
                    tag,
                    implicit: plain_implicit,
                }));
                if let Some(a) = anchor {
                    anchors.insert(a, id);
                }
                Some(id)
            }
            EventData::Alias { anchor } => {
                let Some(&target) = anchors.get(&anchor) else {
                    return Err(ParseError::plain(format!(
                        "unknown anchor '{anchor}' referenced"
                    )));
                };
                let id = tree.nodes.len();
                tree.nodes.push(node(NodeKind::Alias {
                    name: anchor,
                    target,
                }));
                Some(id)
            }
            data @ (EventData::SequenceStart { .. } | EventData::MappingStart { .. }) => {
                let mapping = matches!(data, EventData::MappingStart { .. });
                let anchor = match data {
                    EventData::SequenceStart { anchor, .. }
                    | EventData::MappingStart { anchor, .. } => anchor,
                    _ => None,
                };
                if stack.len() >= MAX_DEPTH {
                    return Err(ParseError {
                        message: format!("line {}: exceeded max depth of {MAX_DEPTH}", line + 1),
                        line: Some(line + 1),
                    });
                }
                let id = tree.nodes.len();
                tree.nodes.push(node(if mapping {
                    NodeKind::Mapping(Vec::new())
                } else {
                    NodeKind::Sequence(Vec::new())
                }));
                if let Some(a) = anchor {
                    anchors.insert(a, id);
                }
                stack.push(if mapping {
                    Open::Mapping(id, Vec::new())
                } else {
                    Open::Sequence(id, Vec::new())
                });
                None
            }
            EventData::SequenceEnd | EventData::MappingEnd => match stack.pop() {
                Some(Open::Sequence(id, items)) => {
                    tree.nodes[id].kind = NodeKind::Sequence(items);
                    Some(id)
                }
                Some(Open::Mapping(id, items)) => {
                    let pairs = items.chunks(2).map(|p| (p[0], p[1])).collect();
                    tree.nodes[id].kind = NodeKind::Mapping(pairs);
                    Some(id)
                }
                None => return Err(ParseError::plain("unexpected end of a collection")),
            },
            EventData::DocumentEnd { .. } => break,
            _ => {
                return Err(ParseError::plain(
                    "attempted to go past the end of stream; corrupted value?",
                ))
            }
        };
        if let Some(id) = done {
            match stack.last_mut() {
                Some(Open::Sequence(_, items) | Open::Mapping(_, items)) => items.push(id),
                None => tree.root = Some(id),
            }
        }
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_lines_as_upstream_does() {
        // A parser error names the 0-based line of its mark, a scanner error the 1-based one.
        let e = compose("a:\n  b: 1\n c: 2\n").err();
        assert_eq!(
            e.map(|e| e.message),
            Some("line 2: did not find expected key".to_string())
        );
        let e = compose("a:\n\tb: 1\n").err();
        assert_eq!(
            e.map(|e| e.message),
            Some("line 2: found character that cannot start any token".to_string())
        );
        let e = compose("a: b: c\n").err();
        assert_eq!(
            e.map(|e| e.message),
            Some("mapping values are not allowed in this context".to_string())
        );
    }

    #[test]
    fn reads_the_first_document_only() {
        let t = compose("a: 1\n...\nb: [\n");
        assert!(t.is_ok_and(|t| t.root.is_some()));
        assert!(compose("# nothing\n").is_ok_and(|t| t.root.is_none()));
    }
}
