//! A subset of Go's `text/template`, enough for MachineConfig templates.
//!
//! Supported: text; actions `{{ pipeline }}` with `{{-` / `-}}` trim markers; comments
//! `{{/* ... */}}`; `{{if}}`, `{{else if}}`, `{{else}}`, `{{with}}`, `{{range}}` (over lists,
//! maps in key order and integers, with `$i, $e :=`) closed by `{{end}}`; variables (`$`,
//! `$x := ...`, `$x = ...`); pipelines with `|` and parentheses; field chains on dot, variables
//! and parenthesised values; string (quoted and raw), number, `true`/`false`/`nil` literals;
//! and the functions in [`funcs::FUNCTIONS`]: the built-ins `and or not eq ne lt le gt ge len
//! index print printf println` (`and` / `or` stop at the deciding argument, as Go's do) and
//! upstream's template helpers `join indent toString skip urlHost urlPort platformType
//! cloudProvider credentialProviderConfigFlag onPremPlatformShortName
//! onPremPlatformAPIServerInternalIP(s) onPremPlatformIngressIP(s) isOpenShiftManagedDefaultLB
//! dnsRecordsType cloudPlatformAPIIntLoadBalancerIPs cloudPlatformAPILoadBalancerIPs
//! cloudPlatformIngressLoadBalancerIPs`.
//!
//! Not supported (a parse error): `define`, `template`, `block`, `break`, `continue`, method
//! calls and character literals.
//!
//! Data is JSON. Where it differs from Go on typed structs: a field name finds its JSON key
//! exactly or, failing that, ignoring ASCII case (`.Infra.Status.PlatformStatus.Type` reads
//! `infra.status.platformStatus.type`); an absent field, or a field of nothing, is nothing
//! (falsy, printed as the empty string, equal to the zero value of the other side in
//! comparisons, the empty string to string functions) rather than an error. By default an
//! object is a map (false when empty); with [`ExecOptions`] objects are structs (always true)
//! and the maps among the root's keys print a missing key as `<no value>`, as Go does.

pub mod exec;
pub mod funcs;
pub mod parse;

use serde_json::Value;

use crate::gocompat::quote::go_quote;

pub use exec::{ExecOptions, Objects};

/// A template that does not parse or execute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct TemplateError {
    /// The source line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl TemplateError {
    pub(crate) fn new(message: String) -> Self {
        TemplateError {
            line: None,
            message,
        }
    }

    pub(crate) fn at(line: usize, message: String) -> Self {
        TemplateError {
            line: Some(line),
            message,
        }
    }
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    tree: parse::Tree,
}

impl Template {
    /// Parses a template.
    pub fn parse(src: &str) -> Result<Self, TemplateError> {
        let tree = parse::parse(src)?;
        check_functions(&tree)?;
        Ok(Template { tree })
    }

    /// Executes it with `data` as dot.
    pub fn execute(&self, data: &Value) -> Result<String, TemplateError> {
        exec::execute(&self.tree, data)
    }

    /// Executes it with `data` as dot, read as `opts` says.
    pub fn execute_with(
        &self,
        data: &Value,
        opts: ExecOptions<'_>,
    ) -> Result<String, TemplateError> {
        exec::execute_with(&self.tree, data, opts)
    }
}

/// Fails on a call to an undefined function anywhere in the tree, as Go's parser does.
fn check_functions(tree: &parse::Tree) -> Result<(), TemplateError> {
    fn pipe(p: &parse::Pipeline) -> Result<(), TemplateError> {
        for c in &p.cmds {
            for a in &c.args {
                match a {
                    parse::Operand::Func(name) if !funcs::FUNCTIONS.contains(&name.as_str()) => {
                        return Err(TemplateError::new(format!(
                            "function {} not defined",
                            go_quote(name)
                        )))
                    }
                    parse::Operand::Sub(p, _) => pipe(p)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }
    for node in tree {
        match node {
            parse::Node::Text(_) => {}
            parse::Node::Action(p) => pipe(p)?,
            parse::Node::Block {
                pipe: p,
                body,
                otherwise,
                ..
            } => {
                pipe(p)?;
                check_functions(body)?;
                check_functions(otherwise)?;
            }
        }
    }
    Ok(())
}

/// Parses and executes a template.
pub fn render(src: &str, data: &Value) -> Result<String, TemplateError> {
    Template::parse(src)?.execute(data)
}

/// Parses and executes a template whose data is read as `opts` says.
pub fn render_with(
    src: &str,
    data: &Value,
    opts: ExecOptions<'_>,
) -> Result<String, TemplateError> {
    Template::parse(src)?.execute_with(data, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(src: &str, data: Value) -> String {
        render(src, &data).unwrap_or_else(|e| format!("ERROR {e}"))
    }

    #[test]
    fn fields_and_case_insensitive_keys() {
        let d = json!({"infra": {"status": {"platformStatus": {"type": "AWS"}}}, "Exact": 1, "exact": 2});
        assert_eq!(r("{{.Infra.Status.PlatformStatus.Type}}", d.clone()), "AWS");
        assert_eq!(r("{{.Exact}}/{{.exact}}", d.clone()), "1/2");
        assert_eq!(r("[{{.Missing.Deeper}}]", d), "[]");
        assert!(r("{{.a.b}}", json!({"a": "s"})).starts_with("ERROR"));
    }

    #[test]
    fn conditionals() {
        let t = "{{if eq .P \"a\"}}A{{else if eq .P \"b\"}}B{{else}}C{{end}}";
        assert_eq!(r(t, json!({"P": "a"})), "A");
        assert_eq!(r(t, json!({"P": "b"})), "B");
        assert_eq!(r(t, json!({"P": "z"})), "C");
        assert_eq!(r("{{if not .X}}none{{end}}", json!({})), "none");
        assert_eq!(
            r(
                "{{with .A}}{{.B}}{{else}}no{{end}}",
                json!({"A": {"B": "x"}})
            ),
            "x"
        );
        assert_eq!(r("{{with .A}}{{.B}}{{else}}no{{end}}", json!({})), "no");
    }

    #[test]
    fn ranges_and_variables() {
        let d = json!({"L": ["a", "b"], "M": {"y": 2, "x": 1}, "S": "-"});
        assert_eq!(r("{{range .L}}<{{.}}>{{end}}", d.clone()), "<a><b>");
        assert_eq!(
            r(
                "{{range $i, $e := .L}}{{$i}}={{$e}}{{$.S}}{{end}}",
                d.clone()
            ),
            "0=a-1=b-"
        );
        assert_eq!(
            r("{{range $k, $v := .M}}{{$k}}{{$v}} {{end}}", d.clone()),
            "x1 y2 "
        );
        assert_eq!(
            r("{{range .None}}x{{else}}empty{{end}}", d.clone()),
            "empty"
        );
        assert_eq!(r("{{$x := \"a\"}}{{$x = \"b\"}}{{$x}}", d.clone()), "b");
        assert_eq!(r("{{range 3}}{{.}}{{end}}", d), "012");
        assert!(r("{{$nope}}", json!({})).starts_with("ERROR"));
    }

    #[test]
    fn pipelines_pass_the_last_argument() {
        let d = json!({"C": ["a", "b"], "U": "https://h:6443"});
        assert_eq!(r("{{join .C \":\" | printf \"%s!\"}}", d.clone()), "a:b!");
        assert_eq!(r("{{.U | urlHost}}", d.clone()), "h");
        assert_eq!(r("{{(index .C 1)}}{{len .C}}", d.clone()), "b2");
        assert!(r("{{.U \"x\"}}", d).starts_with("ERROR"));
    }

    #[test]
    fn printf_q_quotes_like_go() {
        let d = json!({"S": "a\u{1}\u{7f}\u{a0}é\"", "T": "x"});
        assert_eq!(
            r("{{printf \"%q\" .S}}", d.clone()),
            r#""a\x01\x7f\u00a0é\"""#
        );
        assert_eq!(r("{{.T | printf \"%q\"}}", d), r#""x""#);
    }

    const GO: ExecOptions<'static> = ExecOptions {
        objects: Objects::Structs,
        root_maps: &["M"],
    };

    fn go(src: &str, data: Value) -> String {
        render_with(src, &data, GO).unwrap_or_else(|e| format!("ERROR {e}"))
    }

    #[test]
    fn structs_are_true_even_when_empty() {
        let t = "{{if .P}}set{{else}}unset{{end}}";
        assert_eq!(go(t, json!({"P": {}})), "set");
        assert_eq!(go(t, json!({"P": null})), "unset");
        assert_eq!(go(t, json!({})), "unset");
        assert_eq!(
            go(
                "{{with .P}}in{{end}}{{if not .P}}!{{end}}",
                json!({"P": {}})
            ),
            "in"
        );
        // As maps, an empty object is false.
        assert_eq!(r(t, json!({"P": {}})), "unset");
    }

    #[test]
    fn missing_map_keys_print_no_value() {
        let d = json!({"M": {"a": "x"}, "S": {"a": "y"}});
        assert_eq!(
            go("{{.M.a}}|{{.M.b}}|{{$.M.b}}|{{.S.b}}", d.clone()),
            "x|<no value>|<no value>|"
        );
        // Only a lone field is printed that way; a missing key is still false and empty.
        assert_eq!(
            go("{{if .M.b}}y{{else}}n{{end}}{{.M.b | print}}", d.clone()),
            "n"
        );
        assert_eq!(go("{{index .M \"b\"}}", d.clone()), "");
        assert_eq!(go("{{.M.b}}", json!({"M": null})), "<no value>");
        assert_eq!(r("{{.M.b}}", d), "");
    }

    #[test]
    fn and_or_stop_at_the_deciding_argument() {
        let d = json!({"L": []});
        assert_eq!(
            r("{{if and .L (index .L 0)}}y{{else}}n{{end}}", d.clone()),
            "n"
        );
        assert_eq!(r("{{or \"a\" (index .L 3)}}", d.clone()), "a");
        assert!(r("{{or \"\" (index .L 3)}}", d.clone()).starts_with("ERROR"));
        assert_eq!(r("{{and 1 2 | printf \"%v\"}}", d.clone()), "2");
        assert_eq!(r("{{\"x\" | and 1}}", d.clone()), "x");
        assert_eq!(r("{{\"x\" | and 0}}", d), "0");
    }

    #[test]
    fn unset_fields_compare_as_zero_values() {
        let t = "{{if eq .Mode \"Single\"}}one{{else}}many{{end}}";
        assert_eq!(r(t, json!({})), "many");
        assert_eq!(r(t, json!({"Mode": "Single"})), "one");
        assert_eq!(r("{{if ne .N 0}}n{{else}}zero{{end}}", json!({})), "zero");
    }

    #[test]
    fn trim_markers_and_comments() {
        assert_eq!(r("a\n{{- /* note */ -}}\nb", json!({})), "ab");
        assert_eq!(r("x  {{- 1 }}  y", json!({})), "x1  y");
    }

    #[test]
    fn unknown_functions_fail() {
        assert_eq!(
            r("{{nope 1}}", json!({})),
            "ERROR function \"nope\" not defined"
        );
        assert!(Template::parse("{{if false}}{{nope}}{{end}}").is_err());
    }

    proptest::proptest! {
        #[test]
        fn text_without_actions_renders_as_is(s in "[^{]*") {
            proptest::prop_assert_eq!(render(&s, &json!({})), Ok(s.clone()));
        }

        #[test]
        fn printed_strings_round_trip(s in "[a-zA-Z0-9 _.:/-]*") {
            proptest::prop_assert_eq!(render("{{.S}}", &json!({"S": s.clone()})), Ok(s));
        }
    }
}
