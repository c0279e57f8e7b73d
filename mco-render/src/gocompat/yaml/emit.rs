//! Byte-exact YAML as upstream writes it for a JSON value.
//!
//! Upstream hashes `ghodss/yaml.Marshal(spec)`: the spec's JSON is read back
//! by gopkg.in/yaml.v2 v2.4.0 into generic values (maps, lists, strings,
//! int/uint/float, bool, null) and emitted again by that library. This module
//! reproduces the emitter for exactly that input: block mappings with keys in
//! upstream's natural order (see [`super::key_order`]), block sequences
//! (written flush with their parent key), `[]`/`{}` for empty collections,
//! and strings in the style the emitter picks (plain, single or double
//! quoted, or literal block), folded at the emitter's line width of 80.
//!
//! The output is built in one pass, linear in the size of the value.

use serde_json::Value;

use super::byte_scan::{all_visible_ascii, run_len, Run};
use super::key_order::sort_by_key_order;
use super::marshal_check::check_str;
use super::resolve::{is_base60_float, resolves_to_non_string};
use super::scalar::{analyze, is_break, is_printable, is_space, width, Analysis};
use crate::gocompat::strconv::push_go_float;

/// Column after which the emitter folds long scalars at a space.
const BEST_WIDTH: usize = 80;
/// Indentation step.
const BEST_INDENT: isize = 2;
/// Output is handed to the sink in chunks of about this size.
const CHUNK: usize = 1 << 14;

/// Receives the YAML bytes in order.
pub(crate) trait Sink {
    /// Takes the next chunk of output.
    fn take(&mut self, chunk: &[u8]);
}

impl Sink for Vec<u8> {
    fn take(&mut self, chunk: &[u8]) {
        self.extend_from_slice(chunk);
    }
}

/// Returns exactly the bytes upstream's `ghodss/yaml.Marshal` produces for
/// `value`, as a string.
pub fn to_go_yaml(value: &Value) -> String {
    let mut out = Vec::new();
    write_go_yaml(value, &mut out);
    // Only whole UTF-8 sequences of valid strings and ASCII are written.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends upstream's YAML for `value` to `out`.
pub fn write_go_yaml(value: &Value, out: &mut Vec<u8>) {
    let mut emitter = Emitter::new(None, true);
    emitter.document(value);
    if out.is_empty() {
        *out = emitter.buf;
    } else {
        out.extend_from_slice(&emitter.buf);
    }
}

/// `value` as gopkg.in/yaml.v3 writes it through an encoder with `SetIndent(2)` (Butane's
/// output): the same scalar styles and key order as [`to_go_yaml`], but no line folding and
/// block sequences indented by two under their key.
pub fn to_go_yaml_v3(value: &Value) -> String {
    let mut emitter = Emitter::new(None, true);
    emitter.v3 = true;
    emitter.document(value);
    String::from_utf8(emitter.buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Streams upstream's YAML for `value` into `sink` in chunks, without
/// holding the whole document in memory. Returns whether upstream could
/// marshal `value` at all: `false` if some string (key or value) holds a
/// character its YAML reader refuses (see [`super::check_upstream_marshal`]);
/// the output is then meaningless.
pub(crate) fn stream_go_yaml(value: &Value, sink: &mut dyn Sink) -> bool {
    let mut emitter = Emitter::new(Some(sink), true);
    emitter.document(value);
    emitter.flush();
    !emitter.refused
}

/// [`write_go_yaml`] without the shortcut for scalars that need no analysis: every scalar
/// takes the emitter's general path. Kept to check the shortcut against.
#[cfg(test)]
pub(crate) fn write_go_yaml_general(value: &Value, out: &mut Vec<u8>) {
    let mut emitter = Emitter::new(None, false);
    emitter.document(value);
    out.extend_from_slice(&emitter.buf);
}

/// Requested scalar style, before the emitter's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// Where a node sits, as far as style and layout depend on it.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    /// A key or value of a block mapping.
    mapping: bool,
    /// A mapping key written in the short `key: value` form.
    simple_key: bool,
}

struct Emitter<'s, 'v> {
    buf: Vec<u8>,
    sink: Option<&'s mut dyn Sink>,
    /// Take the shortcut for scalars that need no analysis ([`Emitter::try_plain_word`]).
    shortcut: bool,
    /// Entry lists of finished mappings, reused by the next ones.
    entry_lists: Vec<Vec<(&'v String, &'v Value)>>,
    /// Some scalar holds a character upstream's YAML reader refuses.
    refused: bool,
    /// Column in characters (not bytes) on the current line.
    column: usize,
    /// Current indentation; -1 before the root node.
    indent: isize,
    /// The last thing written was whitespace (or nothing).
    whitespace: bool,
    /// Only indentation has been written on the current line so far.
    indention: bool,
    /// yaml.v3's layout (`yaml.NewEncoder` with `SetIndent(2)`, as Butane writes): no line
    /// folding, block sequences indented under their key.
    v3: bool,
}

impl<'s, 'v> Emitter<'s, 'v> {
    fn new(sink: Option<&'s mut dyn Sink>, shortcut: bool) -> Self {
        Emitter {
            buf: Vec::with_capacity(if sink.is_some() { 2 * CHUNK } else { 4096 }),
            sink,
            shortcut,
            entry_lists: Vec::new(),
            refused: false,
            column: 0,
            indent: -1,
            whitespace: true,
            indention: true,
            v3: false,
        }
    }

    /// The column past which long scalars fold (never in yaml.v3's layout).
    fn best_width(&self) -> usize {
        if self.v3 {
            usize::MAX
        } else {
            BEST_WIDTH
        }
    }

    fn flush(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            sink.take(&self.buf);
            self.buf.clear();
        }
    }

    fn maybe_flush(&mut self) {
        if self.sink.is_some() && self.buf.len() >= CHUNK {
            self.flush();
        }
    }

    // ---- document structure -------------------------------------------

    fn document(&mut self, root: &'v Value) {
        self.node(root, Ctx::default());
        // Implicit document end: finish the last line.
        self.write_indent();
    }

    fn node(&mut self, value: &'v Value, ctx: Ctx) {
        match value {
            Value::Null => self.plain_scalar("null", ctx),
            Value::Bool(true) => self.plain_scalar("true", ctx),
            Value::Bool(false) => self.plain_scalar("false", ctx),
            Value::Number(n) => self.number(n, ctx),
            Value::String(s) => {
                if !(requests_plain_if_visible(s) && self.try_plain_word(s.as_bytes())) {
                    self.scalar(s, string_style(s), ctx);
                }
            }
            Value::Array(items) if items.is_empty() => self.empty_flow(b'[', b']'),
            Value::Object(map) if map.is_empty() => self.empty_flow(b'{', b'}'),
            Value::Array(items) => self.block_sequence(items, ctx),
            Value::Object(map) => self.block_mapping(map),
        }
        self.maybe_flush();
    }

    fn empty_flow(&mut self, open: u8, close: u8) {
        self.write_indicator(&[open], true, true, false);
        self.write_indicator(&[close], false, false, false);
    }

    fn block_sequence(&mut self, items: &'v [Value], ctx: Ctx) {
        let saved = self.indent;
        // A sequence that is a mapping value starts on the key's line
        // position: its dashes are not indented further.
        let indentless = !self.v3 && ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator(b"-", true, false, true);
            self.node(item, Ctx::default());
        }
        self.indent = saved;
    }

    fn block_mapping(&mut self, map: &'v serde_json::Map<String, Value>) {
        let saved = self.indent;
        self.increase_indent(false, false);
        let mut entries = self.entry_lists.pop().unwrap_or_default();
        ordered_entries(map, &mut entries);
        for &(key, value) in &entries {
            self.write_indent();
            // A short key that needs no analysis is a simple key written plain.
            if key.len() <= 128
                && requests_plain_if_visible(key)
                && self.try_plain_word(key.as_bytes())
            {
                self.write_indicator(b":", false, false, false);
                self.node(
                    value,
                    Ctx {
                        mapping: true,
                        simple_key: false,
                    },
                );
                continue;
            }
            let analysis = analyze(key.as_bytes());
            let value_ctx = Ctx {
                mapping: true,
                simple_key: false,
            };
            if !analysis.multiline && key.len() <= 128 {
                let key_ctx = Ctx {
                    mapping: true,
                    simple_key: true,
                };
                self.scalar_analyzed(key, string_style(key), analysis, key_ctx);
                self.write_indicator(b":", false, false, false);
            } else {
                self.write_indicator(b"?", true, false, true);
                self.scalar_analyzed(key, string_style(key), analysis, value_ctx);
                self.write_indent();
                self.write_indicator(b":", true, false, true);
            }
            self.node(value, value_ctx);
        }
        entries.clear();
        self.entry_lists.push(entries);
        self.indent = saved;
    }

    // ---- scalars --------------------------------------------------------

    /// A scalar for which the encoder requests plain style (null, booleans).
    fn plain_scalar(&mut self, text: &str, ctx: Ctx) {
        if !self.try_plain_word(text.as_bytes()) {
            self.scalar(text, Style::Plain, ctx);
        }
    }

    /// Writes a number as upstream prints it, without building a string for integers.
    fn number(&mut self, n: &serde_json::Number, ctx: Ctx) {
        let mut digits = [0u8; 24];
        let len = if let Some(u) = n.as_u64() {
            write_decimal(u, false, &mut digits)
        } else if let Some(i) = n.as_i64() {
            write_decimal(i.unsigned_abs(), i < 0, &mut digits)
        } else {
            let mut text = Vec::new();
            push_go_float(n.as_f64().unwrap_or(0.0), &mut text);
            if !self.try_plain_word(&text) {
                let text = String::from_utf8_lossy(&text);
                self.scalar(&text, Style::Plain, ctx);
            }
            return;
        };
        let text = &digits[digits.len() - len..];
        if !self.try_plain_word(text) {
            let text = String::from_utf8_lossy(text);
            self.scalar(&text, Style::Plain, ctx);
        }
    }

    /// The shortcut for the usual scalar (names, paths, base64 data URLs): `v` is written
    /// plain, exactly as the general path would write it when plain style was requested,
    /// if it is non-empty visible ASCII (no space, break, control or non-ASCII character)
    /// and does not start or end like an indicator. For such text the emitter's analysis
    /// allows plain style, and plain writing copies it unchanged (folds and breaks need
    /// spaces and breaks). Returns whether it wrote `v`; if not, nothing was written.
    fn try_plain_word(&mut self, v: &[u8]) -> bool {
        if !self.shortcut || v.is_empty() || has_indicator_edge(v) || !all_visible_ascii(v) {
            return false;
        }
        if !self.whitespace {
            self.put(b' ');
        }
        self.buf.extend_from_slice(v);
        self.column += v.len();
        self.whitespace = false;
        self.indention = false;
        true
    }

    fn scalar(&mut self, text: &str, requested: Style, ctx: Ctx) {
        let analysis = analyze(text.as_bytes());
        self.scalar_analyzed(text, requested, analysis, ctx);
    }

    fn scalar_analyzed(&mut self, text: &str, requested: Style, a: Analysis, ctx: Ctx) {
        // Every string that does not take the shortcut (which only accepts visible ASCII,
        // never refused) passes here exactly once.
        if check_str(text).is_err() {
            self.refused = true;
        }
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (text.is_empty() && ctx.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        let saved = self.indent;
        self.increase_indent(true, false);
        let v = text.as_bytes();
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(v, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(v, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(v, allow_breaks),
            Style::Literal => self.write_literal(v),
        }
        self.indent = saved;
    }

    fn write_plain(&mut self, v: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < v.len() {
            if is_space(v, i) {
                if allow_breaks && !spaces && self.column > self.best_width() && !is_space(v, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write_char(v, &mut i);
                }
                spaces = true;
            } else if is_break(v, i) {
                if !breaks && v[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write_run(v, &mut i, Run::Plain, ends_plain_run);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, v: &[u8], allow_breaks: bool) {
        self.write_indicator(b"'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < v.len() {
            if is_space(v, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width()
                    && i > 0
                    && i + 1 < v.len()
                    && !is_space(v, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write_char(v, &mut i);
                }
                spaces = true;
            } else if is_break(v, i) {
                if !breaks && v[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if v[i] == b'\'' {
                    self.put(b'\'');
                }
                self.write_char(v, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, v: &[u8], allow_breaks: bool) {
        // Upstream checks for a byte-order mark at the start of the value
        // (not at each position): if there is one, every character is escaped.
        let starts_with_bom = v.starts_with(&[0xEF, 0xBB, 0xBF]);
        let mut spaces = false;
        self.write_indicator(b"\"", true, false, false);
        let mut i = 0;
        while i < v.len() {
            let c = v[i];
            if !is_printable(v, i) || starts_with_bom || is_break(v, i) || c == b'"' || c == b'\\' {
                let w = width(c);
                let mut code: u32 = match w {
                    1 => u32::from(c & 0x7F),
                    2 => u32::from(c & 0x1F),
                    3 => u32::from(c & 0x0F),
                    _ => u32::from(c & 0x07),
                };
                for k in 1..w {
                    let b = v.get(i + k).copied().unwrap_or(0x80);
                    code = (code << 6) + u32::from(b & 0x3F);
                }
                i += w;
                self.put(b'\\');
                match code {
                    0x00 => self.put(b'0'),
                    0x07 => self.put(b'a'),
                    0x08 => self.put(b'b'),
                    0x09 => self.put(b't'),
                    0x0A => self.put(b'n'),
                    0x0B => self.put(b'v'),
                    0x0C => self.put(b'f'),
                    0x0D => self.put(b'r'),
                    0x1B => self.put(b'e'),
                    0x22 => self.put(b'"'),
                    0x5C => self.put(b'\\'),
                    0x85 => self.put(b'N'),
                    0xA0 => self.put(b'_'),
                    0x2028 => self.put(b'L'),
                    0x2029 => self.put(b'P'),
                    _ => {
                        let (letter, digits) = if code <= 0xFF {
                            (b'x', 2)
                        } else if code <= 0xFFFF {
                            (b'u', 4)
                        } else {
                            (b'U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let d = ((code >> (4 * k)) & 0x0F) as u8;
                            self.put(if d < 10 { b'0' + d } else { b'A' + d - 10 });
                        }
                    }
                }
                spaces = false;
            } else if is_space(v, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width()
                    && i > 0
                    && i + 1 < v.len()
                {
                    self.write_indent();
                    if is_space(v, i + 1) {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write_char(v, &mut i);
                }
                spaces = true;
            } else {
                if starts_with_bom {
                    self.write_char(v, &mut i);
                } else {
                    self.write_run(v, &mut i, Run::DoubleQuoted, ends_double_quoted_run);
                }
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, v: &[u8]) {
        self.write_indicator(b"|", true, false, false);
        self.write_block_hints(v);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < v.len() {
            if is_break(v, i) {
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write_run(v, &mut i, Run::Literal, ends_literal_run);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// Indentation hint (when the text starts with a space or break) and
    /// chomping hint: `-` without a final break, `+` with several.
    fn write_block_hints(&mut self, v: &[u8]) {
        if is_space(v, 0) || is_break(v, 0) {
            self.write_indicator(&[b'0' + BEST_INDENT as u8], false, false, false);
        }
        let chomp = match last_char_start(v, v.len()) {
            None => Some(b'-'),
            Some(last) if !is_break(v, last) => Some(b'-'),
            Some(0) => Some(b'+'),
            Some(last) => match last_char_start(v, last) {
                Some(prev) if is_break(v, prev) => Some(b'+'),
                _ => None,
            },
        };
        if let Some(c) = chomp {
            self.write_indicator(&[c], false, false, false);
        }
    }

    // ---- low-level output -------------------------------------------------

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn put(&mut self, b: u8) {
        self.buf.push(b);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.buf.push(b'\n');
        self.column = 0;
    }

    /// Copies one UTF-8 character; it counts as one column.
    fn write_char(&mut self, v: &[u8], i: &mut usize) {
        let end = (*i + width(v[*i])).min(v.len());
        self.buf.extend_from_slice(&v[*i..end]);
        self.column += 1;
        *i = end;
    }

    /// Copies the character at `*i` and the characters after it up to the
    /// first byte for which `ends` holds. `ends` must hold for every byte
    /// that needs per-character treatment, and never for a UTF-8
    /// continuation byte, so the run ends on a character boundary. Every
    /// character counts as one column.
    fn write_run<F: Fn(u8) -> bool>(&mut self, v: &[u8], i: &mut usize, class: Run, ends: F) {
        self.write_char(v, i);
        let start = *i;
        let end = start + run_len(&v[start..], class, |b| !ends(b));
        let run = &v[start..end];
        self.buf.extend_from_slice(run);
        // Columns count characters: every byte but UTF-8 continuation bytes.
        self.column += if run.is_ascii() {
            run.len()
        } else {
            run.iter().filter(|&&b| b & 0xC0 != 0x80).count()
        };
        *i = end;
    }

    fn write_break(&mut self, v: &[u8], i: &mut usize) {
        if v[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write_char(v, i);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &[u8],
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        for &b in indicator {
            self.put(b);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }
}

/// A mapping's entries in upstream's key order.
///
/// When every key is made of ASCII letters only, upstream's order is plain byte order (two
/// letters compare by code point, and a key that is a prefix of another sorts first), so the
/// keys are sorted as they are; any other mapping takes the general order.
fn ordered_entries<'v>(
    map: &'v serde_json::Map<String, Value>,
    entries: &mut Vec<(&'v String, &'v Value)>,
) {
    entries.extend(map.iter());
    if entries
        .iter()
        .all(|(k, _)| k.bytes().all(|b| b.is_ascii_alphabetic()))
    {
        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        return;
    }
    let mut keyed: Vec<(Vec<char>, (&String, &Value))> = entries
        .drain(..)
        .map(|(k, v)| (k.chars().collect(), (k, v)))
        .collect();
    sort_by_key_order(&mut keyed);
    entries.extend(keyed.into_iter().map(|(_, e)| e));
}

/// Whether visible-ASCII text `s` starts or ends in a way that makes the emitter's
/// analysis refuse plain style: a document marker (`---`, `...`), an indicator as first
/// character, `?`, `:` or `-` alone, or a final `:` (followed by the end, which counts
/// as whitespace). `#` after the first character never counts: in visible ASCII it is
/// never preceded by whitespace.
fn has_indicator_edge(v: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (v.first(), v.last()) else {
        return true;
    };
    matches!(
        first,
        b'#' | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    ) || (v.len() == 1 && matches!(first, b'?' | b':' | b'-'))
        || last == b':'
        || v.starts_with(b"---")
        || v.starts_with(b"...")
}

/// Whether upstream's encoder requests plain style for `s`, assuming `s` has no line
/// break (it is only used on text the shortcut then checks to be visible ASCII): it
/// does unless reading `s` back unquoted would give something other than a string.
fn requests_plain_if_visible(s: &str) -> bool {
    !resolves_to_non_string(s) && !is_base60_float(s)
}

/// Writes `u` in decimal (after a `-` if `negative`) at the end of `out`; returns the
/// length written.
fn write_decimal(mut u: u64, negative: bool, out: &mut [u8; 24]) -> usize {
    let mut at = out.len();
    loop {
        at -= 1;
        out[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        out[at] = b'-';
    }
    out.len() - at
}

/// Bytes that may start a line break (CR, LF, NEL, LS, PS).
const fn may_start_break(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | 0xC2 | 0xE2)
}

/// A 256-entry table of a `const fn(u8) -> bool`, so that run scans are one
/// lookup per byte.
macro_rules! byte_table {
    ($f:ident) => {{
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            t[b] = $f(b as u8);
            b += 1;
        }
        t
    }};
}

const fn plain_run_end(b: u8) -> bool {
    b == b' ' || may_start_break(b)
}

const fn double_quoted_run_end(b: u8) -> bool {
    !(b >= 0x21 && b <= 0x7E) || b == b'"' || b == b'\\'
}

const PLAIN_RUN_ENDS: [bool; 256] = byte_table!(plain_run_end);
const LITERAL_RUN_ENDS: [bool; 256] = byte_table!(may_start_break);
const DOUBLE_QUOTED_RUN_ENDS: [bool; 256] = byte_table!(double_quoted_run_end);

/// Where a run of ordinary characters in a plain scalar stops: spaces and
/// possible breaks.
fn ends_plain_run(b: u8) -> bool {
    PLAIN_RUN_ENDS[usize::from(b)]
}

/// Where a run of ordinary characters in a literal block stops.
fn ends_literal_run(b: u8) -> bool {
    LITERAL_RUN_ENDS[usize::from(b)]
}

/// Where a run of characters that a double-quoted scalar copies unchanged
/// stops: anything but printable ASCII other than space, `"` and `\`.
fn ends_double_quoted_run(b: u8) -> bool {
    DOUBLE_QUOTED_RUN_ENDS[usize::from(b)]
}

/// Start of the UTF-8 character that ends right before byte `end`.
fn last_char_start(v: &[u8], end: usize) -> Option<usize> {
    let mut i = end.checked_sub(1)?;
    while i > 0 && v[i] & 0xC0 == 0x80 {
        i -= 1;
    }
    Some(i)
}

/// The style upstream's encoder requests for a string: literal when it has a
/// newline, plain when it would read back as the same string, else double
/// quoted. The emitter may still override it.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if !resolves_to_non_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

#[cfg(test)]
mod tests {
    use super::{stream_go_yaml, to_go_yaml, write_go_yaml, write_go_yaml_general};
    use crate::render::name::{check_upstream_marshal, name_for, try_name_for, NameScheme};
    use md5::{Digest, Md5};
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    /// Pieces of text that exercise the emitter's style decisions: indicators, document
    /// markers, words and numbers that resolve to other types, spaces, breaks, quotes,
    /// controls and non-ASCII characters.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[a-zA-Z0-9/+=._]{1,12}",
            1 => prop::sample::select(vec![
                "-", "?", ":", "#", ",", "[", "]", "{", "}", "&", "*", "!", "|", ">", "'",
                "\"", "%", "@", "`", "---", "...", " ", "  ", "\n", "\r", "\t", "\\",
                "\u{85}", "\u{a0}", "\u{e9}", "\u{2028}", "\u{feff}", "\u{1F600}", "\u{7}",
                "true", "null", "~", "y", "1", "0x1F", "0755", "1e3", "1:30", "2024-01-15",
                ".inf", "-1", "+1", "1_0", "data:", ";base64,", "a: b", " #x",
                // Refused by upstream's YAML reader.
                "\u{7f}", "\u{80}", "\u{9f}", "\u{fffe}", "\u{ffff}",
            ]).prop_map(str::to_string),
        ];
        prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            text().prop_map(Value::String),
            // Long data URL-like text, past the emitter's fold width and vector steps.
            "[A-Za-z0-9+/]{60,200}={0,2}".prop_map(|b| Value::String(format!("data:;base64,{b}"))),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((text(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
            ]
        })
    }

    struct Chunks(Md5, usize);

    impl super::Sink for Chunks {
        fn take(&mut self, chunk: &[u8]) {
            self.0.update(chunk);
            self.1 += 1;
        }
    }

    proptest! {
        #[test]
        fn shortcut_writes_what_the_general_path_writes(v in value()) {
            let mut fast = Vec::new();
            write_go_yaml(&v, &mut fast);
            let mut general = Vec::new();
            write_go_yaml_general(&v, &mut general);
            prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&general));
        }

        #[test]
        fn streamed_digest_is_the_digest_of_the_whole_text(v in value()) {
            let mut sink = Chunks(Md5::new(), 0);
            let marshals = stream_go_yaml(&v, &mut sink);
            let mut whole = Vec::new();
            write_go_yaml_general(&v, &mut whole);
            prop_assert_eq!(sink.0.finalize(), Md5::digest(&whole));
            prop_assert_eq!(marshals, check_upstream_marshal(&v).is_ok());
        }

        #[test]
        fn checked_names_agree_with_the_separate_check(v in value()) {
            for scheme in [NameScheme::Upstream, NameScheme::ContentSha256] {
                let want = check_upstream_marshal(&v).map(|()| name_for(scheme, "worker", &v));
                prop_assert_eq!(try_name_for(scheme, "worker", &v), want);
            }
        }
    }

    #[test]
    fn streamed_digest_of_a_multi_chunk_document() {
        // Several sink chunks: the digest over chunks is the digest over the whole text.
        let files: Vec<Value> = (0..400)
            .map(|i| json!({"path": format!("/etc/f{i}"), "contents": {"source": format!("data:;base64,{}", "QUJD".repeat(100 + i))}, "mode": 420}))
            .collect();
        let v = json!({"config": {"storage": {"files": files}}});
        let mut sink = Chunks(Md5::new(), 0);
        stream_go_yaml(&v, &mut sink);
        assert!(sink.1 > 2, "{} chunks", sink.1);
        let mut whole = Vec::new();
        write_go_yaml_general(&v, &mut whole);
        assert_eq!(sink.0.finalize(), Md5::digest(&whole));
    }

    fn scalar_value(s: &str) -> String {
        let out = to_go_yaml(&json!({ "k": s }));
        out.strip_prefix("k:").map(str::to_string).unwrap_or(out)
    }

    #[test]
    fn structure() {
        let v = json!({
            "b": [1, "two", {"x": null, "y": []}],
            "a": {"inner": {}, "list": [[1, 2], []]},
            "c": true
        });
        let expected = "a:\n  inner: {}\n  list:\n  - - 1\n    - 2\n  - []\nb:\n- 1\n- two\n- x: null\n  \"y\": []\nc: true\n";
        assert_eq!(to_go_yaml(&v), expected);
    }

    #[test]
    fn roots() {
        assert_eq!(to_go_yaml(&json!(null)), "null\n");
        assert_eq!(to_go_yaml(&json!([])), "[]\n");
        assert_eq!(to_go_yaml(&json!({})), "{}\n");
        assert_eq!(to_go_yaml(&json!("a\n")), "|\n  a\n");
        assert_eq!(to_go_yaml(&json!(["a", ["b"]])), "- a\n- - b\n");
    }

    #[test]
    fn quoting_of_resolvable_strings() {
        assert_eq!(scalar_value(""), " \"\"\n");
        assert_eq!(scalar_value("true"), " \"true\"\n");
        assert_eq!(scalar_value("y"), " \"y\"\n");
        assert_eq!(scalar_value("No"), " \"No\"\n");
        assert_eq!(scalar_value("null"), " \"null\"\n");
        assert_eq!(scalar_value("~"), " \"~\"\n");
        assert_eq!(scalar_value("1"), " \"1\"\n");
        assert_eq!(scalar_value("1.0"), " \"1.0\"\n");
        assert_eq!(scalar_value("0755"), " \"0755\"\n");
        assert_eq!(scalar_value("1e3"), " \"1e3\"\n");
        assert_eq!(scalar_value("1:30"), " \"1:30\"\n");
        assert_eq!(scalar_value("2024-01-15"), " \"2024-01-15\"\n");
        assert_eq!(scalar_value("3.5.0"), " 3.5.0\n");
        assert_eq!(scalar_value("1e999"), " 1e999\n");
        assert_eq!(scalar_value("nope"), " nope\n");
    }

    #[test]
    fn quoting_of_indicators() {
        assert_eq!(scalar_value("- x"), " '- x'\n");
        assert_eq!(scalar_value("-x"), " -x\n");
        assert_eq!(scalar_value("a: b"), " 'a: b'\n");
        assert_eq!(scalar_value("a:b"), " a:b\n");
        assert_eq!(scalar_value("a:"), " 'a:'\n");
        assert_eq!(scalar_value("#x"), " '#x'\n");
        assert_eq!(scalar_value("a #x"), " 'a #x'\n");
        assert_eq!(scalar_value("a#x"), " a#x\n");
        assert_eq!(scalar_value("*x"), " '*x'\n");
        assert_eq!(scalar_value("it's"), " it's\n");
        assert_eq!(scalar_value("'q'"), " '''q'''\n");
        assert_eq!(scalar_value("\"q\""), " '\"q\"'\n");
        assert_eq!(scalar_value("---"), " '---'\n");
        assert_eq!(scalar_value("[x]"), " '[x]'\n");
        assert_eq!(scalar_value("x[0]"), " x[0]\n");
        assert_eq!(
            scalar_value("data:,hello%20world"),
            " data:,hello%20world\n"
        );
    }

    #[test]
    fn spaces_tabs_and_specials() {
        assert_eq!(scalar_value(" lead"), " ' lead'\n");
        assert_eq!(scalar_value("trail "), " 'trail '\n");
        assert_eq!(scalar_value("a\tb"), " \"a\\tb\"\n");
        assert_eq!(scalar_value("a\rb"), " \"a\\rb\"\n");
        assert_eq!(scalar_value("bell\u{7}"), " \"bell\\a\"\n");
        assert_eq!(scalar_value("del\u{7f}"), " \"del\\x7F\"\n");
        assert_eq!(scalar_value("back\\slash"), " back\\slash\n");
        assert_eq!(scalar_value("caf\u{e9}"), " caf\u{e9}\n");
        assert_eq!(scalar_value("nb\u{a0}sp"), " nb\u{a0}sp\n");
        assert_eq!(scalar_value("nel\u{85}"), " \"nel\\N\"\n");
        assert_eq!(scalar_value("smile \u{1F600}"), " \"smile \\U0001F600\"\n");
        assert_eq!(scalar_value("\u{feff}ab"), " \"\\uFEFF\\x61\\x62\"\n");
        assert_eq!(scalar_value("ls\u{2028}x"), " 'ls\u{2028}  x'\n");
    }

    #[test]
    fn literal_blocks() {
        assert_eq!(scalar_value("multi\nline"), " |-\n  multi\n  line\n");
        assert_eq!(scalar_value("multi\nline\n"), " |\n  multi\n  line\n");
        assert_eq!(scalar_value("multi\nline\n\n"), " |+\n  multi\n  line\n\n");
        assert_eq!(scalar_value("\n"), " |2+\n\n");
        assert_eq!(scalar_value(" indented\nx"), " |2-\n   indented\n  x\n");
        assert_eq!(scalar_value("\nlead"), " |2-\n\n  lead\n");
        assert_eq!(scalar_value("a\n\nb\n"), " |\n  a\n\n  b\n");
        // A space before a break, a trailing space or a tab rule out blocks.
        assert_eq!(scalar_value("a \nb"), " \"a \\nb\"\n");
        assert_eq!(scalar_value("a\nb "), " \"a\\nb \"\n");
        assert_eq!(scalar_value("a\tb\n"), " \"a\\tb\\n\"\n");
        // Following keys come right after the block.
        assert_eq!(
            to_go_yaml(&json!({"a": "x\n", "b": "y\nz"})),
            "a: |\n  x\nb: |-\n  y\n  z\n"
        );
        assert_eq!(to_go_yaml(&json!({"a": ["x\n", 1]})), "a:\n- |\n  x\n- 1\n");
    }

    /// A literal block ending in LS or PS (U+2028, U+2029) ends the document without a final
    /// `\n`: yaml.v2 copies those breaks as they are, its literal writer leaves the emitter
    /// at column 0 with `indention` and `whitespace` set, so the document end's indent writes
    /// no break; and `+` chomping sets `open_ended` only until the chomp indicator itself is
    /// written, so no `...` follows either. Checked against gopkg.in/yaml.v2 v2.4.0's Marshal.
    #[test]
    fn literal_block_ending_in_a_unicode_break_has_no_final_newline() {
        assert_eq!(
            to_go_yaml(&json!({"": "\n\u{2028}"})),
            "\"\": |2+\n\n\u{2028}"
        );
        assert_eq!(to_go_yaml(&json!(["\n\u{2028}"])), "- |2+\n\n\u{2028}");
        assert_eq!(to_go_yaml(&json!("\n\u{2028}")), "|2+\n\n\u{2028}");
        assert_eq!(to_go_yaml(&json!("a\nb\u{2029}")), "|\n  a\n  b\u{2029}");
        // A following key starts right after the break character.
        assert_eq!(
            to_go_yaml(&json!({"a": "x\n\u{2028}", "b": 1})),
            "a: |+\n  x\n\u{2028}b: 1\n"
        );
        // The name is the salted MD5 of exactly those bytes, as upstream computes it.
        assert_eq!(
            name_for(NameScheme::Upstream, "worker", &json!({"": "\n\u{2028}"})),
            "rendered-worker-86526a52d11d14b27aaf5fb869f85cee"
        );
    }

    #[test]
    fn numbers_and_scalars() {
        assert_eq!(
            to_go_yaml(&json!({"a": 420, "b": -1, "c": 1.5, "d": 1e6, "e": false})),
            "a: 420\nb: -1\nc: 1.5\nd: 1e+06\ne: false\n"
        );
        assert_eq!(
            to_go_yaml(&json!({"big": 18446744073709551615u64})),
            "big: 18446744073709551615\n"
        );
    }

    #[test]
    fn keys() {
        assert_eq!(to_go_yaml(&json!({"": 1})), "\"\": 1\n");
        assert_eq!(
            to_go_yaml(&json!({"true": 1, "a b": 2, "k:": 3})),
            "a b: 2\n'k:': 3\n\"true\": 1\n"
        );
        // Multi-line keys use the long form.
        assert_eq!(to_go_yaml(&json!({"a\nb": 1})), "? |-\n  a\n  b\n: 1\n");
    }

    #[test]
    fn long_keys_use_the_long_form() {
        let key = "k".repeat(129);
        assert_eq!(
            to_go_yaml(&json!({ key.clone(): 1 })),
            format!("? {key}\n: 1\n")
        );
        let key = "k".repeat(128);
        assert_eq!(
            to_go_yaml(&json!({ key.clone(): 1 })),
            format!("{key}: 1\n")
        );
    }

    #[test]
    fn yaml_v3_layout_indents_sequences_and_never_folds() {
        let long = "word ".repeat(30);
        let v = serde_json::json!({"a": ["x", {"b": [1]}], "c": long.trim_end()});
        let out = super::to_go_yaml_v3(&v);
        assert_eq!(
            out,
            format!("a:\n  - x\n  - b:\n      - 1\nc: {}\n", long.trim_end())
        );
    }

    #[test]
    fn folding_plain() {
        let words: Vec<String> = (0..30).map(|i| format!("word{i:02}")).collect();
        let s = words.join(" ");
        let out = scalar_value(&s);
        // Fold at the first space after column 80, continuation indented by 2.
        let first = &out[..out.find('\n').unwrap_or(out.len())];
        assert!(first.len() > 80, "{out}");
        assert!(
            out.lines()
                .skip(1)
                .all(|l| l.is_empty() || l.starts_with("  ")),
            "{out}"
        );
        let unfolded: String = out.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        assert_eq!(unfolded.trim(), s);
        // " k: " is 3 columns; the line breaks at the first space past column 80.
        let expected_first = {
            let mut col = 3;
            let mut line = String::from(" ");
            for (n, w) in words.iter().enumerate() {
                if n > 0 {
                    if col > 80 {
                        break;
                    }
                    line.push(' ');
                    col += 1;
                }
                line.push_str(w);
                col += w.len();
            }
            line
        };
        assert_eq!(first, expected_first);
    }

    #[test]
    fn no_folding_without_spaces() {
        let s = "x".repeat(300);
        assert_eq!(scalar_value(&s), format!(" {s}\n"));
    }

    #[test]
    fn folding_double_quoted_exact() {
        // `k: "\t` takes 6 columns; each "x " adds 2. The space after the
        // 38th x is the first one seen past column 80, so the line breaks
        // there; the final space is never a fold point.
        let s = format!("\t{}", "x ".repeat(45));
        let first = format!("k: \"\\t{}", ["x"; 38].join(" "));
        let second = format!("  {} \"", ["x"; 7].join(" "));
        assert_eq!(
            to_go_yaml(&json!({ "k": s })),
            format!("{first}\n{second}\n")
        );
    }

    #[test]
    fn folding_single_quoted_exact() {
        // A leading space forces single quotes; `k: ' ` takes 5 columns, so
        // after the n-th y the column is 4 + 2n, past 80 from n = 39 on.
        let s = format!(" {}", "y ".repeat(40).trim_end());
        let first = format!("k: ' {}", ["y"; 39].join(" "));
        let second = "  y'";
        assert_eq!(
            to_go_yaml(&json!({ "k": s })),
            format!("{first}\n{second}\n")
        );
    }

    #[test]
    fn folding_double_quoted() {
        let s = format!("{}\t{}", "a ".repeat(50), "b  ".repeat(40));
        let out = to_go_yaml(&json!({ "k": s }));
        // Must read back to the same string when the folds are undone the
        // YAML way: a folded line break becomes one space; an escaped
        // "\" + break keeps following spaces.
        assert!(out.starts_with("k: \"a a a"), "{out}");
        assert!(out.lines().count() > 1, "{out}");
        for line in out.lines().skip(1) {
            assert!(line.starts_with("  "), "{out}");
        }
        assert!(
            out.contains("\n  \\ "),
            "a fold before a second space escapes it: {out}"
        );
    }
}
