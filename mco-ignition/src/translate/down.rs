//! Down-translation of spec 3.5 configs, step by step as upstream chains it:
//! 3.5 -> 3.4 -> 3.3 -> 3.2 -> {3.1, 2.2}.
//!
//! Each step refuses what its target cannot express, with upstream's error text, and otherwise
//! copies the config with the target's version. The input must be a normalised, already
//! validated 3.5 config; the per-step re-validation upstream performs is not repeated here.

use serde_json::Value;

use super::value::{for_each_in, list, list_at, obj, prune_empty, set_version, str_of};
use super::{to_v2, TranslateError};
use crate::SpecVersion;

/// Translates a normalised spec 3.5 config to `target` (3.5, 3.4, 3.3, 3.2, 3.1 or 2.2).
///
/// The result is what upstream serialises for that version, as a JSON value without empty
/// objects or lists. Errors carry upstream's message for the first construct the chain refuses.
pub fn down(config: &Value, target: SpecVersion) -> Result<Value, TranslateError> {
    if !config.is_object() {
        return Err(TranslateError::Input("config is not a JSON object".into()));
    }
    if target == SpecVersion::V3_0 {
        return Err(TranslateError::NoPath {
            from: SpecVersion::V3_5,
            to: target,
        });
    }
    let mut cur = config.clone();
    if target < SpecVersion::V3_5 {
        v35_to_v34(&mut cur);
    }
    if target < SpecVersion::V3_4 {
        v34_to_v33(&mut cur)?;
    }
    if target < SpecVersion::V3_3 {
        v33_to_v32(&mut cur)?;
    }
    match target {
        SpecVersion::V3_1 => v32_to_v31(&mut cur)?,
        SpecVersion::V2_2 => cur = to_v2::v32_to_v22(&cur)?,
        _ => {}
    }
    prune_empty(&mut cur);
    Ok(cur)
}

/// 3.5 -> 3.4: LUKS `cex` has no 3.4 equivalent. Upstream's check for it never looks below the
/// top-level config, so it is dropped silently rather than refused.
fn v35_to_v34(cfg: &mut Value) {
    for_each_in(cfg, &["storage", "luks"], |luks| {
        if let Value::Object(m) = luks {
            m.remove("cex");
        }
    });
    set_version(cfg, SpecVersion::V3_4.as_str());
}

fn unsupported(msg: &str) -> TranslateError {
    TranslateError::Unsupported(msg.to_string())
}

/// 3.4 -> 3.3: refuses tang advertisements, LUKS discard/openOptions, special mode bits and
/// `arn:` sources, checking in upstream's traversal order (the first offender wins).
fn v34_to_v33(cfg: &mut Value) -> Result<(), TranslateError> {
    check_v34(cfg)?;
    // Special bits were refused above, so masking them is a no-op kept for fidelity.
    for path in [["storage", "files"], ["storage", "directories"]] {
        for_each_in(cfg, &path, |node| {
            if let Some(Value::Number(n)) = node.get("mode") {
                if let Some(m) = n.as_i64() {
                    if let Value::Object(o) = node {
                        o.insert("mode".into(), Value::from(m & !0o7000));
                    }
                }
            }
        });
    }
    set_version(cfg, SpecVersion::V3_3.as_str());
    Ok(())
}

fn check_resource(r: &Value) -> Result<(), TranslateError> {
    if let Some(src) = str_of(r, "source") {
        if !src.is_empty() && url_scheme(src).as_deref() == Some("arn") {
            return Err(unsupported(
                "Invalid input config: arn: scheme for s3 is not supported in spec v3.3",
            ));
        }
    }
    Ok(())
}

/// The scheme of a URL as Go's `net/url` finds it (lowercased), if it has one.
pub(crate) fn url_scheme(s: &str) -> Option<String> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i > 0 => return Some(s[..i].to_ascii_lowercase()),
            _ => return None,
        }
    }
    None
}

fn check_mode(node: &Value) -> Result<(), TranslateError> {
    if let Some(m) = node.get("mode").and_then(Value::as_i64) {
        if m & 0o7000 != 0 {
            return Err(unsupported(
                "Invalid input config: special mode bits are not supported in spec v3.3",
            ));
        }
    }
    Ok(())
}

fn check_v34(cfg: &Value) -> Result<(), TranslateError> {
    let ign = cfg.get("ignition").cloned().unwrap_or(Value::Null);
    for r in list_at(&ign, &["config", "merge"]) {
        check_resource(r)?;
    }
    if let Some(c) = ign.get("config") {
        if let Some(r) = c.get("replace") {
            check_resource(r)?;
        }
    }
    for r in list_at(&ign, &["security", "tls", "certificateAuthorities"]) {
        check_resource(r)?;
    }
    let storage = cfg.get("storage").cloned().unwrap_or(Value::Null);
    for d in list(&storage, "directories") {
        check_mode(d)?;
    }
    for f in list(&storage, "files") {
        check_mode(f)?;
        for a in list(f, "append") {
            check_resource(a)?;
        }
        if let Some(c) = f.get("contents") {
            check_resource(c)?;
        }
    }
    for l in list(&storage, "luks") {
        if l.get("discard").and_then(Value::as_bool) == Some(true) {
            return Err(unsupported(
                "Invalid input config: luks discard is not supported in spec v3.3",
            ));
        }
        if !list(l, "openOptions").is_empty() {
            return Err(unsupported(
                "Invalid input config: luks openOptions is not supported in spec v3.3",
            ));
        }
        for t in list_at(l, &["clevis", "tang"]) {
            if str_of(t, "advertisement").is_some_and(|a| !a.is_empty()) {
                return Err(unsupported(
                    "Invalid input config: tang offline provisioning is not supported in spec v3.3",
                ));
            }
        }
        if let Some(k) = l.get("keyFile") {
            check_resource(k)?;
        }
    }
    Ok(())
}

/// 3.3 -> 3.2: kernel arguments do not exist in 3.2; raid level, link target and custom clevis
/// config/pin become plain strings again (always written).
fn v33_to_v32(cfg: &mut Value) -> Result<(), TranslateError> {
    let ka = obj(cfg, "kernelArguments");
    if ka.is_some_and(|k| {
        k.get("shouldExist")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            || k.get("shouldNotExist")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    }) {
        return Err(unsupported("KernelArguments is not supported on 3.2"));
    }
    if let Value::Object(root) = cfg {
        root.remove("kernelArguments");
    }
    fill_plain_strings(cfg);
    set_version(cfg, SpecVersion::V3_2.as_str());
    Ok(())
}

/// Writes the string fields that are plain (always emitted) strings in 3.0-3.2.
pub(crate) fn fill_plain_strings(cfg: &mut Value) {
    fn default_str(o: &mut Value, key: &str) {
        if let Value::Object(m) = o {
            m.entry(key).or_insert_with(|| Value::String(String::new()));
        }
    }
    for_each_in(cfg, &["storage", "raid"], |r| default_str(r, "level"));
    for_each_in(cfg, &["storage", "links"], |l| default_str(l, "target"));
    for_each_in(cfg, &["storage", "luks"], |l| {
        if let Some(custom) = l.get_mut("clevis").and_then(|c| c.get_mut("custom")) {
            if custom.as_object().is_some_and(|m| !m.is_empty()) {
                default_str(custom, "config");
                default_str(custom, "pin");
            }
        }
    });
}

/// 3.2 -> 3.1: refuses LUKS, `shouldExist: false` users/groups and partition resize; drops the
/// fields 3.1 lacks.
fn v32_to_v31(cfg: &mut Value) -> Result<(), TranslateError> {
    if !list_at(cfg, &["storage", "luks"]).is_empty() {
        return Err(unsupported("LUKS is not supported on 3.1"));
    }
    for u in list_at(cfg, &["passwd", "users"]) {
        if u.get("shouldExist").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported(
                "ShouldExist in Passwd.Users is not supported on 3.1",
            ));
        }
    }
    for g in list_at(cfg, &["passwd", "groups"]) {
        if g.get("shouldExist").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported(
                "ShouldExist in Passwd.Groups is not supported on 3.1",
            ));
        }
    }
    for d in list_at(cfg, &["storage", "disks"]) {
        for p in list(d, "partitions") {
            if p.get("resize").and_then(Value::as_bool) == Some(true) {
                return Err(unsupported(
                    "Resize in Storage.Disks.Partitions is not supported on 3.1",
                ));
            }
        }
    }
    let drop = |key: &'static str| {
        move |v: &mut Value| {
            if let Value::Object(m) = v {
                m.remove(key);
            }
        }
    };
    for_each_in(cfg, &["passwd", "users"], drop("shouldExist"));
    for_each_in(cfg, &["passwd", "groups"], drop("shouldExist"));
    if let Some(Value::Array(disks)) = cfg.get_mut("storage").and_then(|s| s.get_mut("disks")) {
        for d in disks {
            for_each_in(d, &["partitions"], drop("resize"));
        }
    }
    if let Some(Value::Object(s)) = cfg.get_mut("storage") {
        s.remove("luks");
    }
    set_version(cfg, SpecVersion::V3_1.as_str());
    Ok(())
}
