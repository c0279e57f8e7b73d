//! TOML as Go's `github.com/BurntSushi/toml` encoder writes a struct: a table's plain keys
//! first, then its sub-tables and arrays of tables in field order; two spaces of indent per
//! nesting level; a blank line before every table header (except at the very start); strings
//! double-quoted with Go's escapes; arrays inline as `["a", "b"]`.
//!
//! Callers build a [`Table`] in the struct's field order, leaving out what the Go struct tags
//! would leave out (`omitempty` zero values, nil slices and maps).

/// A plain TOML value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An inline array.
    Array(Vec<Value>),
}

/// One entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Value(Value),
    Table(Table),
    Tables(Vec<Table>),
}

/// A table: its entries in field order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    entries: Vec<(String, Entry)>,
}

impl Table {
    /// An empty table.
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds a plain key.
    pub fn value(&mut self, key: &str, v: Value) -> &mut Table {
        self.entries.push((key.to_string(), Entry::Value(v)));
        self
    }

    /// Adds a string key.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Table {
        self.value(key, Value::Str(v.to_string()))
    }

    /// Adds a sub-table.
    pub fn table(&mut self, key: &str, t: Table) -> &mut Table {
        self.entries.push((key.to_string(), Entry::Table(t)));
        self
    }

    /// Adds an array of tables (`[[key]]`); an empty one writes nothing.
    pub fn tables(&mut self, key: &str, ts: Vec<Table>) -> &mut Table {
        self.entries.push((key.to_string(), Entry::Tables(ts)));
        self
    }

    /// The document this table encodes to, as the Go encoder writes it.
    pub fn encode(&self) -> String {
        let mut enc = Encoder { out: String::new() };
        enc.map_or_struct(&[], self);
        enc.out
    }
}

/// The Go encoder's string escapes (`dblQuotedReplacer`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A key part, bare when it may be.
fn key_part(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        k.to_string()
    } else {
        quote(k)
    }
}

struct Encoder {
    out: String,
}

impl Encoder {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn indent(key: &[String]) -> String {
        "  ".repeat(key.len().saturating_sub(1))
    }

    fn header(key: &[String]) -> String {
        key.iter()
            .map(|k| key_part(k))
            .collect::<Vec<_>>()
            .join(".")
    }

    fn element(&mut self, v: &Value) {
        match v {
            Value::Str(s) => self.out.push_str(&quote(s)),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => self.out.push_str(&i.to_string()),
            Value::Array(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.element(item);
                }
                self.out.push(']');
            }
        }
    }

    fn map_or_struct(&mut self, key: &[String], t: &Table) {
        for (k, e) in &t.entries {
            if let Entry::Value(v) = e {
                let mut path = key.to_vec();
                path.push(k.clone());
                self.out
                    .push_str(&format!("{}{} = ", Self::indent(&path), key_part(k)));
                self.element(v);
                self.newline();
            }
        }
        for (k, e) in &t.entries {
            let mut path = key.to_vec();
            path.push(k.clone());
            match e {
                Entry::Value(_) => {}
                Entry::Table(sub) => {
                    if path.len() == 1 {
                        self.newline();
                    }
                    self.out
                        .push_str(&format!("{}[{}]", Self::indent(&path), Self::header(&path)));
                    self.newline();
                    self.map_or_struct(&path, sub);
                }
                Entry::Tables(subs) => {
                    for sub in subs {
                        self.newline();
                        self.out.push_str(&format!(
                            "{}[[{}]]",
                            Self::indent(&path),
                            Self::header(&path)
                        ));
                        self.newline();
                        self.map_or_struct(&path, sub);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_before_tables_and_tables_are_indented() {
        let mut mirror = Table::new();
        mirror.str("location", "m.example.com");
        let mut reg = Table::new();
        reg.str("prefix", "").str("location", "r.example.com");
        reg.tables("mirror", vec![mirror]);
        reg.value("blocked", Value::Bool(true));
        let mut doc = Table::new();
        doc.tables("registry", vec![reg]);
        doc.value(
            "unqualified-search-registries",
            Value::Array(vec![Value::Str("a".into()), Value::Str("b".into())]),
        );
        assert_eq!(
            doc.encode(),
            "unqualified-search-registries = [\"a\", \"b\"]\n\n[[registry]]\n  prefix = \"\"\n  location = \"r.example.com\"\n  blocked = true\n\n  [[registry.mirror]]\n    location = \"m.example.com\"\n"
        );
    }

    #[test]
    fn an_empty_array_and_escapes() {
        let mut doc = Table::new();
        doc.value("a", Value::Array(vec![]));
        doc.str("b", "q\"\\\u{1}");
        assert_eq!(doc.encode(), "a = []\nb = \"q\\\"\\\\\\u0001\"\n");
    }

    #[test]
    fn a_table_at_the_start_has_no_blank_line() {
        let mut inner = Table::new();
        inner.str("k", "v");
        let mut doc = Table::new();
        doc.table("aliases", inner);
        assert_eq!(doc.encode(), "[aliases]\n  k = \"v\"\n");
    }
}
