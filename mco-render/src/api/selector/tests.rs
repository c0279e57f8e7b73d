use super::*;
use proptest::prelude::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

fn sel(match_labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector {
        match_labels: labels(match_labels),
        match_expressions: exprs,
    }
}

fn err(s: &LabelSelector) -> String {
    match s.compile() {
        Ok(c) => panic!("expected an error, compiled to {c}"),
        Err(e) => e.to_string(),
    }
}

const NAME_RE: &str = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

#[test]
fn serde_round_trip_uses_camel_case_and_omits_empty() {
    let s: LabelSelector = serde_json::from_str(
        r#"{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"Bogus"}]}"#,
    )
    .unwrap();
    assert_eq!(s.match_expressions[0].operator, "Bogus");
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"Bogus"}]}"#
    );
    assert_eq!(
        serde_json::to_string(&LabelSelector::default()).unwrap(),
        "{}"
    );
    assert!(LabelSelector::default().is_empty());
    assert!(!s.is_empty());
}

#[test]
fn empty_selector_matches_everything_and_prints_empty() {
    let c = LabelSelector::default().compile().unwrap();
    assert!(c.is_everything());
    assert!(c.matches(&labels(&[])));
    assert_eq!(c.to_string(), "");
    let n = LabelSelector::compile_optional(None).unwrap();
    assert!(!n.matches(&labels(&[])));
    assert_eq!(n.to_string(), "");
}

#[test]
fn display_sorts_requirements_and_values() {
    let s = sel(
        &[
            ("machineconfiguration.openshift.io/role", "Worker"),
            ("a/b", "c"),
        ],
        vec![
            expr("z", "In", &["y", "x"]),
            expr("m", "NotIn", &["b", "a", "c"]),
            expr("e", "Exists", &[]),
            expr("d", "DoesNotExist", &[]),
            expr("k", "In", &["only"]),
        ],
    );
    assert_eq!(
        s.compile().unwrap().to_string(),
        "a/b=c,!d,e,k in (only),m notin (a,b,c),machineconfiguration.openshift.io/role=Worker,z in (x,y)"
    );
}

#[test]
fn equal_keys_keep_input_order() {
    let s = sel(
        &[],
        vec![expr("r", "NotIn", &["master"]), expr("r", "Exists", &[])],
    );
    assert_eq!(s.compile().unwrap().to_string(), "r notin (master),r");
    let s = sel(&[("r", "w")], vec![expr("r", "Exists", &[])]);
    assert_eq!(s.compile().unwrap().to_string(), "r=w,r");
}

#[test]
fn matching_rules() {
    let l = labels(&[("role", "worker"), ("tier", "gold")]);
    let m = |s: LabelSelector| s.compile().unwrap().matches(&l);
    assert!(m(sel(&[("role", "worker")], vec![])));
    assert!(!m(sel(&[("role", "Worker")], vec![])));
    assert!(m(sel(&[], vec![expr("role", "In", &["infra", "worker"])])));
    assert!(!m(sel(&[], vec![expr("role", "In", &["infra"])])));
    assert!(!m(sel(&[], vec![expr("missing", "In", &["x"])])));
    assert!(m(sel(&[], vec![expr("role", "NotIn", &["master"])])));
    assert!(!m(sel(&[], vec![expr("role", "NotIn", &["worker"])])));
    assert!(m(sel(&[], vec![expr("missing", "NotIn", &["x"])])));
    assert!(m(sel(&[], vec![expr("tier", "Exists", &[])])));
    assert!(!m(sel(&[], vec![expr("missing", "Exists", &[])])));
    assert!(m(sel(&[], vec![expr("missing", "DoesNotExist", &[])])));
    assert!(!m(sel(&[], vec![expr("tier", "DoesNotExist", &[])])));
    assert!(!m(sel(
        &[("role", "worker")],
        vec![expr("tier", "DoesNotExist", &[])]
    )));
}

#[test]
fn invalid_operator() {
    let s = sel(&[], vec![expr("k", "Contains", &["worker"])]);
    assert_eq!(
        err(&s),
        r#""Contains" is not a valid label selector operator"#
    );
    // Go's operator string is quoted with %q.
    let s = sel(&[], vec![expr("k", "in\n\"", &[])]);
    assert_eq!(
        err(&s),
        r#""in\n\"" is not a valid label selector operator"#
    );
    // Operators are case-sensitive; Equals is not accepted in expressions.
    for op in ["in", "Equals", "=", ""] {
        assert!(
            sel(&[], vec![expr("k", op, &["v"])]).compile().is_err(),
            "{op}"
        );
    }
}

#[test]
fn values_count_rules() {
    assert_eq!(
        err(&sel(&[], vec![expr("k", "Exists", &["worker"])])),
        r#"values: Invalid value: ["worker"]: values set must be empty for exists and does not exist"#
    );
    assert_eq!(
        err(&sel(&[], vec![expr("k", "DoesNotExist", &["a", "b"])])),
        r#"values: Invalid value: ["a","b"]: values set must be empty for exists and does not exist"#
    );
    assert_eq!(
        err(&sel(&[], vec![expr("k", "In", &[])])),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(&sel(&[], vec![expr("k", "NotIn", &[])])),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
}

#[test]
fn label_key_rules() {
    assert_eq!(
        err(&sel(&[("bad key!", "worker")], vec![])),
        format!(
            r#"key: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character {NAME_RE}"#
        )
    );
    assert_eq!(
        err(&sel(&[("", "v")], vec![])),
        format!(
            r#"key: Invalid value: "": name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character {NAME_RE}"#
        )
    );
    assert_eq!(
        err(&sel(&[("/a", "v")], vec![])),
        r#"key: Invalid value: "/a": prefix part must be non-empty"#
    );
    assert_eq!(
        err(&sel(&[("Example.com/a", "v")], vec![])),
        r#"key: Invalid value: "Example.com/a": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
    );
    assert_eq!(
        err(&sel(&[("a/b/c", "v")], vec![])),
        format!(
            r#"key: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character {NAME_RE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#
        )
    );
    let long = "a".repeat(64);
    assert_eq!(
        err(&sel(&[(long.as_str(), "v")], vec![])),
        format!(r#"key: Invalid value: "{long}": name part must be no more than 63 bytes"#)
    );
    let long_prefix = format!("{}/a", "a".repeat(254));
    assert_eq!(
        err(&sel(&[(long_prefix.as_str(), "v")], vec![])),
        format!(
            r#"key: Invalid value: "{long_prefix}": prefix part must be no more than 253 bytes"#
        )
    );
    // Valid shapes.
    for k in ["a", "A-b_c.d", "x.example.com/Name", "1/2", &"a".repeat(63)] {
        assert!(sel(&[(k, "v")], vec![]).compile().is_ok(), "{k}");
    }
}

#[test]
fn label_value_rules() {
    assert!(sel(&[("k", "")], vec![]).compile().is_ok());
    assert_eq!(
        err(&sel(&[("k", "-x")], vec![])),
        r#"values[0][k]: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#
    );
    let long = "v".repeat(64);
    assert_eq!(
        err(&sel(&[], vec![expr("k", "In", &["ok", long.as_str()])])),
        format!(r#"values[1][k]: Invalid value: "{long}": must be no more than 63 bytes"#)
    );
}

#[test]
fn several_errors_of_one_requirement_are_aggregated() {
    let e = err(&sel(&[], vec![expr("a b", "Exists", &["x"])]));
    assert!(
        e.starts_with(r#"[key: Invalid value: "a b": name part"#),
        "{e}"
    );
    assert!(e.ends_with(r#", values: Invalid value: ["x"]: values set must be empty for exists and does not exist]"#), "{e}");
    // Two identical value errors are reported once.
    let e = err(&sel(&[], vec![expr("k", "In", &["-", "ok", "-"])]));
    assert!(
        e.starts_with("[values[0][k]:") && e.contains(", values[2][k]:"),
        "{e}"
    );
}

#[test]
fn first_failing_requirement_wins() {
    // matchLabels come before expressions.
    let s = sel(&[("bad key", "v")], vec![expr("k", "Contains", &[])]);
    assert!(err(&s).starts_with("key: Invalid value: \"bad key\""));
    // Expressions in order.
    let s = sel(
        &[],
        vec![expr("k", "Exists", &["v"]), expr("k", "Contains", &[])],
    );
    assert!(err(&s).starts_with("values: Invalid value"));
}

#[test]
fn go_quoting() {
    assert_eq!(
        go_quote("a\"b\\c\u{1}\u{7f}é\u{a0}\u{feff}"),
        r#""a\"b\\c\x01\x7fé\u00a0\ufeff""#
    );
    assert_eq!(
        go_json_string("a<&>\u{1}\u{2028}é"),
        r#""a\u003c\u0026\u003e\u0001\u2028é""#
    );
}

fn label_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[abc]", "[xyz]", 0..4)
}

fn expr_strategy() -> impl Strategy<Value = LabelSelectorRequirement> {
    (
        "[abc]",
        prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]),
        prop::collection::vec("[xyz]", 1..3),
    )
        .prop_map(|(key, op, values)| LabelSelectorRequirement {
            key,
            operator: op.to_string(),
            values: if op.ends_with("xist") || op == "Exists" {
                vec![]
            } else {
                values
            },
        })
}

fn selector_strategy() -> impl Strategy<Value = LabelSelector> {
    (
        label_strategy(),
        prop::collection::vec(expr_strategy(), 0..4),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
}

/// A direct reading of the selector semantics, independent of the compiled form.
fn naive_matches(s: &LabelSelector, l: &BTreeMap<String, String>) -> bool {
    s.match_labels.iter().all(|(k, v)| l.get(k) == Some(v))
        && s.match_expressions.iter().all(|e| {
            let got = l.get(&e.key);
            match e.operator.as_str() {
                "In" => got.is_some_and(|g| e.values.contains(g)),
                "NotIn" => got.is_none() || !e.values.contains(got.unwrap()),
                "Exists" => got.is_some(),
                _ => got.is_none(),
            }
        })
}

proptest! {
    #[test]
    fn matches_agrees_with_naive_model(s in selector_strategy(), l in label_strategy()) {
        let c = s.compile().unwrap();
        prop_assert_eq!(c.matches(&l), naive_matches(&s, &l));
    }

    #[test]
    fn display_is_deterministic_and_order_independent(s in selector_strategy()) {
        let a = s.compile().unwrap().to_string();
        prop_assert_eq!(&a, &s.compile().unwrap().to_string());
        // Reversing the expression list only changes the order among equal keys.
        let mut r = s.clone();
        r.match_expressions.reverse();
        let b = r.compile().unwrap().to_string();
        let mut pa: Vec<&str> = a.split(',').collect();
        let mut pb: Vec<&str> = b.split(',').collect();
        pa.sort_unstable();
        pb.sort_unstable();
        prop_assert_eq!(pa, pb);
        // Requirements are sorted by key.
        let c = s.compile().unwrap();
        let keys: Vec<&str> = c.requirements().iter().map(|r| r.key()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        prop_assert_eq!(keys, sorted);
    }
}
