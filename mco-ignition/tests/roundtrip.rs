//! Round trips: parsing the emitted form of a parsed config gives the same config; merging with
//! an empty config changes nothing.

use mco_ignition::merge::merge;
use mco_ignition::parse::parse_value;
use mco_ignition::{Config, SpecVersion};
use proptest::prelude::*;
use serde_json::{json, Value};

fn file() -> impl Strategy<Value = Value> {
    (
        "/[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}",
        prop::option::of(0i64..0o777),
        prop::option::of(any::<bool>()),
        prop::option::of("[ -~]{0,20}"),
        prop::option::of(prop_oneof![Just("".to_string()), Just("gzip".to_string())]),
    )
        .prop_map(|(path, mode, overwrite, data, comp)| {
            let mut f = json!({"path": path});
            if let Some(m) = mode {
                f["mode"] = json!(m);
            }
            if let Some(o) = overwrite {
                f["overwrite"] = json!(o && data.is_some());
            }
            if let Some(d) = data {
                f["contents"] =
                    json!({"source": mco_ignition::dataurl::encode_percent(d.as_bytes())});
                if let Some(c) = comp {
                    f["contents"]["compression"] = json!(c);
                }
            }
            f
        })
}

fn unit() -> impl Strategy<Value = Value> {
    ("[a-z]{1,8}", prop::option::of(any::<bool>()), prop::option::of(any::<bool>())).prop_map(|(n, en, mask)| {
        let mut u = json!({"name": format!("{n}.service"), "contents": "[Unit]\nDescription=x\n[Install]\nWantedBy=multi-user.target\n"});
        if let Some(e) = en {
            u["enabled"] = json!(e);
        }
        if let Some(m) = mask {
            u["mask"] = json!(m);
        }
        u
    })
}

fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(file(), 0..6),
        prop::collection::vec(unit(), 0..4),
        prop::collection::vec("ssh-ed25519 [A-Za-z0-9]{8}", 0..3),
        prop_oneof![
            Just("3.1.0"),
            Just("3.2.0"),
            Just("3.3.0"),
            Just("3.4.0"),
            Just("3.5.0")
        ],
    )
        .prop_map(|(files, units, keys, v)| {
            let mut files = files;
            let mut seen = std::collections::HashSet::new();
            files.retain(|f| seen.insert(f["path"].as_str().unwrap_or("").to_string()));
            let mut units = units;
            let mut seen = std::collections::HashSet::new();
            units.retain(|u| seen.insert(u["name"].as_str().unwrap_or("").to_string()));
            json!({
                "ignition": {"version": v},
                "storage": {"files": files},
                "systemd": {"units": units},
                "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]}
            })
        })
}

proptest! {
    #[test]
    fn parse_emit_parse_is_identity(raw in config()) {
        let first = match parse_value(&raw) {
            Ok(p) => p.config,
            Err(e) => return Err(TestCaseError::fail(format!("generated config invalid: {e:?}"))),
        };
        let emitted = first.to_value();
        let second = parse_value(&emitted).map(|p| p.config);
        prop_assert_eq!(Ok(first.clone()), second.map_err(|e| format!("{e:?}")));
        let text = mco_ignition::emit::go_compact(&emitted);
        let reparsed = mco_ignition::parse::parse_bytes(text.as_bytes()).map(|p| p.config);
        prop_assert_eq!(Ok(first), reparsed.map_err(|e| format!("{e:?}")));
    }

    #[test]
    fn merging_with_empty_changes_nothing(raw in config()) {
        let c = parse_value(&raw).map(|p| p.config.to_latest());
        prop_assume!(c.is_ok());
        let c = c.unwrap_or_else(|_| Config::empty(SpecVersion::LATEST));
        let empty = Config::empty(SpecVersion::LATEST);
        prop_assert_eq!(&merge(&c, &empty), &c);
        prop_assert_eq!(&merge(&empty, &c), &c);
    }

    #[test]
    fn merge_is_idempotent(raw in config()) {
        let c = parse_value(&raw).map(|p| p.config.to_latest());
        prop_assume!(c.is_ok());
        let c = c.unwrap_or_else(|_| Config::empty(SpecVersion::LATEST));
        let once = merge(&c, &c);
        prop_assert_eq!(merge(&once, &c), once);
    }
}
