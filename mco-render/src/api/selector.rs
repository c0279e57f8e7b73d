//! Kubernetes label selectors, as a MachineConfigPool's `spec.machineConfigSelector` uses them.
//!
//! [`LabelSelector`] is the serialised form. [`LabelSelector::compile`] turns it into a
//! [`CompiledSelector`] with the Kubernetes validation rules and error messages, sorted
//! requirements, label matching and the canonical string form (`key=value,key in (a,b)`).

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gocompat::json::go_json_string;
use crate::gocompat::quote::go_quote;

/// A label selector: `matchLabels` and `matchExpressions`, all of which must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "A Kubernetes label selector.")]
pub struct LabelSelector {
    /// Exact label values, each one an `Equals` requirement.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(
        with = "Option<BTreeMap<String, String>>",
        description = "Exact label values."
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<LabelSelectorRequirement>>")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "One set-based requirement.")]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`; anything else fails [`LabelSelector::compile`].
    #[schemars(description = "In, NotIn, Exists or DoesNotExist.")]
    pub operator: String,
    /// The values for `In` and `NotIn`; must be empty for `Exists` and `DoesNotExist`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<String>>", description = "Values for In and NotIn.")]
    pub values: Vec<String>,
}

/// How a field error prints a list of values: as Kubernetes' validation prints them since
/// apimachinery 0.34 (`["worker"]`), or as Go's `%#v` does, as it printed them before
/// (`[]string{"worker"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueStyle {
    /// JSON.
    #[default]
    Json,
    /// Go syntax.
    GoSyntax,
}

/// Why a selector does not compile. The `Display` text is the Kubernetes error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A `matchExpressions` operator other than the four known ones.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    InvalidOperator(String),
    /// Field errors of one requirement (key, values), aggregated as Kubernetes does.
    #[error("{}", aggregate(.0))]
    Invalid(Vec<String>),
}

/// Joins distinct messages: one stays as it is, several become `[a, b]`.
fn aggregate(msgs: &[String]) -> String {
    match msgs {
        [one] => one.clone(),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

/// A requirement operator of a compiled selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// From `matchLabels`: `key=value`.
    Equals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
}

/// One validated requirement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in input order.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => !value.is_some_and(|v| self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (prefix, infix) = match self.operator {
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Exists => return f.write_str(&self.key),
            Operator::Equals => ("", "="),
            Operator::In => ("", " in ("),
            Operator::NotIn => ("", " notin ("),
        };
        write!(f, "{prefix}{}{infix}", self.key)?;
        // Values print sorted (a single value as it is).
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        f.write_str(&values.join(","))?;
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A compiled selector: requirements sorted by key, or the selector that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompiledSelector {
    /// `None` for the "nothing" selector (an absent selector); otherwise the requirements.
    requirements: Option<Vec<Requirement>>,
}

impl CompiledSelector {
    /// The selector of an absent (`nil`) selector: it matches no labels and prints as "".
    pub fn nothing() -> Self {
        CompiledSelector { requirements: None }
    }

    /// The requirements, sorted by key (empty for "everything" and "nothing").
    pub fn requirements(&self) -> &[Requirement] {
        self.requirements.as_deref().unwrap_or(&[])
    }

    /// True when no requirement restricts the selection (the `{}` selector).
    pub fn is_everything(&self) -> bool {
        self.requirements.as_ref().is_some_and(Vec::is_empty)
    }

    /// Whether every requirement matches the labels.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }
}

impl fmt::Display for CompiledSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl LabelSelector {
    /// True for the `{}` selector: no labels and no expressions.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Validates and compiles the selector.
    ///
    /// `matchLabels` are checked first, then `matchExpressions` in order; the first failing
    /// requirement's errors are returned. Upstream walks `matchLabels` in Go map order, so with
    /// several bad labels its choice of error is random; here keys are taken in sorted order.
    pub fn compile(&self) -> Result<CompiledSelector, SelectorError> {
        self.compile_as(ValueStyle::Json)
    }

    /// [`LabelSelector::compile`], its errors printing values in `style`.
    pub fn compile_as(&self, style: ValueStyle) -> Result<CompiledSelector, SelectorError> {
        let mut reqs = Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (k, v) in &self.match_labels {
            reqs.push(new_requirement(
                k,
                Operator::Equals,
                std::slice::from_ref(v),
                false,
                style,
            )?);
        }
        for expr in &self.match_expressions {
            let op = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(SelectorError::InvalidOperator(other.to_string())),
            };
            reqs.push(new_requirement(&expr.key, op, &expr.values, true, style)?);
        }
        // Stable: equal keys keep input order (upstream's sort is stable at these sizes).
        reqs.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
        Ok(CompiledSelector {
            requirements: Some(reqs),
        })
    }

    /// Compiles an optional selector: absent means [`CompiledSelector::nothing`].
    pub fn compile_optional(
        selector: Option<&LabelSelector>,
    ) -> Result<CompiledSelector, SelectorError> {
        selector.map_or(Ok(CompiledSelector::nothing()), LabelSelector::compile)
    }
}

/// Builds one requirement, collecting field errors in Kubernetes order (key, values count,
/// each value). `nil_when_empty`: an empty value list prints as JSON `null` (expressions copy
/// their values into a nil slice).
fn new_requirement(
    key: &str,
    op: Operator,
    values: &[String],
    nil_when_empty: bool,
    style: ValueStyle,
) -> Result<Requirement, SelectorError> {
    let mut errs: Vec<String> = Vec::new();
    let mut push = |msg: String| {
        if !errs.contains(&msg) {
            errs.push(msg);
        }
    };
    let key_errs = label_key_errors(key);
    if !key_errs.is_empty() {
        push(format!(
            "key: Invalid value: {}: {}",
            go_quote(key),
            key_errs.join("; ")
        ));
    }
    let values_json = || match style {
        ValueStyle::Json if values.is_empty() && nil_when_empty => "null".to_string(),
        ValueStyle::Json => {
            let items: Vec<String> = values.iter().map(|v| go_json_string(v)).collect();
            format!("[{}]", items.join(","))
        }
        ValueStyle::GoSyntax if values.is_empty() && nil_when_empty => "[]string(nil)".to_string(),
        ValueStyle::GoSyntax => {
            let items: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    };
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => push(format!(
            "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
            values_json()
        )),
        Operator::Equals if values.len() != 1 => push(format!(
            "values: Invalid value: {}: exact-match compatibility requires one single value",
            values_json()
        )),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => push(format!(
            "values: Invalid value: {}: values set must be empty for exists and does not exist",
            values_json()
        )),
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let v_errs = label_value_errors(v);
        if !v_errs.is_empty() {
            push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(v),
                v_errs.join("; ")
            ));
        }
    }
    if errs.is_empty() {
        Ok(Requirement {
            key: key.to_string(),
            operator: op,
            values: values.to_vec(),
        })
    } else {
        Err(SelectorError::Invalid(errs))
    }
}

const NAME_MAX: usize = 63;
const SUBDOMAIN_MAX: usize = 253;
const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Formats a pattern message with examples the way Kubernetes does (note the `',  or` spacing).
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(ex);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// One RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => alnum(f) && alnum(l) && b.iter().all(|c| alnum(c) || *c == b'-'),
        _ => false,
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns_label)
}

/// The messages for an invalid label key (empty when valid).
fn label_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > SUBDOMAIN_MAX {
                    errs.push(format!("prefix part {}", max_len_error(SUBDOMAIN_MAX)));
                }
                if !is_dns_subdomain(prefix) {
                    let fmt = format!("{DNS_LABEL_FMT}(\\.{DNS_LABEL_FMT})*");
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(SUBDOMAIN_MSG, &fmt, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > NAME_MAX {
        errs.push(format!("name part {}", max_len_error(NAME_MAX)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// The messages for an invalid label value (empty when valid).
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > NAME_MAX {
        errs.push(max_len_error(NAME_MAX));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            VALUE_MSG,
            &format!("({NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
