//! Parsing the template subset: text, `{{ actions }}` with trim markers and comments, `if` /
//! `else if` / `else`, `range` (with `$i, $e :=`), `with`, variables and pipelines.

use super::TemplateError;
use crate::gocompat::quote::go_quote;

/// A parsed template: a list of nodes.
pub type Tree = Vec<Node>;

/// One node of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Literal text.
    Text(String),
    /// `{{pipeline}}`: prints the value (nothing when it declares or assigns a variable).
    Action(Pipeline),
    /// `{{if}}` / `{{with}}` / `{{range}}`, its body and its `else` part.
    Block {
        /// Which block.
        kind: BlockKind,
        /// The condition or the value ranged over.
        pipe: Pipeline,
        /// The body.
        body: Tree,
        /// The `else` part (an `else if` is a nested `if` here).
        otherwise: Tree,
    },
}

/// The kind of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `if`.
    If,
    /// `with`: the body sees the value as dot.
    With,
    /// `range`: the body runs once per element.
    Range,
}

/// A pipeline: optional variable declarations, then commands joined by `|`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pipeline {
    /// Declared or assigned variable names (without `$`).
    pub vars: Vec<String>,
    /// `=` rather than `:=`.
    pub assign: bool,
    /// The commands.
    pub cmds: Vec<Command>,
}

/// One command: a function and its arguments, or a single operand.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The operands, the first one possibly a function name.
    pub args: Vec<Operand>,
}

/// An operand of a command.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// `.` or `.A.B`: fields of dot.
    Field(Vec<String>),
    /// `$x.A.B` (`$` alone is the root).
    Var(String, Vec<String>),
    /// A function name.
    Func(String),
    /// A string literal.
    Str(String),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// `nil`.
    Nil,
    /// `(pipeline)` with optional fields after it.
    Sub(Box<Pipeline>, Vec<String>),
}

/// Parses a template.
pub fn parse(src: &str) -> Result<Tree, TemplateError> {
    let items = split(src)?;
    let mut p = Parser { items, pos: 0 };
    let (tree, end) = p.list()?;
    match end {
        None => Ok(tree),
        Some((kw, line)) => Err(TemplateError::at(line, format!("unexpected {{{{{kw}}}}}"))),
    }
}

/// A piece of the source: text, or the inside of an action with its line.
#[derive(Debug)]
enum Item {
    Text(String),
    Action(String, usize),
}

/// Splits the source into text and actions, applying trim markers and dropping comments.
fn split(src: &str) -> Result<Vec<Item>, TemplateError> {
    let mut items = Vec::new();
    let mut rest = src;
    let mut line = 1;
    let mut trim_next = false;
    while let Some(open) = rest.find("{{") {
        let mut text = &rest[..open];
        if trim_next {
            text = text.trim_start();
        }
        let after = &rest[open + 2..];
        let trim_before =
            after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n");
        if trim_before {
            text = text.trim_end();
        }
        if !text.is_empty() {
            items.push(Item::Text(text.to_string()));
        }
        line += rest[..open].matches('\n').count();
        let body_start = if trim_before { 1 } else { 0 };
        let close = find_close(&after[body_start..])
            .ok_or_else(|| TemplateError::at(line, "unclosed action".into()))?;
        let mut inner = &after[body_start..body_start + close];
        trim_next = false;
        if inner.ends_with(" -") || inner.ends_with("\t-") || inner.ends_with("\n-") {
            inner = &inner[..inner.len() - 1];
            trim_next = true;
        }
        let trimmed = inner.trim();
        if trimmed.starts_with("/*") {
            if !trimmed.ends_with("*/") {
                return Err(TemplateError::at(line, "unclosed comment".into()));
            }
        } else {
            items.push(Item::Action(trimmed.to_string(), line));
        }
        line += after[..body_start + close].matches('\n').count();
        rest = &after[body_start + close + 2..];
    }
    let text = if trim_next { rest.trim_start() } else { rest };
    if !text.is_empty() {
        items.push(Item::Text(text.to_string()));
    }
    Ok(items)
}

/// The offset of the `}}` closing an action, skipping quoted strings and comments.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    if s.trim_start().starts_with("/*") {
        let start = s.find("/*")?;
        let end = s[start + 2..].find("*/")? + start + 4;
        return s[end..].find("}}").map(|j| j + end);
    }
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

struct Parser {
    items: Vec<Item>,
    pos: usize,
}

impl Parser {
    /// Parses nodes until `end`, `else` or the end of input; returns the terminating keyword
    /// (`end`, `else`, or `else <rest>`) and its line.
    fn list(&mut self) -> Result<(Tree, Option<(String, usize)>), TemplateError> {
        let mut out = Vec::new();
        while self.pos < self.items.len() {
            let idx = self.pos;
            self.pos += 1;
            let (action, line) = match &self.items[idx] {
                Item::Text(t) => {
                    out.push(Node::Text(t.clone()));
                    continue;
                }
                Item::Action(a, l) => (a.clone(), *l),
            };
            let (word, rest) = split_word(&action);
            match word {
                "end" | "else" => return Ok((out, Some((action.clone(), line)))),
                "if" | "with" | "range" => {
                    let kind = match word {
                        "if" => BlockKind::If,
                        "with" => BlockKind::With,
                        _ => BlockKind::Range,
                    };
                    out.push(self.block(kind, rest, line)?);
                }
                "define" | "template" | "block" | "break" | "continue" => {
                    return Err(TemplateError::at(
                        line,
                        format!("{{{{{word}}}}} is not supported"),
                    ))
                }
                _ => out.push(Node::Action(pipeline(&action, line)?)),
            }
        }
        Ok((out, None))
    }

    fn block(&mut self, kind: BlockKind, head: &str, line: usize) -> Result<Node, TemplateError> {
        let pipe = pipeline(head, line)?;
        if kind == BlockKind::Range && pipe.vars.len() > 2
            || kind != BlockKind::Range && pipe.vars.len() > 1
        {
            return Err(TemplateError::at(line, "too many declarations".into()));
        }
        let (body, end) = self.list()?;
        let Some((kw, kw_line)) = end else {
            return Err(TemplateError::at(line, "missing {{end}}".into()));
        };
        let otherwise = if kw == "end" {
            Vec::new()
        } else {
            let (_, rest) = split_word(&kw);
            let (w2, rest2) = split_word(rest);
            if w2 == "if" || w2 == "with" {
                // `else if` / `else with` chain: one nested block sharing this block's end.
                let k2 = if w2 == "if" {
                    BlockKind::If
                } else {
                    BlockKind::With
                };
                vec![self.block(k2, rest2, kw_line)?]
            } else if !rest.trim().is_empty() {
                return Err(TemplateError::at(
                    kw_line,
                    format!("unexpected {{{{{kw}}}}}"),
                ));
            } else {
                let (els, end2) = self.list()?;
                match end2 {
                    Some((k, _)) if k == "end" => els,
                    _ => return Err(TemplateError::at(kw_line, "missing {{end}}".into())),
                }
            }
        };
        Ok(Node::Block {
            kind,
            pipe,
            body,
            otherwise,
        })
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s
        .find(|c: char| c.is_whitespace() || c == '(')
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// A token of an action.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Operand(Operand),
    /// Fields directly after a `)`, e.g. `(index . 0).Name`.
    Fields(Vec<String>),
    LParen,
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

fn lex(s: &str, line: usize) -> Result<Vec<Tok>, TemplateError> {
    let err = |m: String| TemplateError::at(line, m);
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && (chars[*i].is_alphanumeric() || chars[*i] == '_') {
            *i += 1;
        }
        chars[start..*i].iter().collect()
    };
    let fields = |i: &mut usize| -> Vec<String> {
        let mut f = Vec::new();
        while *i < chars.len() && chars[*i] == '.' {
            *i += 1;
            let start = *i;
            while *i < chars.len() && (chars[*i].is_alphanumeric() || chars[*i] == '_') {
                *i += 1;
            }
            f.push(chars[start..*i].iter().collect::<String>());
        }
        f
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Tok::LParen);
                i += 1;
            }
            ')' => {
                out.push(Tok::RParen);
                i += 1;
                if i < chars.len() && chars[i] == '.' {
                    let f = fields(&mut i);
                    out.push(Tok::Fields(f));
                }
            }
            '|' => {
                out.push(Tok::Pipe);
                i += 1;
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1;
            }
            ':' if chars.get(i + 1) == Some(&'=') => {
                out.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                out.push(Tok::Assign);
                i += 1;
            }
            '.' => {
                let f = fields(&mut i);
                let f = if f == [""] { Vec::new() } else { f };
                if f.iter().any(String::is_empty) {
                    return Err(err("bad field name".into()));
                }
                out.push(Tok::Operand(Operand::Field(f)));
            }
            '$' => {
                i += 1;
                let name = ident(&mut i);
                let f = fields(&mut i);
                out.push(Tok::Operand(Operand::Var(name, f)));
            }
            '"' => {
                let mut v = String::new();
                i += 1;
                loop {
                    let Some(&c) = chars.get(i) else {
                        return Err(err("unterminated quoted string".into()));
                    };
                    i += 1;
                    match c {
                        '"' => break,
                        '\\' => {
                            let e = chars.get(i).copied().unwrap_or('\\');
                            i += 1;
                            v.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '\\' => '\\',
                                '"' => '"',
                                other => return Err(err(format!("unsupported escape \\{other}"))),
                            });
                        }
                        c => v.push(c),
                    }
                }
                out.push(Tok::Operand(Operand::Str(v)));
            }
            '`' => {
                i += 1;
                let start = i;
                while i < chars.len() && chars[i] != '`' {
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(err("unterminated raw quoted string".into()));
                }
                out.push(Tok::Operand(Operand::Str(chars[start..i].iter().collect())));
                i += 1;
            }
            c if c.is_ascii_digit()
                || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let op = if let Ok(n) = text.parse::<i64>() {
                    Operand::Int(n)
                } else if let Ok(f) = text.parse::<f64>() {
                    Operand::Float(f)
                } else {
                    return Err(err(format!("bad number syntax: {}", go_quote(&text))));
                };
                out.push(Tok::Operand(op));
            }
            c if c.is_alphabetic() || c == '_' => {
                let word = ident(&mut i);
                out.push(Tok::Operand(match word.as_str() {
                    "true" => Operand::Bool(true),
                    "false" => Operand::Bool(false),
                    "nil" => Operand::Nil,
                    _ => Operand::Func(word),
                }));
            }
            other => return Err(err(format!("unexpected {other:?} in action"))),
        }
    }
    Ok(out)
}

/// Parses the inside of an action as a pipeline.
fn pipeline(s: &str, line: usize) -> Result<Pipeline, TemplateError> {
    let toks = lex(s, line)?;
    let mut pos = 0;
    let p = pipeline_toks(&toks, &mut pos, line, true)?;
    if pos != toks.len() {
        return Err(TemplateError::at(
            line,
            format!("unexpected token in {s:?}"),
        ));
    }
    Ok(p)
}

fn pipeline_toks(
    toks: &[Tok],
    pos: &mut usize,
    line: usize,
    top: bool,
) -> Result<Pipeline, TemplateError> {
    let err = |m: &str| TemplateError::at(line, m.to_string());
    let mut p = Pipeline::default();
    // Declarations: `$x :=`, `$x =`, `$i, $e :=`.
    if top {
        let mut j = *pos;
        let mut vars = Vec::new();
        while let Some(Tok::Operand(Operand::Var(name, f))) = toks.get(j) {
            if !f.is_empty() {
                break;
            }
            vars.push(name.clone());
            j += 1;
            match toks.get(j) {
                Some(Tok::Comma) => j += 1,
                Some(Tok::Declare) | Some(Tok::Assign) => {
                    p.assign = toks.get(j) == Some(&Tok::Assign);
                    p.vars = std::mem::take(&mut vars);
                    *pos = j + 1;
                    break;
                }
                _ => break,
            }
        }
    }
    loop {
        let mut args = Vec::new();
        while let Some(t) = toks.get(*pos) {
            match t {
                Tok::Operand(o) => {
                    args.push(o.clone());
                    *pos += 1;
                }
                Tok::LParen => {
                    *pos += 1;
                    let sub = pipeline_toks(toks, pos, line, false)?;
                    if toks.get(*pos) != Some(&Tok::RParen) {
                        return Err(err("unclosed left paren"));
                    }
                    *pos += 1;
                    let fields = match toks.get(*pos) {
                        Some(Tok::Fields(f)) => {
                            *pos += 1;
                            f.clone()
                        }
                        _ => Vec::new(),
                    };
                    args.push(Operand::Sub(Box::new(sub), fields));
                }
                _ => break,
            }
        }
        if args.is_empty() {
            return Err(err("missing value for command"));
        }
        p.cmds.push(Command { args });
        match toks.get(*pos) {
            Some(Tok::Pipe) => *pos += 1,
            _ => break,
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_markers_eat_whitespace() {
        let t = parse("a  {{- .X -}}  \n b").unwrap_or_default();
        assert_eq!(
            t,
            vec![
                Node::Text("a".into()),
                Node::Action(Pipeline {
                    cmds: vec![Command {
                        args: vec![Operand::Field(vec!["X".into()])]
                    }],
                    ..Pipeline::default()
                }),
                Node::Text("b".into()),
            ]
        );
    }

    #[test]
    fn a_minus_number_is_not_a_trim_marker() {
        let t = parse("{{-3}}").unwrap_or_default();
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn comments_vanish() {
        assert_eq!(parse("x{{/* }} */}}y").unwrap_or_default().len(), 2);
    }

    #[test]
    fn else_if_nests() {
        let t = parse("{{if .A}}a{{else if .B}}b{{else}}c{{end}}").unwrap_or_default();
        let [Node::Block { otherwise, .. }] = t.as_slice() else {
            panic!("{t:?}");
        };
        assert!(matches!(
            otherwise.as_slice(),
            [Node::Block {
                kind: BlockKind::If,
                ..
            }]
        ));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("a\n\n{{if .X}}").err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("line 3: missing {{end}}"));
        assert!(parse("{{end}}").is_err());
        assert!(parse("{{.X").is_err());
        assert!(parse("{{template \"x\"}}").is_err());
    }
}
