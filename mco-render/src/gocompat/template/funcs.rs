//! The functions templates can call: text/template's built-ins that our templates need, and
//! the helpers upstream registers for its templates (same names, same results).

use std::cmp::Ordering;

use serde_json::Value;

use super::exec::{field, truthy};
use super::TemplateError;
use crate::gocompat::quote::go_quote;

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
    "cloudProvider",
    "onPremPlatformAPIServerInternalIP",
    "onPremPlatformAPIServerInternalIPs",
    "onPremPlatformIngressIP",
    "onPremPlatformIngressIPs",
    "isOpenShiftManagedDefaultLB",
    "dnsRecordsType",
    "cloudPlatformAPIIntLoadBalancerIPs",
    "cloudPlatformAPILoadBalancerIPs",
    "cloudPlatformIngressLoadBalancerIPs",
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

/// A string argument; nothing stands for Go's zero string (an unset field).
fn as_str<'a>(name: &str, v: &'a Value) -> Result<&'a str, TemplateError> {
    match v {
        Value::Null => Ok(""),
        Value::String(s) => Ok(s),
        other => Err(err(format!(
            "{name}: expected string; found {}",
            print_value(other)
        ))),
    }
}

fn as_int(name: &str, v: &Value) -> Result<i64, TemplateError> {
    v.as_i64().ok_or_else(|| {
        err(format!(
            "{name}: expected integer; found {}",
            print_value(v)
        ))
    })
}

/// Compares two basic values; values of different kinds do not compare, except that nothing
/// stands for the zero value of the other side's kind (an unset field).
fn compare(a: &Value, b: &Value) -> Result<Ordering, TemplateError> {
    let zero = |other: &Value| match other {
        Value::String(_) => Some(Value::String(String::new())),
        Value::Number(_) => Some(Value::from(0)),
        Value::Bool(_) => Some(Value::Bool(false)),
        _ => None,
    };
    match (a, b) {
        (Value::Null, other) if !other.is_null() => {
            let z = zero(other).ok_or_else(|| err("incompatible types for comparison"))?;
            compare(&z, other)
        }
        (other, Value::Null) if !other.is_null() => {
            let z = zero(other).ok_or_else(|| err("incompatible types for comparison"))?;
            compare(other, &z)
        }
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
            Some('q') => out.push_str(&go_quote(&print_value(arg))),
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

/// The platform section of a platform status for a platform type (`BareMetal` reads
/// `baremetal`).
fn platform_section(ps: &Value, ty: &str) -> Result<Value, TemplateError> {
    field(ps, ty)
}

/// Whether the kubelet runs with an external cloud provider on this platform.
fn cloud_provider_external(ps: &Value) -> Result<bool, TemplateError> {
    Ok(match print_value(&field(ps, "Type")?).as_str() {
        "AlibabaCloud" | "AWS" | "Azure" | "GCP" | "IBMCloud" | "KubeVirt" | "Nutanix"
        | "OpenStack" | "PowerVS" | "VSphere" => true,
        "External" => {
            let ccm = field(&field(ps, "External")?, "CloudControllerManager")?;
            print_value(&field(&ccm, "State")?) == "External"
        }
        _ => false,
    })
}

/// The on-prem virtual IPs (`APIServerInternalIPs` or `IngressIPs`) of the platform; `first`
/// takes the first one only.
fn on_prem_ips(cfg: &Value, key: &str, first: bool, what: &str) -> Result<Value, TemplateError> {
    let ps = platform_status(cfg)?;
    if ps.is_null() {
        return Err(err(""));
    }
    let ty = print_value(&field(&ps, "Type")?);
    let section = match ty.as_str() {
        "BareMetal" | "oVirt" | "OpenStack" | "Nutanix" => {
            let section = platform_section(&ps, &ty)?;
            if section.is_null() {
                return Err(err(format!(
                    "nil pointer evaluating the {ty} platform status"
                )));
            }
            section
        }
        "VSphere" => {
            let section = platform_section(&ps, &ty)?;
            if section.is_null() {
                return Ok(if first {
                    Value::Null
                } else {
                    Value::Array(Vec::new())
                });
            }
            let ips = field(&section, key)?;
            if first && ips.as_array().is_none_or(Vec::is_empty) {
                return Ok(Value::Null);
            }
            section
        }
        _ => return Err(err(format!("invalid platform for {what}"))),
    };
    let ips = field(&section, key)?;
    if !first {
        return Ok(ips);
    }
    ips.as_array()
        .and_then(|a| a.first())
        .cloned()
        .ok_or_else(|| err("index out of range [0] with length 0"))
}

/// Whether the on-prem platform runs its own load balancer (`OpenShiftManagedDefault`).
fn managed_default_lb(cfg: &Value) -> Result<bool, TemplateError> {
    let ps = platform_status(cfg)?;
    if ps.is_null() {
        return Ok(false);
    }
    let ty = print_value(&field(&ps, "Type")?);
    let lb_type = |section: &Value| -> Result<bool, TemplateError> {
        let lb = field(section, "LoadBalancer")?;
        let t = if lb.is_null() {
            "OpenShiftManagedDefault".to_string()
        } else {
            print_value(&field(&lb, "Type")?)
        };
        Ok(t == "OpenShiftManagedDefault")
    };
    match ty.as_str() {
        "BareMetal" | "oVirt" | "OpenStack" | "Nutanix" => {
            let section = platform_section(&ps, &ty)?;
            if section.is_null() {
                Ok(false)
            } else {
                lb_type(&section)
            }
        }
        "VSphere" => {
            let section = platform_section(&ps, &ty)?;
            if section.is_null() {
                return Ok(false);
            }
            let vips = field(&section, "APIServerInternalIPs")?;
            if vips.as_array().is_none_or(Vec::is_empty) {
                return Ok(false);
            }
            lb_type(&section)
        }
        _ => Ok(true),
    }
}

/// The DNS records type of an on-prem platform (`Internal` unless it says otherwise).
fn dns_records_type(cfg: &Value) -> Result<Value, TemplateError> {
    let ps = platform_status(cfg)?;
    if ps.is_null() {
        return Ok(Value::String("Internal".into()));
    }
    let ty = print_value(&field(&ps, "Type")?);
    if matches!(
        ty.as_str(),
        "BareMetal" | "Nutanix" | "OpenStack" | "VSphere"
    ) {
        let section = platform_section(&ps, &ty)?;
        if !section.is_null() {
            return Ok(Value::String(print_value(&field(
                &section,
                "DNSRecordsType",
            )?)));
        }
    }
    Ok(Value::String("Internal".into()))
}

/// Whether a cloud platform hosting its own DNS has load balancer IPs: `Some(true)` when it
/// hosts its DNS and they are given, `Some(false)` when it does and they are not, `None` when
/// it does not host its DNS.
fn cloud_lb_state(ps: &Value, ty: &str) -> Result<Option<bool>, TemplateError> {
    let lb = field(&platform_section(ps, ty)?, "CloudLoadBalancerConfig")?;
    if lb.is_null() || print_value(&field(&lb, "DNSType")?) != "ClusterHosted" {
        return Ok(None);
    }
    Ok(Some(!field(&lb, "ClusterHosted")?.is_null()))
}

/// The cluster-hosted DNS load balancer IPs (`key` of `clusterHosted`) of an AWS, GCP or
/// Azure platform.
fn cloud_lb_ips(cfg: &Value, key: &str, what: &str) -> Result<Value, TemplateError> {
    let ps = platform_status(cfg)?;
    if ps.is_null() {
        return Err(err(""));
    }
    let ty = print_value(&field(&ps, "Type")?);
    let label = match ty.as_str() {
        "GCP" => "GCP",
        "AWS" => "AWS",
        "Azure" => "azure",
        _ => return Err(err("invalid cloud platform for API Server Internal IPs")),
    };
    match cloud_lb_state(&ps, &ty)? {
        Some(true) => {
            let lb = field(&platform_section(&ps, &ty)?, "CloudLoadBalancerConfig")?;
            field(&field(&lb, "ClusterHosted")?, key)
        }
        Some(false) => Err(err(format!(
            "{label} {what} Load Balancer IPs unavailable when the DNSType is ClusterHosted"
        ))),
        None => Err(err("")),
    }
}

/// Calls a function.
pub fn call(name: &str, args: &[Value]) -> Result<Value, TemplateError> {
    for family in [logic, text, platform] {
        if let Some(v) = family(name, args)? {
            return Ok(v);
        }
    }
    Err(err(format!("function {} not defined", go_quote(name))))
}

/// text/template's own functions on values: the boolean ones, comparisons, `len`, `index`.
fn logic(name: &str, args: &[Value]) -> Result<Option<Value>, TemplateError> {
    let r = match name {
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
                    return Ok(Some(Value::Bool(true)));
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
        _ => return Ok(None),
    };
    r.map(Some)
}

/// The functions that print or rewrite text: text/template's `print`, `println`, `printf`, and
/// the MCO's `toString`, `join`, `indent`, `skip`.
fn text(name: &str, args: &[Value]) -> Result<Option<Value>, TemplateError> {
    let s = |v: String| Ok::<_, TemplateError>(Value::String(v));
    let r = match name {
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
        _ => return Ok(None),
    };
    r.map(Some)
}

/// The MCO's functions on URLs and the cluster's platform (its `Infrastructure` status).
fn platform(name: &str, args: &[Value]) -> Result<Option<Value>, TemplateError> {
    let s = |v: String| Ok::<_, TemplateError>(Value::String(v));
    let r = match name {
        "urlHost" => {
            arity(name, args, 1)?;
            s(url_host(as_str(name, &args[0])?))
        }
        "urlPort" => {
            arity(name, args, 1)?;
            let u = as_str(name, &args[0])?;
            let (_, port) = split_host_port(u);
            if !port.is_empty() {
                return Ok(Some(Value::String(port)));
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
                _ => return Ok(Some(Value::String(String::new()))),
            };
            s(format!("--image-credential-provider-bin-dir=/usr/libexec/kubelet-image-credential-provider-plugins --image-credential-provider-config=/etc/kubernetes/credential-providers/{file}"))
        }
        "cloudProvider" => {
            arity(name, args, 1)?;
            let ps = platform_status(&args[0])?;
            let external = !ps.is_null() && cloud_provider_external(&ps)?;
            s(if external { "external" } else { "" }.into())
        }
        "onPremPlatformAPIServerInternalIP" | "onPremPlatformAPIServerInternalIPs" => {
            arity(name, args, 1)?;
            let first = name.ends_with("IP");
            on_prem_ips(
                &args[0],
                "APIServerInternalIPs",
                first,
                "API Server Internal IP",
            )
        }
        "onPremPlatformIngressIP" | "onPremPlatformIngressIPs" => {
            arity(name, args, 1)?;
            on_prem_ips(&args[0], "IngressIPs", name.ends_with("IP"), "Ingress IP")
        }
        "isOpenShiftManagedDefaultLB" => {
            arity(name, args, 1)?;
            Ok(Value::Bool(managed_default_lb(&args[0])?))
        }
        "dnsRecordsType" => {
            arity(name, args, 1)?;
            dns_records_type(&args[0])
        }
        "cloudPlatformAPIIntLoadBalancerIPs" => {
            arity(name, args, 1)?;
            cloud_lb_ips(&args[0], "APIIntLoadBalancerIPs", "Internal API Server")
        }
        "cloudPlatformAPILoadBalancerIPs" => {
            arity(name, args, 1)?;
            cloud_lb_ips(&args[0], "APILoadBalancerIPs", "API Server")
        }
        "cloudPlatformIngressLoadBalancerIPs" => {
            arity(name, args, 1)?;
            cloud_lb_ips(&args[0], "IngressLoadBalancerIPs", "Ingress")
        }
        _ => return Ok(None),
    };
    r.map(Some)
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

    fn status(ps: Value) -> Value {
        json!({"infra": {"status": {"platformStatus": ps}}})
    }

    #[test]
    fn cloud_provider_is_external_on_cloud_platforms() {
        let cp = |ps: Value| call("cloudProvider", &[status(ps)]).ok();
        assert_eq!(cp(json!({"type": "AWS"})), Some(json!("external")));
        assert_eq!(cp(json!({"type": "VSphere"})), Some(json!("external")));
        assert_eq!(cp(json!({"type": "BareMetal"})), Some(json!("")));
        assert_eq!(cp(json!({"type": "None"})), Some(json!("")));
        assert_eq!(cp(json!({"type": "External"})), Some(json!("")));
        assert_eq!(
            cp(
                json!({"type": "External", "external": {"cloudControllerManager": {"state": "External"}}})
            ),
            Some(json!("external"))
        );
        assert_eq!(call("cloudProvider", &[json!({})]).ok(), Some(json!("")));
    }

    #[test]
    fn on_prem_virtual_ips() {
        let bm = status(json!({"type": "BareMetal", "baremetal": {
            "apiServerInternalIPs": ["10.0.0.5", "fd00::5"], "ingressIPs": ["10.0.0.7"]}}));
        let c = |f: &str, cfg: &Value| call(f, std::slice::from_ref(cfg));
        assert_eq!(
            c("onPremPlatformAPIServerInternalIPs", &bm).ok(),
            Some(json!(["10.0.0.5", "fd00::5"]))
        );
        assert_eq!(
            c("onPremPlatformAPIServerInternalIP", &bm).ok(),
            Some(json!("10.0.0.5"))
        );
        assert_eq!(
            c("onPremPlatformIngressIP", &bm).ok(),
            Some(json!("10.0.0.7"))
        );
        // vSphere without its section (UPI) has none; other on-prem platforms need theirs.
        let upi = status(json!({"type": "VSphere"}));
        assert_eq!(c("onPremPlatformIngressIPs", &upi).ok(), Some(json!([])));
        assert_eq!(c("onPremPlatformIngressIP", &upi).ok(), Some(Value::Null));
        assert!(c(
            "onPremPlatformIngressIPs",
            &status(json!({"type": "OpenStack"}))
        )
        .is_err());
        assert!(c("onPremPlatformIngressIPs", &status(json!({"type": "AWS"}))).is_err());
        let empty = status(json!({"type": "Nutanix", "nutanix": {}}));
        assert_eq!(
            c("onPremPlatformIngressIPs", &empty).ok(),
            Some(Value::Null)
        );
        assert!(c("onPremPlatformIngressIP", &empty).is_err());
    }

    #[test]
    fn managed_load_balancer_and_dns_records() {
        let lb = |ps: Value| call("isOpenShiftManagedDefaultLB", &[status(ps)]).ok();
        assert_eq!(
            lb(json!({"type": "BareMetal", "baremetal": {}})),
            Some(json!(true))
        );
        assert_eq!(
            lb(
                json!({"type": "BareMetal", "baremetal": {"loadBalancer": {"type": "UserManaged"}}})
            ),
            Some(json!(false))
        );
        assert_eq!(lb(json!({"type": "BareMetal"})), Some(json!(false)));
        assert_eq!(
            lb(json!({"type": "VSphere", "vsphere": {}})),
            Some(json!(false))
        );
        assert_eq!(
            lb(json!({"type": "VSphere", "vsphere": {"apiServerInternalIPs": ["1.2.3.4"]}})),
            Some(json!(true))
        );
        assert_eq!(lb(json!({"type": "AWS"})), Some(json!(true)));
        let dns = |ps: Value| call("dnsRecordsType", &[status(ps)]).ok();
        assert_eq!(dns(json!({"type": "AWS"})), Some(json!("Internal")));
        assert_eq!(
            dns(json!({"type": "OpenStack", "openstack": {"dnsRecordsType": "External"}})),
            Some(json!("External"))
        );
        assert_eq!(
            dns(json!({"type": "OpenStack", "openstack": {}})),
            Some(json!(""))
        );
    }

    #[test]
    fn cloud_load_balancer_ips() {
        let hosted = status(json!({"type": "GCP", "gcp": {"cloudLoadBalancerConfig": {
            "dnsType": "ClusterHosted",
            "clusterHosted": {"apiIntLoadBalancerIPs": ["10.0.0.2"], "ingressLoadBalancerIPs": ["10.0.0.3"]},
        }}}));
        let c = |f: &str, cfg: &Value| call(f, std::slice::from_ref(cfg));
        assert_eq!(
            c("cloudPlatformAPIIntLoadBalancerIPs", &hosted).ok(),
            Some(json!(["10.0.0.2"]))
        );
        assert_eq!(
            c("cloudPlatformIngressLoadBalancerIPs", &hosted).ok(),
            Some(json!(["10.0.0.3"]))
        );
        assert_eq!(
            c("cloudPlatformAPILoadBalancerIPs", &hosted).ok(),
            Some(Value::Null)
        );
        let absent = status(
            json!({"type": "AWS", "aws": {"cloudLoadBalancerConfig": {"dnsType": "ClusterHosted"}}}),
        );
        assert_eq!(
            c("cloudPlatformAPILoadBalancerIPs", &absent)
                .err()
                .map(|e| e.message),
            Some(
                "AWS API Server Load Balancer IPs unavailable when the DNSType is ClusterHosted"
                    .into()
            )
        );
        assert!(c(
            "cloudPlatformAPILoadBalancerIPs",
            &status(json!({"type": "Azure"}))
        )
        .is_err());
        assert!(c(
            "cloudPlatformAPILoadBalancerIPs",
            &status(json!({"type": "BareMetal"}))
        )
        .is_err());
    }

    #[test]
    fn unset_strings_are_empty() {
        assert_eq!(call("urlHost", &[Value::Null]).ok(), Some(json!("")));
        assert_eq!(
            call("eq", &[Value::Null, json!("")]).ok(),
            Some(json!(true))
        );
        assert_eq!(
            call("ne", &[json!("x"), Value::Null]).ok(),
            Some(json!(true))
        );
        assert_eq!(call("eq", &[Value::Null, json!(0)]).ok(), Some(json!(true)));
        assert!(call("eq", &[Value::Null, json!([])]).is_err());
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
