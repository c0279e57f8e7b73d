//! Executing a parsed template against JSON data.

use serde_json::Value;

use super::funcs;
use super::parse::{BlockKind, Command, Node, Operand, Pipeline, Tree};
use super::TemplateError;

/// How JSON objects in the data stand for Go values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Objects {
    /// Objects are Go maps: an empty one is false.
    #[default]
    Maps,
    /// Objects are Go structs (or non-nil pointers to them): always true. Data meant this way
    /// gives empty maps and nil pointers as `null`.
    Structs,
}

/// How to read the data as Go values.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecOptions<'a> {
    /// What objects stand for.
    pub objects: Objects,
    /// The keys of the data's root object that are Go maps: printing a key missing from one
    /// (`{{.Images.nope}}`, `{{$.Images.nope}}`) gives `<no value>` as Go does, where a
    /// missing struct field prints its zero value.
    pub root_maps: &'a [&'a str],
}

/// What Go prints for a key missing from a map.
pub const NO_VALUE: &str = "<no value>";

/// Runs `tree` with `data` as dot and `$`, objects being maps.
pub fn execute(tree: &Tree, data: &Value) -> Result<String, TemplateError> {
    execute_with(tree, data, ExecOptions::default())
}

/// Runs `tree` with `data` as dot and `$`, read as `opts` says.
pub fn execute_with(
    tree: &Tree,
    data: &Value,
    opts: ExecOptions<'_>,
) -> Result<String, TemplateError> {
    let mut st = State {
        vars: vec![("".to_string(), data.clone())],
        out: String::new(),
        objects: opts.objects,
        root: data,
        root_maps: opts.root_maps,
    };
    st.walk(tree, data)?;
    Ok(st.out)
}

struct State<'a> {
    /// Variables in scope, innermost last; `$` is the first.
    vars: Vec<(String, Value)>,
    out: String,
    objects: Objects,
    /// The data (dot at the top, and inside `if` blocks).
    root: &'a Value,
    root_maps: &'a [&'a str],
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
pub fn truthy(v: &Value) -> bool {
    truthy_as(v, Objects::Maps)
}

/// Go's truth with objects standing for `objects`: structs are always true.
pub fn truthy_as(v: &Value, objects: Objects) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => objects == Objects::Structs || !o.is_empty(),
    }
}

/// A field of a value: the exact key, else the first key equal ignoring ASCII case (so Go
/// field names like `PlatformStatus` find JSON keys like `platformStatus`). Fields of nothing
/// are nothing.
pub fn field(v: &Value, name: &str) -> Result<Value, TemplateError> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Object(o) => Ok(o
            .get(name)
            .or_else(|| {
                o.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
            .cloned()
            .unwrap_or(Value::Null)),
        other => Err(TemplateError::new(format!(
            "can't evaluate field {name} in type {}",
            funcs::type_name(other)
        ))),
    }
}

fn fields(mut v: Value, names: &[String]) -> Result<Value, TemplateError> {
    for n in names {
        v = field(&v, n)?;
    }
    Ok(v)
}

impl State<'_> {
    fn walk(&mut self, tree: &Tree, dot: &Value) -> Result<(), TemplateError> {
        let mark = self.vars.len();
        for node in tree {
            match node {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipeline(p, dot)?;
                    if p.vars.is_empty() {
                        if v.is_null() && self.missing_map_key(p, dot) {
                            self.out.push_str(NO_VALUE);
                        } else {
                            self.out.push_str(&funcs::print_value(&v));
                        }
                    }
                }
                Node::Block {
                    kind,
                    pipe,
                    body,
                    otherwise,
                } => self.block(*kind, pipe, body, otherwise, dot)?,
            }
        }
        self.vars.truncate(mark);
        Ok(())
    }

    fn block(
        &mut self,
        kind: BlockKind,
        pipe: &Pipeline,
        body: &Tree,
        otherwise: &Tree,
        dot: &Value,
    ) -> Result<(), TemplateError> {
        let mark = self.vars.len();
        let result = match kind {
            BlockKind::If | BlockKind::With => {
                let v = self.eval(pipe, dot)?;
                if !pipe.vars.is_empty() {
                    self.set_vars(pipe, std::slice::from_ref(&v));
                }
                if truthy_as(&v, self.objects) {
                    let d = if kind == BlockKind::With {
                        v
                    } else {
                        dot.clone()
                    };
                    self.walk(body, &d)
                } else {
                    self.walk(otherwise, dot)
                }
            }
            BlockKind::Range => {
                let v = self.eval(pipe, dot)?;
                let items: Vec<(Value, Value)> = match v {
                    Value::Array(a) => a
                        .into_iter()
                        .enumerate()
                        .map(|(i, e)| (Value::from(i), e))
                        .collect(),
                    Value::Object(o) => funcs::sorted(&o)
                        .into_iter()
                        .map(|(k, e)| (Value::String(k.clone()), e.clone()))
                        .collect(),
                    Value::Null => Vec::new(),
                    Value::Number(n) if n.as_i64().is_some() => (0..n.as_i64().unwrap_or(0))
                        .map(|i| (Value::from(i), Value::from(i)))
                        .collect(),
                    other => {
                        return Err(TemplateError::new(format!(
                            "range can't iterate over {}",
                            funcs::print_value(&other)
                        )))
                    }
                };
                if items.is_empty() {
                    self.walk(otherwise, dot)
                } else {
                    for (k, e) in items {
                        let m = self.vars.len();
                        match pipe.vars.len() {
                            1 => self.vars.push((pipe.vars[0].clone(), e.clone())),
                            2 => {
                                self.vars.push((pipe.vars[0].clone(), k));
                                self.vars.push((pipe.vars[1].clone(), e.clone()));
                            }
                            _ => {}
                        }
                        self.walk(body, &e)?;
                        self.vars.truncate(m);
                    }
                    Ok(())
                }
            }
        };
        self.vars.truncate(mark);
        result
    }

    /// Whether a pipeline is a lone field chain from the root ending at a key missing from one
    /// of the root maps.
    fn missing_map_key(&self, p: &Pipeline, dot: &Value) -> bool {
        let [cmd] = p.cmds.as_slice() else {
            return false;
        };
        let path = match cmd.args.as_slice() {
            [Operand::Field(f)] if std::ptr::eq(dot, self.root) => f,
            [Operand::Var(n, f)] if n.is_empty() => f,
            _ => return false,
        };
        let [map, key] = path.as_slice() else {
            return false;
        };
        if !self.root_maps.iter().any(|m| m.eq_ignore_ascii_case(map)) {
            return false;
        }
        match field(self.root, map) {
            Ok(Value::Object(o)) => !o.contains_key(key),
            Ok(Value::Null) => true,
            _ => false,
        }
    }

    /// Evaluates a pipeline and applies its declarations or assignments.
    fn pipeline(&mut self, p: &Pipeline, dot: &Value) -> Result<Value, TemplateError> {
        let v = self.eval(p, dot)?;
        if !p.vars.is_empty() {
            self.set_vars(p, std::slice::from_ref(&v));
        }
        Ok(v)
    }

    fn set_vars(&mut self, p: &Pipeline, values: &[Value]) {
        for (name, v) in p.vars.iter().zip(values) {
            if p.assign {
                if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    slot.1 = v.clone();
                    continue;
                }
            }
            self.vars.push((name.clone(), v.clone()));
        }
    }

    fn eval(&self, p: &Pipeline, dot: &Value) -> Result<Value, TemplateError> {
        let mut prev: Option<Value> = None;
        for cmd in &p.cmds {
            prev = Some(self.command(cmd, dot, prev)?);
        }
        Ok(prev.unwrap_or(Value::Null))
    }

    fn command(
        &self,
        cmd: &Command,
        dot: &Value,
        piped: Option<Value>,
    ) -> Result<Value, TemplateError> {
        match cmd.args.first() {
            Some(Operand::Func(name)) if matches!(name.as_str(), "and" | "or") => {
                self.and_or(name == "and", &cmd.args[1..], dot, piped)
            }
            Some(Operand::Func(name)) if name == "not" => {
                let mut args = Vec::with_capacity(1);
                for a in &cmd.args[1..] {
                    args.push(self.operand(a, dot)?);
                }
                args.extend(piped);
                if args.len() != 1 {
                    return Err(TemplateError::new(format!(
                        "wrong number of args for not: want 1 got {}",
                        args.len()
                    )));
                }
                Ok(Value::Bool(!truthy_as(&args[0], self.objects)))
            }
            Some(Operand::Func(name)) => {
                let mut args = Vec::with_capacity(cmd.args.len());
                for a in &cmd.args[1..] {
                    args.push(self.operand(a, dot)?);
                }
                if let Some(v) = piped {
                    args.push(v);
                }
                funcs::call(name, &args)
            }
            Some(first) => {
                if cmd.args.len() > 1 || piped.is_some() {
                    return Err(TemplateError::new(format!(
                        "can't give argument to non-function {}",
                        describe(first)
                    )));
                }
                self.operand(first, dot)
            }
            None => Ok(Value::Null),
        }
    }

    /// `and` / `or`, evaluating arguments left to right and stopping at the first that
    /// decides (a false one for `and`, a true one for `or`), whose value is the result.
    fn and_or(
        &self,
        is_and: bool,
        ops: &[Operand],
        dot: &Value,
        piped: Option<Value>,
    ) -> Result<Value, TemplateError> {
        let name = if is_and { "and" } else { "or" };
        if ops.len() + usize::from(piped.is_some()) < 1 {
            return Err(TemplateError::new(format!(
                "wrong number of args for {name}: want at least 1 got 0"
            )));
        }
        let mut last = Value::Null;
        for op in ops {
            last = self.operand(op, dot)?;
            if truthy_as(&last, self.objects) != is_and {
                return Ok(last);
            }
        }
        if let Some(v) = piped {
            last = v;
        }
        Ok(last)
    }

    fn operand(&self, op: &Operand, dot: &Value) -> Result<Value, TemplateError> {
        Ok(match op {
            Operand::Field(f) => fields(dot.clone(), f)?,
            Operand::Var(name, f) => {
                let v = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| TemplateError::new(format!("undefined variable: ${name}")))?;
                fields(v, f)?
            }
            Operand::Func(name) => funcs::call(name, &[])?,
            Operand::Str(s) => Value::String(s.clone()),
            Operand::Int(n) => Value::from(*n),
            Operand::Float(f) => Value::from(*f),
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Nil => Value::Null,
            Operand::Sub(p, f) => fields(self.eval(p, dot)?, f)?,
        })
    }
}

fn describe(op: &Operand) -> String {
    match op {
        Operand::Field(f) => format!(".{}", f.join(".")),
        Operand::Var(n, f) if f.is_empty() => format!("${n}"),
        Operand::Var(n, f) => format!("${n}.{}", f.join(".")),
        Operand::Str(s) => format!("{s:?}"),
        Operand::Int(n) => n.to_string(),
        Operand::Float(n) => n.to_string(),
        Operand::Bool(b) => b.to_string(),
        Operand::Nil => "nil".into(),
        Operand::Func(n) => n.clone(),
        Operand::Sub(..) => "(pipeline)".into(),
    }
}
