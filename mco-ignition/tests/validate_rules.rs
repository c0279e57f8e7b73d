//! One positive and one negative case per validation rule, each checking the JSON path and the
//! message upstream reports.

use mco_ignition::parse::{parse_bytes, parse_value};
use mco_ignition::{ParseError, Severity};
use serde_json::{json, Value};

fn cfg(body: Value) -> Value {
    let mut v = json!({"ignition": {"version": "3.5.0"}});
    if let (Some(m), Value::Object(b)) = (v.as_object_mut(), body) {
        m.extend(b);
    }
    v
}

/// The first error as `path: message`, or None when the config is valid.
fn first_error(v: &Value) -> Option<String> {
    match parse_value(v) {
        Ok(_) => None,
        Err(ParseError::Invalid(r)) => r
            .entries
            .iter()
            .find(|e| e.severity == Severity::Error)
            .map(|e| {
                format!(
                    "{}: {}",
                    e.path.as_ref().map(|p| p.to_string()).unwrap_or_default(),
                    e.message
                )
            }),
        Err(e) => Some(e.to_string()),
    }
}

fn warnings(v: &Value) -> Vec<String> {
    match parse_value(v) {
        Ok(p) => p
            .report
            .warnings()
            .map(|e| {
                format!(
                    "{}: {}",
                    e.path.as_ref().map(|p| p.to_string()).unwrap_or_default(),
                    e.message
                )
            })
            .collect(),
        Err(_) => vec!["invalid".into()],
    }
}

#[test]
fn node_paths() {
    let ok = cfg(json!({"storage": {"files": [{"path": "/etc/a"}]}}));
    assert_eq!(first_error(&ok), None);
    for (p, msg) in [
        ("", "path not specified"),
        ("etc/a", "path not absolute"),
        ("/etc//a", "path is not fully simplified"),
        ("/etc/a/", "path is not fully simplified"),
    ] {
        let bad = cfg(json!({"storage": {"files": [{"path": p}]}}));
        assert_eq!(
            first_error(&bad).as_deref(),
            Some(format!("$.storage.files.0.path: {msg}").as_str())
        );
    }
}

#[test]
fn modes() {
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "mode": 420}]}})
        )),
        None
    );
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"directories": [{"path": "/a", "mode": 4096}]}})
        ))
        .as_deref(),
        Some("$.storage.directories.0.mode: illegal file mode")
    );
    assert_eq!(
        warnings(&cfg(json!({"storage": {"files": [{"path": "/a", "mode": 2541}]}}))),
        vec!["$.storage.files.0.mode: setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0"]
    );
}

#[test]
fn overwrite_needs_source() {
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "overwrite": true}]}})
        ))
        .as_deref(),
        Some("$.storage.files.0.overwrite: overwrite must be false if source is unspecified")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "overwrite": true, "contents": {"source": "data:,x"}}]}})
        )),
        None
    );
}

#[test]
fn owners() {
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "user": {"id": 0, "name": "root"}}]}})
        ))
        .as_deref(),
        Some("$.storage.files.0.user: cannot set both id and name")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "group": {"name": "root"}}]}})
        )),
        None
    );
}

#[test]
fn duplicates_share_the_node_key_space() {
    assert_eq!(
        first_error(&cfg(json!({"storage": {"files": [{"path": "/a"}], "links": [{"path": "/a", "target": "/b"}]}}))).as_deref(),
        Some("$.storage.links.0: duplicate entry defined")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"systemd": {"units": [{"name": "a.service"}, {"name": "a.service"}]}})
        ))
        .as_deref(),
        Some("$.systemd.units.1: duplicate entry defined")
    );
}

#[test]
fn links() {
    assert_eq!(
        first_error(&cfg(json!({"storage": {"links": [{"path": "/a"}]}}))).as_deref(),
        Some("$.storage.links.0.target: link target is required")
    );
    // Before 3.3 a missing target is not checked at parse time.
    let old = json!({"ignition": {"version": "3.2.0"}, "storage": {"links": [{"path": "/a"}]}});
    assert_eq!(first_error(&old), None);
    assert_eq!(
        first_error(&cfg(json!({"storage": {"links": [{"path": "/l", "target": "/x"}], "files": [{"path": "/l/f"}]}}))).as_deref(),
        Some("$.storage.files.0: file path includes link in config")
    );
    assert_eq!(
        first_error(&cfg(json!({"storage": {"links": [{"path": "/l", "target": "/d", "hard": true}], "directories": [{"path": "/d"}]}}))).as_deref(),
        Some("$.storage.links.0: hard link target is a directory")
    );
}

#[test]
fn resources() {
    assert_eq!(
        first_error(&cfg(json!({"storage": {"files": [{"path": "/a", "contents": {"source": "data:,x", "compression": "xz"}}]}}))).as_deref(),
        Some("$.storage.files.0.contents.compression: invalid compression method")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"storage": {"files": [{"path": "/a", "contents": {"source": "ftp://x/y"}}]}})
        ))
        .as_deref(),
        Some("$.storage.files.0.contents.source: invalid url scheme")
    );
    assert_eq!(
        first_error(&cfg(json!({"storage": {"files": [{"path": "/a", "contents": {"source": "data:,x", "verification": {"hash": "md5-00"}}}]}}))).as_deref(),
        Some("$.storage.files.0.contents.verification.hash: unrecognized hash function")
    );
    assert_eq!(
        first_error(&cfg(json!({"storage": {"files": [{"path": "/a", "contents": {"source": "data:,x", "verification": {"hash": "sha512-00"}}}]}}))).as_deref(),
        Some("$.storage.files.0.contents.verification.hash: incorrect size for hash sum")
    );
    assert_eq!(
        first_error(&cfg(json!({"storage": {"files": [{"path": "/a", "contents": {"source": "data:,x", "httpHeaders": [{"name": "A", "value": "b"}]}}]}}))).as_deref(),
        Some("$.storage.files.0.contents.httpHeaders: cannot use HTTP headers with this source scheme")
    );
}

#[test]
fn units_and_dropins() {
    assert_eq!(
        first_error(&cfg(json!({"systemd": {"units": [{"name": "a.conf"}]}}))).as_deref(),
        Some("$.systemd.units.0.name: invalid systemd unit extension")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"systemd": {"units": [{"name": "a.service", "dropins": [{"name": "x.txt"}]}]}})
        ))
        .as_deref(),
        Some("$.systemd.units.0.dropins.0.name: invalid systemd drop-in extension")
    );
    assert_eq!(
        first_error(&cfg(
            json!({"systemd": {"units": [{"name": "a.service", "contents": "[Unit\n"}]}})
        ))
        .as_deref(),
        Some("$.systemd.units.0.contents: invalid unit content: unable to find end of section")
    );
    assert_eq!(
        warnings(&cfg(json!({"systemd": {"units": [{"name": "a.service", "enabled": true, "contents": "[Unit]\nDescription=a\n"}]}}))),
        vec!["$.systemd.units.0.contents: unit \"a.service\" is enabled, but has no install section so enable does nothing"]
    );
    assert_eq!(
        first_error(&cfg(json!({
            "systemd": {"units": [{"name": "a.service", "contents": "[Unit]\n"}]},
            "storage": {"files": [{"path": "/etc/systemd/system/a.service"}]}
        })))
        .as_deref(),
        Some("$.storage.files.0.path: path conflicts with systemd unit or dropin")
    );
}

#[test]
fn unknown_keys_warn_and_types_fail() {
    assert_eq!(
        warnings(&cfg(
            json!({"storage": {"files": [{"path": "/a", "bogus": 1}]}})
        )),
        vec!["$.storage.files.0.bogus: unused key bogus"]
    );
    let e = first_error(&cfg(
        json!({"storage": {"files": [{"path": "/a", "mode": 420.5}]}}),
    ))
    .unwrap_or_default();
    assert!(e.contains("cannot unmarshal number 420.5"), "{e}");
}

#[test]
fn keys_match_case_insensitively() {
    let v = cfg(json!({"storage": {"files": [{"Path": "/a", "MODE": 420}]}}));
    let parsed = parse_value(&v)
        .map(|p| p.config.into_value())
        .unwrap_or_default();
    assert_eq!(
        parsed["storage"]["files"][0],
        json!({"path": "/a", "mode": 420})
    );
}

#[test]
fn versions_and_syntax() {
    assert!(matches!(parse_bytes(b""), Err(ParseError::Empty)));
    assert!(matches!(
        parse_bytes(b"{\"ignition\":{\"version\":\"3.5\"}}"),
        Err(ParseError::InvalidVersion)
    ));
    assert!(matches!(
        parse_bytes(b"{\"ignition\":{\"version\":\"3.9.0\"}}"),
        Err(ParseError::UnknownVersion)
    ));
    match parse_bytes(b"{\n  \"ignition\": {\"version\": \"3.5.0\"},\n  oops\n}") {
        Err(ParseError::Syntax(r)) => {
            let pos = r.entries[0].position.map(|p| (p.line, p.column));
            assert_eq!(pos, Some((3, 3)));
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn positions_are_byte_offsets_in_upstream_serialisation() {
    let v = cfg(json!({"storage": {"files": [{"path": "rel"}]}}));
    match parse_value(&v) {
        Err(ParseError::Invalid(r)) => {
            let s = mco_ignition::emit::go_compact(&v);
            let col = r.entries[0].position.map(|p| p.column).unwrap_or(0);
            assert_eq!(&s[col - 1..col + 4], "\"rel\"");
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}
