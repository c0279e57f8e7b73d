//! The functions templates can call: text/template's built-ins that our templates need, and
//! the helpers upstream registers for its templates (same names, same results).

use std::cmp::Ordering;

use serde_json::Value;

use super::exec::{field, truthy};
use super::TemplateError;

fn err(msg: impl Into<String>) -> TemplateError {
    TemplateError::new(msg.into())
}

/// The names of the callable functions.
pub const FUNCTIONS: &[&str] = &[
    "and",
    "or",
    "not",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "len",
    "index",
    "print",
    "printf",
    "println",
    "join",
    "indent",
    "toString",
    "skip",
    "urlHost",
    "urlPort",
    "platformType",
    "onPremPlatformShortName",
    "credentialProviderConfigFlag",
];

/// A short name for a value's type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// A map's entries in key order (as Go visits and prints maps).
pub fn sorted(o: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = o.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// A value as `{{.}}` prints it: strings as they are, numbers and booleans as Go's `%v`, lists
/// as `[a b]`, maps as `map[k:v]` (keys sorted), and nothing as the empty string.
pub fn print_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            (_, _, Some(f)) => f.to_string(),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(print_value).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(o) => format!(
            "map[{}]",
            sorted(o)
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", print_value(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), TemplateError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(err(format!(
            "wrong number of args for {name}: want {n} got {}",
            args.len()
        )))
    }
}

fn as_str<'a>(name: &str, v: &'a Value) -> Result<&'a str, TemplateError> {
    v.as_str()
        .ok_or_else(|| err(format!("{name}: expected string; found {}", print_value(v))))
}

fn as_int(name: &str, v: &Value) -> Result<i64, TemplateError> {
    v.as_i64().ok_or_else(|| {
        err(format!(
            "{name}: expected integer; found {}",
            print_value(v)
        ))
    })
}

/// Compares two basic values; values of different kinds do not compare.
fn compare(a: &Value, b: &Value) -> Result<Ordering, TemplateError> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal))
        }
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
        (Value::Null, Value::Null) => Ok(Ordering::Equal),
        _ => Err(err("incompatible types for comparison")),
    }
}

fn ordered(name: &str, args: &[Value], want: fn(Ordering) -> bool) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    if matches!(args[0], Value::Bool(_) | Value::Null) {
        return Err(err("invalid type for comparison"));
    }
    Ok(Value::Bool(want(compare(&args[0], &args[1])?)))
}

/// Go's `fmt.Sprintf` for the verbs `%s`, `%v`, `%d`, `%q` and `%%`.
fn sprintf(format: &str, args: &[Value]) -> Result<String, TemplateError> {
    let mut out = String::new();
    let mut it = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let verb = chars.next();
        if verb == Some('%') {
            out.push('%');
            continue;
        }
        let Some(arg) = it.next() else {
            out.push_str(&format!("%!{}(MISSING)", verb.unwrap_or(' ')));
            continue;
        };
        match verb {
            Some('s') | Some('v') => out.push_str(&print_value(arg)),
            Some('d') => out.push_str(&as_int("printf", arg)?.to_string()),
            Some('q') => out.push_str(&format!("{:?}", print_value(arg))),
            other => {
                return Err(err(format!(
                    "printf: unsupported verb %{}",
                    other.unwrap_or(' ')
                )))
            }
        }
    }
    Ok(out)
}

/// Go's `fmt.Sprint`: a space between operands when neither is a string.
fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !a.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        out.push_str(&print_value(a));
    }
    out
}

/// The `platformStatus` of a render config (`.Infra.Status.PlatformStatus`).
fn platform_status(cfg: &Value) -> Result<Value, TemplateError> {
    let infra = field(cfg, "Infra")?;
    let status = field(&infra, "Status")?;
    field(&status, "PlatformStatus")
}

fn platform_type(cfg: &Value) -> Result<String, TemplateError> {
    let ps = platform_status(cfg)?;
    Ok(print_value(&field(&ps, "Type")?))
}

/// The host of a URL, without port or IPv6 brackets.
fn url_host(u: &str) -> String {
    let (host, _) = split_host_port(u);
    host
}

fn split_host_port(u: &str) -> (String, String) {
    let Some((_, rest)) = u.split_once("://") else {
        return (String::new(), String::new());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(inner) = hostport.strip_prefix('[') {
        let (h, after) = inner.split_once(']').unwrap_or((inner, ""));
        return (
            h.to_string(),
            after.strip_prefix(':').unwrap_or("").to_string(),
        );
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.to_string()),
        None => (hostport.to_string(), String::new()),
    }
}

/// Calls a function.
pub fn call(name: &str, args: &[Value]) -> Result<Value, TemplateError> {
    let s = |v: String| Ok(Value::String(v));
    match name {
        "and" => Ok(args
            .iter()
            .find(|a| !truthy(a))
            .or(args.last())
            .cloned()
            .unwrap_or(Value::Null)),
        "or" => Ok(args
            .iter()
            .find(|a| truthy(a))
            .or(args.last())
            .cloned()
            .unwrap_or(Value::Null)),
        "not" => {
            arity(name, args, 1)?;
            Ok(Value::Bool(!truthy(&args[0])))
        }
        "eq" => {
            let Some((first, rest)) = args.split_first() else {
                return Err(err("missing argument for comparison"));
            };
            if rest.is_empty() {
                return Err(err("missing argument for comparison"));
            }
            for r in rest {
                if compare(first, r)? == Ordering::Equal {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        "ne" => {
            arity(name, args, 2)?;
            Ok(Value::Bool(compare(&args[0], &args[1])? != Ordering::Equal))
        }
        "lt" => ordered(name, args, |o| o == Ordering::Less),
        "le" => ordered(name, args, |o| o != Ordering::Greater),
        "gt" => ordered(name, args, |o| o == Ordering::Greater),
        "ge" => ordered(name, args, |o| o != Ordering::Less),
        "len" => {
            arity(name, args, 1)?;
            match &args[0] {
                Value::String(x) => Ok(Value::from(x.len())),
                Value::Array(a) => Ok(Value::from(a.len())),
                Value::Object(o) => Ok(Value::from(o.len())),
                Value::Null => Ok(Value::from(0)),
                other => Err(err(format!("len of type {}", type_name(other)))),
            }
        }
        "index" => {
            let Some((item, keys)) = args.split_first() else {
                return Err(err("wrong number of args for index: want at least 1 got 0"));
            };
            let mut v = item.clone();
            for k in keys {
                v = match (&v, k) {
                    (Value::Array(a), Value::Number(n)) => {
                        let i = n
                            .as_u64()
                            .and_then(|i| usize::try_from(i).ok())
                            .filter(|i| *i < a.len())
                            .ok_or_else(|| err(format!("index out of range: {n}")))?;
                        a[i].clone()
                    }
                    (Value::Object(o), Value::String(key)) => {
                        o.get(key).cloned().unwrap_or(Value::Null)
                    }
                    (Value::Null, _) => Value::Null,
                    (c, k) => {
                        return Err(err(format!(
                            "can't index item of type {} with {}",
                            type_name(c),
                            print_value(k)
                        )))
                    }
                };
            }
            Ok(v)
        }
        "print" => s(sprint(args)),
        "toString" => {
            arity(name, args, 1)?;
            s(print_value(&args[0]))
        }
        "println" => s(args.iter().map(print_value).collect::<Vec<_>>().join(" ") + "\n"),
        "printf" => {
            let Some((f, rest)) = args.split_first() else {
                return Err(err(
                    "wrong number of args for printf: want at least 1 got 0",
                ));
            };
            s(sprintf(as_str(name, f)?, rest)?)
        }
        "join" => {
            arity(name, args, 2)?;
            let sep = as_str(name, &args[1])?;
            let items: Vec<&str> = match &args[0] {
                Value::Array(a) => a
                    .iter()
                    .map(|v| as_str(name, v))
                    .collect::<Result<_, _>>()?,
                Value::Null => Vec::new(),
                other => {
                    return Err(err(format!(
                        "join: expected list; found {}",
                        print_value(other)
                    )))
                }
            };
            s(items.join(sep))
        }
        "indent" => {
            arity(name, args, 2)?;
            let pad = " ".repeat(usize::try_from(as_int(name, &args[0])?).unwrap_or(0));
            let text = print_value(&args[1]);
            s(format!("{pad}{}", text.replace('\n', &format!("\n{pad}"))))
        }
        "skip" => {
            arity(name, args, 1)?;
            let key = as_str(name, &args[0])?;
            let mut chars = key.chars();
            let ok = chars
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_lowercase())
                && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
            if !ok {
                return Err(err("invalid key for skipKey"));
            }
            s(format!("{{{{.{key}}}}}"))
        }
        "urlHost" => {
            arity(name, args, 1)?;
            s(url_host(as_str(name, &args[0])?))
        }
        "urlPort" => {
            arity(name, args, 1)?;
            let u = as_str(name, &args[0])?;
            let (_, port) = split_host_port(u);
            if !port.is_empty() {
                return s(port);
            }
            match u.split_once("://").map(|(scheme, _)| scheme) {
                Some("https") => s("443".into()),
                Some("http") => s("80".into()),
                _ => Err(err(format!("unknown scheme in {u}"))),
            }
        }
        "platformType" => {
            arity(name, args, 1)?;
            if platform_status(&args[0])?.is_null() {
                return Err(err("could not determine platform type"));
            }
            s(platform_type(&args[0])?)
        }
        "onPremPlatformShortName" => {
            arity(name, args, 1)?;
            s(match platform_type(&args[0])?.as_str() {
                "BareMetal" => "kni",
                "oVirt" => "ovirt",
                "OpenStack" => "openstack",
                "VSphere" => "vsphere",
                "Nutanix" => "nutanix",
                _ => "",
            }
            .into())
        }
        "credentialProviderConfigFlag" => {
            arity(name, args, 1)?;
            let file = match platform_type(&args[0])?.as_str() {
                "AWS" => "ecr-credential-provider.yaml",
                "GCP" => "gcr-credential-provider.yaml",
                "Azure" => "acr-credential-provider.yaml",
                _ => return s(String::new()),
            };
            s(format!("--image-credential-provider-bin-dir=/usr/libexec/kubelet-image-credential-provider-plugins --image-credential-provider-config=/etc/kubernetes/credential-providers/{file}"))
        }
        _ => Err(err(format!("function {name:?} not defined"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls() {
        assert_eq!(
            url_host("https://api-int.example.com:6443/x"),
            "api-int.example.com"
        );
        assert_eq!(url_host("https://[fd00::1]:6443"), "fd00::1");
        assert_eq!(
            call("urlPort", &[json!("https://a.b")]).ok(),
            Some(json!("443"))
        );
        assert_eq!(
            call("urlPort", &[json!("http://a.b:8080/")]).ok(),
            Some(json!("8080"))
        );
        assert!(call("urlPort", &[json!("ftp://a.b")]).is_err());
    }

    #[test]
    fn skip_keeps_the_placeholder() {
        assert_eq!(
            call("skip", &[json!("node_name")]).ok(),
            Some(json!("{{.node_name}}"))
        );
        assert!(call("skip", &[json!("Bad")]).is_err());
    }

    #[test]
    fn indent_and_join() {
        assert_eq!(
            call("indent", &[json!(2), json!("a\nb")]).ok(),
            Some(json!("  a\n  b"))
        );
        assert_eq!(
            call("join", &[json!(["a", "b"]), json!(",")]).ok(),
            Some(json!("a,b"))
        );
    }

    #[test]
    fn printing_follows_go() {
        assert_eq!(print_value(&json!([1, "a", true])), "[1 a true]");
        assert_eq!(print_value(&json!({"b": 1, "a": 2})), "map[a:2 b:1]");
        assert_eq!(
            call("print", &[json!(1), json!(2), json!("x")]).ok(),
            Some(json!("1 2x"))
        );
        assert_eq!(
            call("printf", &[json!("%s=%d%%"), json!("a"), json!(3)]).ok(),
            Some(json!("a=3%"))
        );
    }

    #[test]
    fn comparisons() {
        assert_eq!(
            call("eq", &[json!("a"), json!("b"), json!("a")]).ok(),
            Some(json!(true))
        );
        assert!(call("eq", &[json!("a"), json!(1)]).is_err());
        assert_eq!(call("lt", &[json!(1), json!(2)]).ok(), Some(json!(true)));
        assert_eq!(
            call("and", &[json!(1), json!(""), json!(2)]).ok(),
            Some(json!(""))
        );
        assert_eq!(call("or", &[json!(0), json!("x")]).ok(), Some(json!("x")));
    }

    #[test]
    fn platform_helpers_read_the_infra() {
        let cfg = json!({"infra": {"status": {"platformStatus": {"type": "BareMetal"}}}});
        assert_eq!(
            call("platformType", std::slice::from_ref(&cfg)).ok(),
            Some(json!("BareMetal"))
        );
        assert_eq!(
            call("onPremPlatformShortName", &[cfg]).ok(),
            Some(json!("kni"))
        );
        assert!(call("platformType", &[json!({})]).is_err());
    }
}
