//! Where each node of a Butane config starts (line and column, as yaml.v3 reports them),
//! found by its Butane path (`storage.files.2.path`).
//!
//! A line scanner over block-style YAML, which is what configs are written in: mappings,
//! sequences (`- `), block scalars (`|`, `>`), quoted and flow scalars on one line. A node's
//! position is where its first token starts: a mapping's first key, a sequence's first `-`.

use std::collections::HashMap;

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
}

/// The positions of a config's keys and values by Butane path (segments joined with `.`).
#[derive(Debug, Default)]
pub struct Locations {
    keys: HashMap<String, Pos>,
    values: HashMap<String, Pos>,
    /// Every key of a block mapping, in order: the mapping's path, the key, its line.
    key_lines: Vec<(String, String, usize)>,
    /// The items of one-line flow sequences (`[a, b]`), by path.
    pub flow_items: std::collections::HashSet<String>,
}

impl Locations {
    /// Where the key naming `path` starts.
    pub fn key(&self, path: &str) -> Option<Pos> {
        self.keys.get(path).copied()
    }
    /// Where the value at `path` starts.
    pub fn value(&self, path: &str) -> Option<Pos> {
        self.values.get(path).copied()
    }
    /// The keys given twice in the mapping at `parent`, as yaml.v3 reports them: each pair of
    /// equal keys (the key, the earlier line, the later line), by the earlier key's place,
    /// then the later's.
    pub fn duplicate_keys(&self, parent: &str) -> Vec<(String, usize, usize)> {
        let keys: Vec<(&str, usize)> = self
            .key_lines
            .iter()
            .filter(|(p, _, _)| p == parent)
            .map(|(_, k, l)| (k.as_str(), *l))
            .collect();
        let mut pairs = Vec::new();
        for (i, (k, first)) in keys.iter().enumerate() {
            for (k2, second) in &keys[i + 1..] {
                if k == k2 {
                    pairs.push((k.to_string(), *first, *second));
                }
            }
        }
        pairs
    }

    /// The mappings holding a key twice.
    pub fn mappings_with_duplicates(&self) -> std::collections::HashSet<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = std::collections::HashSet::new();
        for (p, k, _) in &self.key_lines {
            if !seen.insert((p.as_str(), k.as_str())) {
                out.insert(p.clone());
            }
        }
        out
    }

    /// Every value's path and position.
    pub fn values(&self) -> impl Iterator<Item = (&str, Pos)> {
        self.values.iter().map(|(p, pos)| (p.as_str(), *pos))
    }
}

/// Scans the flow collection (`[...]`, `{...}`) opening at byte `open` of `line`, recording
/// the positions of its keys and values under `path`; `None` when it does not close on this
/// line or holds what this scanner does not read (anchors, tags, nested quotes in keys).
fn scan_flow(
    line: &str,
    open: usize,
    path: &str,
    line_no: usize,
    loc: &mut Locations,
) -> Option<usize> {
    let b = line.as_bytes();
    let map = b[open] == b'{';
    let close = if map { b'}' } else { b']' };
    let skip_ws = |mut i: usize| {
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        i
    };
    // The end of a quoted scalar starting at `i`.
    let quoted_end = |i: usize| -> Option<usize> {
        let q = b[i];
        let mut j = i + 1;
        while j < b.len() {
            if b[j] == q {
                if q == b'\'' && b.get(j + 1) == Some(&b'\'') {
                    j += 2;
                    continue;
                }
                return Some(j + 1);
            }
            if q == b'"' && b[j] == b'\\' {
                j += 1;
            }
            j += 1;
        }
        None
    };
    let pos = |i: usize| Pos {
        line: line_no,
        column: i + 1,
    };
    let mut i = skip_ws(open + 1);
    let mut index = 0;
    loop {
        match *b.get(i)? {
            c if c == close => return Some(i + 1),
            b',' | b'#' | b'&' | b'*' | b'!' | b'?' => return None,
            _ => {}
        }
        let item_path = if map {
            // The key, up to `:`.
            let (key, after) = if matches!(b[i], b'"' | b'\'') {
                let end = quoted_end(i)?;
                (line[i + 1..end - 1].to_string(), end)
            } else {
                let mut j = i;
                while j < b.len()
                    && !(b[j] == b':'
                        && b.get(j + 1)
                            .is_none_or(|c| matches!(c, b' ' | b',' | b'}' | b']')))
                {
                    if matches!(b[j], b',' | b'{' | b'}' | b'[' | b']') {
                        return None;
                    }
                    j += 1;
                }
                (line[i..j].trim_end().to_string(), j)
            };
            let key_path = join(path, &key);
            loc.keys.insert(key_path.clone(), pos(i));
            loc.key_lines.push((path.to_string(), key, line_no));
            i = skip_ws(after);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i = skip_ws(i + 1);
            if matches!(b.get(i), Some(b',')) || b.get(i) == Some(&close) {
                // An empty value.
                if b[i] == b',' {
                    i = skip_ws(i + 1);
                }
                continue;
            }
            key_path
        } else {
            let p = join(path, &index.to_string());
            index += 1;
            p
        };
        loc.values.insert(item_path.clone(), pos(i));
        i = match b[i] {
            b'[' | b'{' => scan_flow(line, i, &item_path, line_no, loc)?,
            b'"' | b'\'' => {
                loc.flow_items.insert(item_path);
                quoted_end(i)?
            }
            _ => {
                loc.flow_items.insert(item_path);
                let mut j = i;
                while j < b.len() && !matches!(b[j], b',' | b']' | b'}') {
                    if b[j] == b':' && b.get(j + 1).is_none_or(|c| *c == b' ') {
                        // An implicit mapping inside a sequence.
                        return None;
                    }
                    j += 1;
                }
                j
            }
        };
        i = skip_ws(i);
        match *b.get(i)? {
            b',' => i = skip_ws(i + 1),
            c if c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

struct Frame {
    /// Column (0-based) of the mapping's keys or the sequence's dashes.
    indent: usize,
    path: String,
    seq: bool,
    next_index: usize,
}

fn join(parent: &str, seg: &str) -> String {
    if parent.is_empty() {
        seg.to_string()
    } else {
        format!("{parent}.{seg}")
    }
}

/// The key of `key: value` text (unquoted), and the byte offset where the value starts.
fn split_key(text: &str) -> Option<(String, Option<usize>)> {
    let bytes = text.as_bytes();
    if bytes.first().is_some_and(|b| matches!(b, b'"' | b'\'')) {
        let q = bytes[0];
        let end = text[1..].find(q as char)? + 1;
        let rest = &text[end + 1..];
        let rest_trim = rest.trim_start();
        let after = rest_trim.strip_prefix(':')?;
        let key = text[1..end].to_string();
        return Some((key, value_start(after, text.len() - after.len())));
    }
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') {
            let key = text[..i].trim_end().to_string();
            return Some((key, value_start(&text[i + 1..], i + 1)));
        }
        if bytes[i] == b' ' && bytes.get(i + 1) == Some(&b'#') {
            return None;
        }
        i += 1;
    }
    None
}

/// The byte offset of the `:` ending the key that starts `text`.
fn colon_after_key(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.first().is_some_and(|b| matches!(b, b'"' | b'\'')) {
        let end = text[1..].find(bytes[0] as char)? + 1;
        return text[end + 1..].find(':').map(|c| end + 1 + c);
    }
    (0..bytes.len()).find(|&i| bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' '))
}

fn value_start(after: &str, offset: usize) -> Option<usize> {
    let trimmed = after.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        None
    } else {
        Some(offset + after.len() - trimmed.len())
    }
}

/// Scans `text` for node positions.
pub fn locate(text: &str) -> Locations {
    let mut loc = Locations::default();
    let mut stack: Vec<Frame> = Vec::new();
    // (path, key column) of a key whose value starts on a later line.
    let mut pending: Option<(String, usize)> = None;
    // Lines indented deeper than this belong to a block scalar.
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.split('\n').enumerate() {
        let line_no = n + 1;
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        if let Some(bi) = block_scalar {
            if content.is_empty() || indent > bi {
                continue;
            }
            block_scalar = None;
        }
        if content.is_empty() || content.starts_with('#') || content.starts_with("---") {
            continue;
        }
        let item_line = content == "-" || content.starts_with("- ");
        let here = Pos {
            line: line_no,
            column: indent + 1,
        };
        match pending.take() {
            Some((p, kc)) if indent > kc || (indent == kc && item_line) => {
                loc.values.insert(p.clone(), here);
                stack.push(Frame {
                    indent,
                    path: p,
                    seq: item_line,
                    next_index: 0,
                });
            }
            _ => {
                // Items of a sequence may sit at their key's column.
                while let Some(top) = stack.last() {
                    if indent > top.indent || (indent == top.indent && top.seq == item_line) {
                        break;
                    }
                    stack.pop();
                }
            }
        }
        let mut col = indent;
        let mut rest = content;
        loop {
            let is_item = rest == "-" || rest.starts_with("- ");
            let pos = Pos {
                line: line_no,
                column: col + 1,
            };
            let Some(top) = stack.last_mut() else {
                // The document's root mapping.
                stack.push(Frame {
                    indent: col,
                    path: String::new(),
                    seq: false,
                    next_index: 0,
                });
                continue;
            };
            if is_item && top.seq {
                let path = join(&top.path, &top.next_index.to_string());
                top.next_index += 1;
                let after = &rest[1..];
                let trimmed = after.trim_start();
                let skip = 1 + after.len() - trimmed.len();
                if trimmed.is_empty() || trimmed.starts_with('#') {
                    pending = Some((path, col + 1));
                    break;
                }
                let vcol = col + skip;
                loc.values.insert(
                    path.clone(),
                    Pos {
                        line: line_no,
                        column: vcol + 1,
                    },
                );
                if trimmed.starts_with('[') || trimmed.starts_with('{') {
                    scan_flow(line, vcol, &path, line_no, &mut loc);
                    break;
                }
                if trimmed.starts_with("- ") || split_key(trimmed).is_some() {
                    stack.push(Frame {
                        indent: vcol,
                        path,
                        seq: trimmed.starts_with("- "),
                        next_index: 0,
                    });
                    col = vcol;
                    rest = trimmed;
                    continue;
                }
                if trimmed.starts_with('|') || trimmed.starts_with('>') {
                    block_scalar = Some(col);
                }
                break;
            }
            let Some((key, vstart)) = split_key(rest) else {
                break;
            };
            let path = join(&top.path, &key);
            loc.key_lines.push((top.path.clone(), key.clone(), line_no));
            loc.keys.insert(path.clone(), pos);
            match vstart {
                None => {
                    // An empty value starts right after the colon, until a nested block
                    // says otherwise.
                    if let Some(colon) = colon_after_key(rest) {
                        loc.values.insert(
                            path.clone(),
                            Pos {
                                line: line_no,
                                column: col + colon + 2,
                            },
                        );
                    }
                    pending = Some((path, col));
                }
                Some(v) => {
                    loc.values.insert(
                        path.clone(),
                        Pos {
                            line: line_no,
                            column: col + v + 1,
                        },
                    );
                    let value = &rest[v..];
                    if value.starts_with('|') || value.starts_with('>') {
                        block_scalar = Some(col);
                    }
                    if value.starts_with('[') || value.starts_with('{') {
                        scan_flow(line, col + v, &path, line_no, &mut loc);
                    }
                }
            }
            break;
        }
    }
    loc
}
