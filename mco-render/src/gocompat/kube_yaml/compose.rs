//! A YAML document's node tree, built from the parser's events as gopkg.in/yaml.v2's parser
//! builds it: only the first document of the text, anchors bound when their node starts (so a
//! node can hold an alias to itself), aliases bound to the latest node of their anchor, and
//! parse errors worded as that library words them (`line N: problem`, the line counted its way).

use libyaml_safer::{ErrorKind, EventData, Mark, Parser, ScalarStyle};

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
    /// The deepest nesting of collections in the text.
    pub max_depth: usize,
    /// Whether the text holds an alias (its value may nest deeper than the text).
    pub has_alias: bool,
}

/// A YAML error: the library's message (without the `yaml: ` prefix, with the line number
/// the library prints, if any) and the 1-based line of the document text it is at, when known.
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

    /// An error at the 0-based line `line0` of the document.
    pub(crate) fn at(message: impl Into<String>, line0: usize) -> Self {
        ParseError {
            message: message.into(),
            line: Some(line0 + 1),
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
    let message = if line != 0 {
        format!("line {line}: {problem}")
    } else {
        problem.to_string()
    };
    ParseError {
        message,
        line: e
            .problem_mark()
            .or_else(|| e.context_mark())
            .map(|m| m.line as usize + 1),
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
            let message = if i == 0 {
                problem.to_string()
            } else {
                format!("line {i}: {problem}")
            };
            return Err(ParseError::at(message, i));
        }
        return Ok(());
    }
    Ok(())
}

/// yaml.v2's port of libyaml predates the `\\/` escape (YAML 1.2): a double-quoted scalar
/// holding it is refused as that library refuses it (a scanner error at the backslash).
fn check_escapes(text: &str, start: &Mark, end: &Mark) -> Result<(), ParseError> {
    let Some(source) = text.get(start.index as usize..end.index as usize) else {
        return Ok(());
    };
    let mut line = start.line as usize;
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '\\' => match chars.next() {
                Some('/') => {
                    let problem = "found unknown escape character";
                    // The problem's line (from the second line on), else the scalar's.
                    let named = if line != 0 {
                        line + 1
                    } else {
                        start.line as usize
                    };
                    let message = if named == 0 {
                        problem.to_string()
                    } else {
                        format!("line {named}: {problem}")
                    };
                    return Err(ParseError::at(message, line));
                }
                Some('\n') => line += 1,
                _ => {}
            },
            _ => {}
        }
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
    // yaml.v2 reads `,`, `[` and `]` as part of a tag (`[!x, y]` is the tag `!x,` on `y`);
    // libyaml ends a tag there inside a flow collection (and its port panics on `!x,`). They
    // are given to it %-escaped, which a tag may hold.
    let tagged = escape_tags(text);
    let text = tagged.as_deref().unwrap_or(text);
    // The parser must not take the program down: a panic in it is reported as an error.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compose_retrying(text)))
        .unwrap_or_else(|_| {
            Err(ParseError::plain(
                "did not find expected whitespace or line break",
            ))
        })
}

/// `text` with `,`, `[` and `]` inside tags %-escaped, or `None` when no tag holds one. A tag
/// is a `!` starting a node: after a line's indentation, a flow indicator, or an indicator
/// (`:`, `-`, `?`) and a space; quoted scalars and comments are skipped, verbatim tags
/// (`!<...>`) left as they are.
fn escape_tags(text: &str) -> Option<String> {
    if !text.contains('!') {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    // Whether blanks (or a line start) came last, whether the last non-blank character was an
    // indicator a node may follow (or none came yet on the line), and the flow level.
    let mut blank_after = true;
    let mut indicator = true;
    let mut flow = 0usize;
    let blank_at = |j: usize| chars.get(j).is_none_or(|c| c.is_whitespace());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // A node may start here: at a line's start or after an indicator (blanks between).
        let token_start = indicator;
        match c {
            '\n' => {
                blank_after = true;
                indicator = true;
            }
            ' ' | '\t' | '\r' => blank_after = true,
            '#' if blank_after => {
                while i + 1 < chars.len() && chars[i + 1] != '\n' {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            '\'' | '"' if token_start => {
                out.push(c);
                i += 1;
                while i < chars.len() {
                    let q = chars[i];
                    if q == '\\' && c == '"' {
                        out.push(q);
                        i += 1;
                        if let Some(&n) = chars.get(i) {
                            out.push(n);
                        }
                    } else if q == c {
                        if c == '\'' && chars.get(i + 1) == Some(&'\'') {
                            out.push(q);
                            i += 1;
                            out.push(q);
                        } else {
                            break;
                        }
                    } else {
                        out.push(q);
                    }
                    i += 1;
                }
                blank_after = false;
                indicator = false;
            }
            '!' if token_start && chars.get(i + 1) != Some(&'<') => {
                while i < chars.len() && !chars[i].is_whitespace() {
                    match chars[i] {
                        ',' => out.push_str("%2C"),
                        '[' => out.push_str("%5B"),
                        ']' => out.push_str("%5D"),
                        other => {
                            out.push(other);
                            i += 1;
                            continue;
                        }
                    }
                    changed = true;
                    i += 1;
                }
                blank_after = false;
                indicator = false;
                continue;
            }
            '[' | '{' if token_start => {
                flow += 1;
                blank_after = false;
                indicator = true;
            }
            ']' | '}' if flow > 0 => {
                flow -= 1;
                blank_after = false;
                indicator = false;
            }
            ',' if flow > 0 => {
                blank_after = false;
                indicator = true;
            }
            ':' => {
                blank_after = false;
                // In a flow collection a value may follow a `:` directly (`{"a":"b"}`).
                indicator = blank_at(i + 1) || flow > 0;
            }
            '-' | '?' if token_start => {
                blank_after = false;
                indicator = blank_at(i + 1);
            }
            _ => {
                blank_after = false;
                indicator = false;
            }
        }
        if let Some(&ch) = chars.get(i) {
            out.push(ch);
        }
        i += 1;
    }
    changed.then_some(out)
}

fn compose_retrying(text: &str) -> Result<Tree, ParseError> {
    let mut current = std::borrow::Cow::Borrowed(text);
    let mut substituted = false;
    for _ in 0..MAX_COLON_RETRIES {
        match compose_once(&current) {
            Ok(mut tree) => {
                if substituted {
                    restore_colons(&mut tree);
                }
                return Ok(tree);
            }
            Err(Failure {
                colon_at: Some(at), ..
            }) if current.get(at..).is_some_and(|rest| rest.starts_with(':'))
                && !text.contains(COLON_STAND_IN) =>
            {
                let mut t = current.into_owned();
                t.replace_range(at..at + 1, &COLON_STAND_IN.to_string());
                current = std::borrow::Cow::Owned(t);
                substituted = true;
            }
            Err(f) => return Err(f.error),
        }
    }
    compose_once(&current).map_err(|f| f.error)
}

/// A plain scalar inside a flow collection with a `:` right before a flow indicator
/// (`{source: data:,x}`): yaml.v2 keeps the `:` in the scalar and ends it at the indicator,
/// libyaml refuses the `:`. The `:` is read as this stand-in, then put back.
const COLON_STAND_IN: char = '\u{E000}';
const MAX_COLON_RETRIES: usize = 64;

fn restore_colons(tree: &mut Tree) {
    for node in &mut tree.nodes {
        if let NodeKind::Scalar { value, .. } = &mut node.kind {
            if value.contains(COLON_STAND_IN) {
                *value = value.replace(COLON_STAND_IN, ":");
            }
        }
    }
}

/// A parse failure, and where the `:` libyaml refuses inside a flow scalar stands.
struct Failure {
    error: ParseError,
    colon_at: Option<usize>,
}

impl From<ParseError> for Failure {
    fn from(error: ParseError) -> Self {
        Failure {
            error,
            colon_at: None,
        }
    }
}

fn compose_once(text: &str) -> Result<Tree, Failure> {
    let mut input = text.as_bytes();
    let mut parser = Parser::new();
    parser.set_input_string(&mut input);
    let mut next = move || {
        parser.parse().map_err(|e| Failure {
            error: parse_error(&e),
            colon_at: (e.problem() == "found unexpected ':'"
                && e.context() == Some("while scanning a plain scalar"))
            .then(|| e.problem_mark().map(|m| m.index as usize))
            .flatten(),
        })
    };
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
                style,
                ..
            } => {
                if style == ScalarStyle::DoubleQuoted {
                    check_escapes(text, &event.start_mark, &event.end_mark)?;
                }
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
                    return Err(ParseError::at(
                        format!("unknown anchor '{anchor}' referenced"),
                        line,
                    )
                    .into());
                };
                tree.has_alias = true;
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
                    // A scanner error: its line is named from the second line on.
                    let problem = format!("exceeded max depth of {MAX_DEPTH}");
                    let message = if line == 0 {
                        problem
                    } else {
                        format!("line {}: {problem}", line + 1)
                    };
                    return Err(ParseError::at(message, line).into());
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
                tree.max_depth = tree.max_depth.max(stack.len() + 1);
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
                None => return Err(ParseError::plain("unexpected end of a collection").into()),
            },
            EventData::DocumentEnd { .. } => break,
            _ => {
                return Err(ParseError::plain(
                    "attempted to go past the end of stream; corrupted value?",
                )
                .into())
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
