//! A node tree decoded into Go's generic values as gopkg.in/yaml.v2 decodes it into an
//! `interface{}`: mappings are `map[interface{}]interface{}` (a key of another Go type is
//! another key: `1`, `"1"` and `1.0` are three), a repeated key's last value wins, a merge key
//! `<<` writes its mapping (or its list of mappings, the first one winning) into the mapping at
//! its place, aliases are expanded (an alias inside its own anchor is refused), and a document
//! whose aliases make it grow too much is refused as "excessive aliasing".

use super::compose::{Node, NodeKind, ParseError, Tree};
use super::resolve::{resolve, Scalar, BINARY_TAG, MERGE_TAG};
use crate::gocompat::quote::go_quote;

/// Values nested deeper than this are refused. Upstream's limit is the JSON decoder's 10000
/// levels; this reader keeps the recursion of its decoding and of every later reader of the
/// value (typed decoding, printing) within a thread's stack. No manifest comes near it.
pub(crate) const MAX_VALUE_DEPTH: usize = 1000;

/// Where a value was written: the 0-based line and column of the document text (a mapping
/// value: of its key).
pub(crate) type At = (usize, usize);

/// A Go value of the decoded document.
#[derive(Debug, Clone)]
pub(crate) enum GoValue {
    Scalar(Scalar),
    /// A `!!binary` string: its bytes, not necessarily UTF-8.
    Bytes(Vec<u8>),
    Seq(Vec<(GoValue, At)>),
    /// The entries in the order they were first set.
    Map(Vec<(GoValue, GoValue, At)>),
}

impl GoValue {
    /// Go's `==` on two map keys (of the kinds a key can be).
    fn same_key(&self, other: &GoValue) -> bool {
        match (self, other) {
            (GoValue::Scalar(a), GoValue::Scalar(b)) => match (a, b) {
                (Scalar::Float(x), Scalar::Float(y)) => x == y,
                _ => a == b,
            },
            (GoValue::Bytes(a), GoValue::Bytes(b)) => a == b,
            (GoValue::Scalar(Scalar::Str(a)), GoValue::Bytes(b))
            | (GoValue::Bytes(b), GoValue::Scalar(Scalar::Str(a))) => a.as_bytes() == b.as_slice(),
            _ => false,
        }
    }
}

/// Go's `%#v` of a decoded value (the library's "invalid map key" message and the converter's
/// "unsupported map key" one show it).
pub(crate) fn go_syntax(v: &GoValue) -> String {
    match v {
        GoValue::Scalar(s) => match s {
            Scalar::Null => "interface {}(nil)".into(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Uint(u) => format!("0x{u:x}"),
            Scalar::Float(f) => {
                let mut out = Vec::new();
                crate::gocompat::strconv::push_go_float(*f, &mut out);
                match String::from_utf8_lossy(&out).as_ref() {
                    ".inf" => "+Inf".into(),
                    "-.inf" => "-Inf".into(),
                    ".nan" => "NaN".into(),
                    other => other.to_string(),
                }
            }
            Scalar::Str(s) => go_quote(s),
        },
        GoValue::Bytes(b) => go_quote(&String::from_utf8_lossy(b)),
        GoValue::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items
                .iter()
                .map(|(v, _)| go_syntax(v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        GoValue::Map(entries) => {
            let mut parts: Vec<String> = entries
                .iter()
                .map(|(k, v, _)| format!("{}:{}", go_syntax(k), go_syntax(v)))
                .collect();
            parts.sort();
            format!("map[interface {{}}]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// The library's alias budget: the share of decoding steps allowed to come from aliases.
fn allowed_alias_ratio(decode_count: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

/// A Go map being filled: its entries in the order first set, string keys indexed.
#[derive(Default)]
struct MapBuilder {
    entries: Vec<(GoValue, GoValue, At)>,
    strings: std::collections::HashMap<String, usize>,
}

impl MapBuilder {
    /// `map[key] = value`: a key equal to one set before replaces its value.
    fn set(&mut self, key: GoValue, value: GoValue, at: At) {
        let found = match &key {
            GoValue::Scalar(Scalar::Str(s)) => self.strings.get(s).copied(),
            GoValue::Bytes(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| self.strings.get(s).copied())
                .or_else(|| self.entries.iter().position(|(k, _, _)| k.same_key(&key))),
            _ => self.entries.iter().position(|(k, _, _)| k.same_key(&key)),
        };
        match found.and_then(|i| self.entries.get_mut(i)) {
            Some(entry) => {
                entry.1 = value;
                entry.2 = at;
            }
            None => {
                match &key {
                    GoValue::Scalar(Scalar::Str(s)) => {
                        self.strings.insert(s.clone(), self.entries.len());
                    }
                    GoValue::Bytes(b) => {
                        if let Ok(s) = std::str::from_utf8(b) {
                            self.strings.insert(s.to_string(), self.entries.len());
                        }
                    }
                    _ => {}
                }
                self.entries.push((key, value, at));
            }
        }
    }
}

struct Decoder<'t> {
    nodes: &'t [Node],
    decode_count: usize,
    alias_count: usize,
    alias_depth: usize,
    /// How deep the value being decoded is.
    depth: usize,
    /// Aliases being expanded.
    open_aliases: Vec<usize>,
}

fn fail(message: impl Into<String>) -> ParseError {
    ParseError::plain(message)
}

/// Decodes the tree's root (`None` for an empty document).
pub(crate) fn decode(tree: &Tree) -> Result<Option<(GoValue, At)>, ParseError> {
    let Some(root) = tree.root else {
        return Ok(None);
    };
    let mut d = Decoder {
        nodes: &tree.nodes,
        // The document node itself is the first decoding step.
        decode_count: 1,
        alias_count: 0,
        alias_depth: 0,
        depth: 0,
        open_aliases: Vec::new(),
    };
    let v = d.unmarshal(root)?;
    let n = &tree.nodes[root];
    Ok(Some((v, (n.line, n.column))))
}

impl Decoder<'_> {
    fn step(&mut self) -> Result<(), ParseError> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err(fail("document contains excessive aliasing"));
        }
        Ok(())
    }

    /// [`Self::unmarshal_node`], an error without a line placed at the node.
    fn unmarshal(&mut self, id: usize) -> Result<GoValue, ParseError> {
        let line0 = self.nodes[id].line;
        self.unmarshal_node(id).map_err(|e| placed(e, line0))
    }

    fn unmarshal_node(&mut self, id: usize) -> Result<GoValue, ParseError> {
        self.step()?;
        let node = &self.nodes[id];
        match &node.kind {
            NodeKind::Alias { name, target } => {
                let target = *target;
                let name = name.clone();
                self.alias(id, &name, |d| d.unmarshal(target))
            }
            NodeKind::Scalar {
                value,
                tag,
                implicit,
            } => scalar(value, tag.as_deref(), *implicit),
            NodeKind::Sequence(_) | NodeKind::Mapping(_) if self.depth >= MAX_VALUE_DEPTH => {
                Err(fail(format!(
                    "line {}: nesting deeper than {MAX_VALUE_DEPTH} levels (kubectl reads up to 10000)",
                    node.line + 1
                )))
            }
            NodeKind::Sequence(items) => {
                self.depth += 1;
                let mut out = Vec::with_capacity(items.len());
                for &item in items {
                    let n = &self.nodes[item];
                    let at = (n.line, n.column);
                    out.push((self.unmarshal(item)?, at));
                }
                self.depth -= 1;
                Ok(GoValue::Seq(out))
            }
            NodeKind::Mapping(_) => {
                self.depth += 1;
                let mut out = MapBuilder::default();
                self.mapping_into(id, &mut out)?;
                self.depth -= 1;
                Ok(GoValue::Map(out.entries))
            }
        }
    }

    fn alias<T>(
        &mut self,
        id: usize,
        name: &str,
        f: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<T, ParseError> {
        if self.open_aliases.contains(&id) {
            return Err(fail(format!("anchor '{name}' value contains itself")));
        }
        self.open_aliases.push(id);
        self.alias_depth += 1;
        let r = f(self);
        self.alias_depth -= 1;
        self.open_aliases.retain(|&a| a != id);
        r
    }

    /// Decodes a mapping node (or an alias of one) into `out`, as the library decodes into an
    /// existing map.
    fn unmarshal_into(&mut self, id: usize, out: &mut MapBuilder) -> Result<(), ParseError> {
        self.step()?;
        match &self.nodes[id].kind {
            NodeKind::Alias { name, target } => {
                let target = *target;
                let name = name.clone();
                self.alias(id, &name, |d| d.unmarshal_into(target, out))
            }
            NodeKind::Mapping(_) => self.mapping_into(id, out),
            _ => Err(want_map()),
        }
    }

    fn mapping_into(&mut self, id: usize, out: &mut MapBuilder) -> Result<(), ParseError> {
        let NodeKind::Mapping(pairs) = &self.nodes[id].kind else {
            return Err(want_map());
        };
        for &(k, v) in pairs {
            if is_merge(&self.nodes[k]) {
                self.merge(v, out)?;
                continue;
            }
            let key = self.unmarshal(k)?;
            if matches!(key, GoValue::Seq(_) | GoValue::Map(_)) {
                return Err(ParseError::at(
                    format!("invalid map key: {}", go_syntax(&key)),
                    self.nodes[k].line,
                ));
            }
            let value = self.unmarshal(v)?;
            let kn = &self.nodes[k];
            let at = (kn.line, kn.column);
            out.set(key, value, at);
        }
        Ok(())
    }

    fn is_mapping(&self, id: usize) -> bool {
        match &self.nodes[id].kind {
            NodeKind::Mapping(_) => true,
            NodeKind::Alias { target, .. } => {
                matches!(self.nodes[*target].kind, NodeKind::Mapping(_))
            }
            _ => false,
        }
    }

    fn merge(&mut self, id: usize, out: &mut MapBuilder) -> Result<(), ParseError> {
        let line0 = self.nodes[id].line;
        self.merge_node(id, out).map_err(|e| placed(e, line0))
    }

    fn merge_node(&mut self, id: usize, out: &mut MapBuilder) -> Result<(), ParseError> {
        match &self.nodes[id].kind {
            NodeKind::Mapping(_) | NodeKind::Alias { .. } if self.is_mapping(id) => {
                self.unmarshal_into(id, out)
            }
            NodeKind::Sequence(items) => {
                let items = items.clone();
                // Earlier mappings win: they are written last.
                for &item in items.iter().rev() {
                    if !self.is_mapping(item) {
                        return Err(want_map());
                    }
                    self.unmarshal_into(item, out)?;
                }
                Ok(())
            }
            _ => Err(want_map()),
        }
    }
}

/// `e`, at the 0-based line `line0` when it names no line.
fn placed(e: ParseError, line0: usize) -> ParseError {
    match e.line {
        Some(_) => e,
        None => ParseError::at(e.message, line0),
    }
}

fn want_map() -> ParseError {
    fail("map merge requires map or sequence of maps as the value")
}

fn is_merge(n: &Node) -> bool {
    matches!(&n.kind, NodeKind::Scalar { value, tag, implicit }
        if value == "<<" && (*implicit || tag.as_deref() == Some(MERGE_TAG)))
}

fn scalar(value: &str, tag: Option<&str>, implicit: bool) -> Result<GoValue, ParseError> {
    if tag.is_none() && !implicit {
        return Ok(GoValue::Scalar(Scalar::Str(value.to_string())));
    }
    let tag = tag.unwrap_or("");
    if tag == BINARY_TAG {
        return crate::gocompat::base64::std_decode(value)
            .map(GoValue::Bytes)
            .ok_or_else(|| fail("!!binary value contains invalid base64 data"));
    }
    resolve(tag, value).map(GoValue::Scalar).map_err(fail)
}
