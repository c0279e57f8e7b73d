//! Folding children with `MergeFold` (which moves the child's entries) gives exactly the config
//! repeated `merge_into` gives, on sequences whose entries often share keys.

use mco_ignition::merge::merge_into;
use mco_ignition::merge_fold::MergeFold;
use mco_ignition::parse::parse_value;
use proptest::prelude::*;
use serde_json::{json, Value};

const PATHS: [&str; 4] = ["/etc/a", "/etc/b", "/etc/c", "/etc/d"];

fn node() -> impl Strategy<Value = (usize, u8, Option<i64>, bool)> {
    (
        0..PATHS.len(),
        0u8..3,
        prop::option::of(0i64..0o777),
        any::<bool>(),
    )
}

fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(node(), 0..6),
        prop::collection::vec((0..3usize, any::<bool>(), any::<bool>()), 0..3),
    )
        .prop_map(|(nodes, units)| {
            let (mut files, mut dirs, mut links) = (Vec::new(), Vec::new(), Vec::new());
            let mut seen = std::collections::HashSet::new();
            for (p, kind, mode, flag) in nodes {
                if !seen.insert(p) {
                    continue;
                }
                let path = PATHS[p];
                match kind {
                    0 => {
                        let mut f = json!({"path": path});
                        if let Some(m) = mode {
                            f["mode"] = json!(m);
                        }
                        if flag {
                            f["contents"] = json!({"source": format!("data:,{p}")});
                        }
                        files.push(f);
                    }
                    1 => dirs.push(json!({"path": path, "mode": mode.unwrap_or(493)})),
                    _ => links.push(json!({"path": path, "target": "/x", "hard": flag})),
                }
            }
            let mut names = std::collections::HashSet::new();
            let mut us = Vec::new();
            for (n, enabled, dropin) in units {
                if !names.insert(n) {
                    continue;
                }
                let mut u = json!({"name": format!("u{n}.service"), "enabled": enabled});
                if dropin {
                    u["dropins"] = json!([{"name": "x.conf", "contents": format!("[Unit]\n#{n}")}]);
                }
                us.push(u);
            }
            json!({
                "ignition": {"version": "3.5.0"},
                "storage": {"files": files, "directories": dirs, "links": links},
                "systemd": {"units": us}
            })
        })
}

proptest! {
    #[test]
    fn fold_equals_repeated_merge(raws in prop::collection::vec(config(), 1..6)) {
        let configs: Vec<_> = raws
            .iter()
            .filter_map(|r| parse_value(r).ok().map(|p| p.config))
            .collect();
        prop_assume!(!configs.is_empty());
        let mut plain = configs[0].clone();
        let mut fold = MergeFold::new(configs[0].clone());
        for c in &configs[1..] {
            merge_into(&mut plain, c.clone());
            fold.merge(c.clone());
            prop_assert_eq!(
                serde_json::to_string(&fold.config().to_value()).ok(),
                serde_json::to_string(&plain.to_value()).ok()
            );
        }
    }
}
