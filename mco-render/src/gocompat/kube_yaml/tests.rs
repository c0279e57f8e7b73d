use super::*;
use proptest::prelude::*;
use serde_json::json;

fn one(text: &str) -> Value {
    match decode_values(text) {
        Ok(mut v) if v.len() == 1 => v.remove(0),
        other => panic!("{text:?}: {other:?}"),
    }
}

fn err(text: &str) -> String {
    decode_documents(text)
        .err()
        .map(|e| e.message)
        .unwrap_or_default()
}

#[test]
fn machine_config_scalars_as_kubectl_sends_them() {
    let v = one("spec:\n  mode: 0644\n  enabled: yes\n  octal: 0o755\n  hex: 0x1F\n  sep: 1_000\n  exp: 1e3\n  one: 1.0\n  big: 18446744073709551615\n  bigger: 123456789012345678901234567890\n  half: 0.5\n  none: ~\n  when: 2001-12-14\n");
    assert_eq!(
        v,
        json!({"spec": {"mode": 420, "enabled": true, "octal": 493, "hex": 31, "sep": 1000,
            "exp": 1000, "one": 1, "big": 18446744073709551615u64,
            "bigger": 1.2345678901234568e29, "half": 0.5, "none": null, "when": "2001-12-14"}})
    );
}

#[test]
fn keys_merges_and_duplicates() {
    assert_eq!(one("a: 1\na: 2\n"), json!({"a": 2}));
    assert_eq!(
        one("1: a\ntrue: b\n1.5: c\n1e20: d\n"),
        json!({"1": "a", "true": "b", "1.5": "c", "1e+20": "d"})
    );
    assert_eq!(
        one("b: &b {x: 1, z: 1}\nc:\n  x: 0\n  <<: *b\n  z: 2\n"),
        json!({"b": {"x": 1, "z": 1}, "c": {"x": 1, "z": 2}})
    );
    assert_eq!(
        one("a: &a {x: 1}\nb: &b {x: 2}\nc: {<<: [*a, *b]}\n")["c"],
        json!({"x": 1})
    );
    assert_eq!(
        one("!!binary aGVsbG8=: !!binary aGVsbG8=\n"),
        json!({"hello": "hello"})
    );
}

#[test]
fn errors_are_kubectls() {
    assert_eq!(
        err("a: .inf\n"),
        "error converting YAML to JSON: json: unsupported value: +Inf"
    );
    assert_eq!(err("~: a\n"), "error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\"");
    assert_eq!(err("a: 1\n--- b\n"), "invalid Yaml document separator: b");
    assert_eq!(
        err("a: *x\n"),
        "error converting YAML to JSON: yaml: unknown anchor 'x' referenced"
    );
    assert_eq!(
        err("a: &x [*x]\n"),
        "error converting YAML to JSON: yaml: anchor 'x' value contains itself"
    );
    assert_eq!(
        err("a: !!int 1.5\n"),
        "error converting YAML to JSON: yaml: cannot decode !!float `1.5` as a !!int"
    );
    let e = decode_documents("a: 1\n---\nb:\n  c: 1\n d: 2\n").err();
    assert_eq!(
        e,
        Some(DecodeError {
            document: 2,
            line: 5,
            message: "error converting YAML to JSON: yaml: line 2: did not find expected key"
                .into()
        })
    );
}

#[test]
fn errors_point_at_their_line_in_the_file() {
    let line = |text: &str| decode_documents(text).err().map(|e| e.line);
    // A parser error: yaml.v2 prints the 0-based line ("line 3"), the file line is 6.
    assert_eq!(
        line("kind: A\n---\nkind: B\nspec:\n  a: 1\n b: 2\n"),
        Some(6)
    );
    // A scanner error: printed 1-based.
    assert_eq!(line("a: 1\nb:\n\tc: 1\n"), Some(3));
    assert_eq!(line("a: 1\nb: *nope\n"), Some(2));
    assert_eq!(line("a: 1\nb:\n  <<: 1\n"), Some(3));
    assert_eq!(line("a: 1\nb:\n  [x]: 1\n"), Some(3));
    assert_eq!(line("a: 1\nb: !!int x\n"), Some(2));
    assert_eq!(line("a: 1\n--- x\n"), Some(2));
}

#[test]
fn documents_and_positions() {
    let docs = decode_documents(
        "# c\n---\n\nkind: A\nspec:\n  list:\n  - x\n  - y: 1\n---\n---\nkind: B\n",
    )
    .unwrap_or_default();
    assert_eq!(docs.len(), 2);
    assert_eq!((docs[0].number, docs[0].line), (2, 4));
    assert_eq!((docs[1].number, docs[1].line), (3, 11));
    let p = &docs[0].positions;
    assert_eq!(p.line_of("/spec/list/1/y"), Some(8));
    assert_eq!(p.position_of("/spec/list/1").map(|p| p.column), Some(5));
    assert_eq!(p.line_of("/spec/missing"), Some(5));
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    let depth = decode::MAX_VALUE_DEPTH - 1;
    let ok = format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
    assert!(decode_documents(&ok).is_ok());
    let deep = format!("a: {}{}\n", "[".repeat(5000), "]".repeat(5000));
    assert!(
        err(&deep).contains("nesting deeper than 1000 levels"),
        "{}",
        err(&deep)
    );
    let deeper = format!("a: {}{}\n", "[".repeat(10001), "]".repeat(10001));
    assert_eq!(
        err(&deeper),
        "error converting YAML to JSON: yaml: exceeded max depth of 10000"
    );
    // Aliases nest too.
    let alias = format!(
        "a: &a {}{}\nb: {}*a{}\n",
        "[".repeat(600),
        "]".repeat(600),
        "[".repeat(600),
        "]".repeat(600)
    );
    assert!(err(&alias).contains("nesting deeper"));
}

#[test]
fn json_streams() {
    assert_eq!(
        decode_values("{\"a\": 1}\n{\"b\": 2}\n").ok(),
        Some(vec![json!({"a": 1}), json!({"b": 2})])
    );
    assert_eq!(
        decode_values("{\"a\": 1}\n---\nb: yes\n").ok(),
        Some(vec![json!({"a": 1}), json!({"b": true})])
    );
    assert_eq!(
        decode_values("{a: yes}\n").ok(),
        Some(vec![json!({"a": true})])
    );
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::String),
        "[a-z0-9 .:-]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z0-9_./-]{1,10}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// A JSON document written as YAML the way upstream writes it decodes to itself.
    #[test]
    fn yaml_written_by_the_emitter_decodes_to_itself(v in json_value()) {
        let doc = json!({"kind": "X", "value": v});
        let text = crate::gocompat::yaml::to_go_yaml(&doc);
        let back = decode_values(&text);
        prop_assert_eq!(back.ok(), Some(vec![doc]));
    }

    /// JSON text decodes to its value, through the JSON path and, prefixed by a comment, the
    /// YAML one.
    #[test]
    fn json_text_decodes_to_itself(v in json_value()) {
        let doc = json!({"v": v});
        let text = doc.to_string();
        prop_assert_eq!(decode_values(&text).ok(), Some(vec![doc.clone()]));
        prop_assert_eq!(decode_values(&format!("# c\n{text}")).ok(), Some(vec![doc]));
    }

    /// Any text decodes or fails without panicking.
    #[test]
    fn never_panics(text in "[ -~\n\t]{0,80}") {
        let _ = decode_documents(&text);
    }
}

#[test]
fn manifests_record_the_line_of_every_field() {
    let mut m = crate::manifests::Manifests::default();
    let text = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: a\nspec:\n  kernelArguments:\n  - nosmt\n  config:\n    storage:\n      files:\n      - path: /etc/x\n        mode: 0644\n---\napiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  metadata:\n    name: c\n  data:\n    k: v\n";
    assert!(m.add_file("x.yaml", text).is_ok());
    let mode = m.machine_configs[0]
        .1
        .spec
        .config
        .as_ref()
        .map(|c| c.pointer("/storage/files/0/mode").cloned());
    assert_eq!(mode, Some(Some(json!(420))));
    assert_eq!(
        m.field_line(
            "x.yaml",
            "MachineConfig",
            "a",
            "/spec/config/storage/files/0/mode"
        ),
        Some(12)
    );
    assert_eq!(
        m.field_line("x.yaml", "MachineConfig", "a", "/spec/kernelArguments/0"),
        Some(7)
    );
    assert_eq!(
        m.field_line("x.yaml", "MachineConfig", "a", "/spec/fips"),
        Some(5)
    );
    // A List's items carry their own positions.
    assert_eq!(
        m.field_line("x.yaml", "ConfigMap", "c", "/data/k"),
        Some(21)
    );
    assert_eq!(m.line_of("x.yaml", "ConfigMap", "c"), Some(14));
}

/// Text made of YAML's tokens, in any order.
fn yamlish() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        ": ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&a ",
        "*a",
        "&b ",
        "*b",
        "<<: ",
        "!!binary ",
        "!!int ",
        "!!float ",
        "!x ",
        "\"",
        "'",
        "\\/",
        "\\",
        "---",
        "--- ",
        "...",
        "\n",
        "\r\n",
        "  ",
        "\t",
        "# c",
        "|",
        ">",
        "? ",
        "%YAML 1.1\n",
        "%YAML 1.2\n",
        "é",
        "{\"a\": 1}",
        "a",
        "0644",
        "yes",
        "~",
        ".inf",
        "1e3",
        "18446744073709551616",
        "data:,x",
        ":,",
        "a:b",
    ];
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Token soup decodes or fails without panicking, and an error names a line of the text.
    #[test]
    fn token_soup_never_panics(text in yamlish()) {
        if let Err(e) = decode_documents(&text) {
            prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1) + 1, "{e:?}");
        }
    }
}
