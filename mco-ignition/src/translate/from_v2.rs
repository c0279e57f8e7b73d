//! Spec 2.2 -> 3.0, as upstream MCO converts 2.2 configs: every filesystem other than `root`
//! needs a mount point, and the only one it knows is `root` -> `/`.
//!
//! Checks (in upstream's order): filesystems without a mapping, duplicate paths across files,
//! directories and links, paths through a configured link, duplicate units and dropins, networkd
//! units. Then the config is rewritten: absent `overwrite` becomes `true` (`false` for appends,
//! whose contents move to `append[]`), zero values become absent, `enable`/`enabled` fold into
//! `enabled`.

use serde_json::{Map, Value};

use super::value::{list, list_at, str_of};
use crate::gocompat::quote::go_quote;

/// Why a 2.2 config cannot be converted; `Display` is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FromV2Error {
    /// A filesystem other than `root` is declared.
    #[error("Config defined filesystem {} but no mapping was defined.Please specify a path to be used as the filesystem mountpoint.", go_quote(.0))]
    NoFilesystem(String),
    /// Two nodes share a path.
    #[error("Config has conflicting inodes: {} and {}.  All files, directories and links must specify a unique `path`.", go_quote(.old), go_quote(.new))]
    DuplicateInode {
        /// Description of the first node.
        old: String,
        /// Description of the second node.
        new: String,
    },
    /// A node lies below a configured link.
    #[error("{name} uses link defined in config {}. Please use a link not defined in Storage:Links", go_quote(.link))]
    UsesOwnLink {
        /// The link's path.
        link: String,
        /// Description of the node.
        name: String,
    },
    /// Two units share a name.
    #[error("Config has duplicate unit name {}.  All units must specify a unique `name`.", go_quote(.0))]
    DuplicateUnit(String),
    /// Two dropins of a unit share a name.
    #[error("Config has duplicate dropin name {} in unit {}.  All dropins must specify a unique `name`.", go_quote(.name), go_quote(.unit))]
    DuplicateDropin {
        /// Unit name.
        unit: String,
        /// Dropin name.
        name: String,
    },
    /// networkd units are not expressible in spec 3.
    #[error("config includes deprecated networkd section - use Files instead")]
    Networkd,
}

pub(crate) use crate::path::clean;

/// Go's `path.Join` (empty elements skipped; empty result stays empty).
pub(crate) fn join(parts: &[&str]) -> String {
    let nonempty: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if nonempty.is_empty() {
        return String::new();
    }
    clean(&nonempty.join("/"))
}

fn fs_map(name: &str) -> &'static str {
    if name == "root" {
        "/"
    } else {
        ""
    }
}

fn check(cfg: &Value) -> Result<(), FromV2Error> {
    if !list_at(cfg, &["networkd", "units"]).is_empty() {
        return Err(FromV2Error::Networkd);
    }
    for fs in list_at(cfg, &["storage", "filesystems"]) {
        let name = str_of(fs, "name").unwrap_or("");
        if name != "root" {
            return Err(FromV2Error::NoFilesystem(name.into()));
        }
    }
    let full = |n: &Value| {
        join(&[
            "/",
            fs_map(str_of(n, "filesystem").unwrap_or("")),
            str_of(n, "path").unwrap_or(""),
        ])
    };
    let links: Vec<String> = list_at(cfg, &["storage", "links"])
        .iter()
        .map(full)
        .collect();
    let uses_link = |p: &str| {
        links
            .iter()
            .find(|l| p.starts_with(l.as_str()) && p != l.as_str())
            .cloned()
    };
    let mut entries: std::collections::HashMap<String, String> = Default::default();
    for (key, label) in [
        ("files", "File"),
        ("directories", "Directory"),
        ("links", "Link"),
    ] {
        for n in list_at(cfg, &["storage", key]) {
            let p = full(n);
            let name = format!("{label}: {p}");
            if let Some(old) = entries.get(&p) {
                return Err(FromV2Error::DuplicateInode {
                    old: old.clone(),
                    new: name,
                });
            }
            if label != "Link" {
                if let Some(l) = uses_link(&p) {
                    return Err(FromV2Error::UsesOwnLink { link: l, name });
                }
            }
            entries.insert(p.clone(), name.clone());
            if label == "Link" {
                if let Some(l) = uses_link(&p) {
                    return Err(FromV2Error::UsesOwnLink { link: l, name });
                }
            }
        }
    }
    let mut units = std::collections::HashSet::new();
    for u in list_at(cfg, &["systemd", "units"]) {
        let name = str_of(u, "name").unwrap_or("").to_string();
        if !units.insert(name.clone()) {
            return Err(FromV2Error::DuplicateUnit(name));
        }
        let mut dropins = std::collections::HashSet::new();
        for d in list(u, "dropins") {
            let dn = str_of(d, "name").unwrap_or("").to_string();
            if !dropins.insert(dn.clone()) {
                return Err(FromV2Error::DuplicateDropin {
                    unit: name,
                    name: dn,
                });
            }
        }
    }
    Ok(())
}

/// Builder for 3.0 objects from a normalised 2.2 object.
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Self {
        Obj(Map::new())
    }
    /// Copies a field as is, when present.
    fn copy(mut self, to: &str, v: Option<&Value>) -> Self {
        if let Some(x) = v {
            self.0.insert(to.into(), x.clone());
        }
        self
    }
    /// A required 3.0 string: always written (empty when absent).
    fn string(mut self, to: &str, v: Option<&Value>) -> Self {
        let s = v.and_then(Value::as_str).unwrap_or("");
        self.0.insert(to.into(), Value::String(s.into()));
        self
    }
    /// A 2.2 zero-omitted value becoming an optional 3.0 one: written only when non-zero (the
    /// normalised 2.2 tree already leaves zero values out).
    fn opt(self, to: &str, v: Option<&Value>) -> Self {
        self.copy(to, v)
    }
    fn put(mut self, to: &str, v: Value) -> Self {
        self.0.insert(to.into(), v);
        self
    }
    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

fn verification(r: &Value) -> Value {
    Obj::new()
        .copy("hash", r.get("verification").and_then(|v| v.get("hash")))
        .done()
}

fn node(n: &Value) -> Obj {
    let path = join(&[
        fs_map(str_of(n, "filesystem").unwrap_or("")),
        str_of(n, "path").unwrap_or(""),
    ]);
    let mut o = Obj::new().put("path", Value::String(path));
    for key in ["user", "group"] {
        let owner = n.get(key).cloned().unwrap_or(Value::Null);
        let ov = Obj::new()
            .copy("id", owner.get("id"))
            .opt("name", owner.get("name"))
            .done();
        o = o.put(key, ov);
    }
    o.copy("overwrite", n.get("overwrite"))
}

/// Converts a normalised, validated, de-duplicated 2.2 config to a 3.0 config (unpruned).
pub fn v22_to_v30(cfg: &Value) -> Result<Value, FromV2Error> {
    check(cfg)?;
    let ign = cfg.get("ignition").cloned().unwrap_or(Value::Null);
    let conf = ign.get("config").cloned().unwrap_or(Value::Null);
    let cfg_ref = |r: &Value| {
        Obj::new()
            .string("source", r.get("source"))
            .put("verification", verification(r))
            .done()
    };
    let mut ign_config = Obj::new().put(
        "merge",
        Value::Array(list(&conf, "append").iter().map(cfg_ref).collect()),
    );
    if let Some(r) = conf.get("replace") {
        ign_config = ign_config.put("replace", cfg_ref(r));
    }
    let cas: Vec<Value> = list_at(&ign, &["security", "tls", "certificateAuthorities"])
        .iter()
        .map(cfg_ref)
        .collect();
    let timeouts = ign.get("timeouts").cloned().unwrap_or(Value::Null);
    let ignition = Obj::new()
        .put("version", Value::String("3.0.0".into()))
        .put("config", ign_config.done())
        .put(
            "security",
            Obj::new()
                .put(
                    "tls",
                    Obj::new()
                        .put("certificateAuthorities", Value::Array(cas))
                        .done(),
                )
                .done(),
        )
        .put(
            "timeouts",
            Obj::new()
                .copy("httpResponseHeaders", timeouts.get("httpResponseHeaders"))
                .copy("httpTotal", timeouts.get("httpTotal"))
                .done(),
        )
        .done();

    let users: Vec<Value> = list_at(cfg, &["passwd", "users"])
        .iter()
        .map(|u| {
            Obj::new()
                .string("name", u.get("name"))
                .copy("passwordHash", u.get("passwordHash"))
                .copy("sshAuthorizedKeys", u.get("sshAuthorizedKeys"))
                .copy("uid", u.get("uid"))
                .opt("gecos", u.get("gecos"))
                .opt("homeDir", u.get("homeDir"))
                .opt("noCreateHome", u.get("noCreateHome"))
                .opt("primaryGroup", u.get("primaryGroup"))
                .copy("groups", u.get("groups"))
                .opt("noUserGroup", u.get("noUserGroup"))
                .opt("noLogInit", u.get("noLogInit"))
                .opt("shell", u.get("shell"))
                .opt("system", u.get("system"))
                .done()
        })
        .collect();
    let groups: Vec<Value> = list_at(cfg, &["passwd", "groups"])
        .iter()
        .map(|g| {
            Obj::new()
                .string("name", g.get("name"))
                .copy("gid", g.get("gid"))
                .opt("passwordHash", g.get("passwordHash"))
                .opt("system", g.get("system"))
                .done()
        })
        .collect();
    let units: Vec<Value> = list_at(cfg, &["systemd", "units"])
        .iter()
        .map(|u| {
            let enabled_field = u.get("enabled").and_then(Value::as_bool);
            let enable = u.get("enable").and_then(Value::as_bool) == Some(true);
            let enabled = match enabled_field {
                Some(false) => Some(false),
                Some(true) => Some(true),
                None if enable => Some(true),
                None => None,
            };
            let dropins: Vec<Value> = list(u, "dropins")
                .iter()
                .map(|d| {
                    Obj::new()
                        .string("name", d.get("name"))
                        .opt("contents", d.get("contents"))
                        .done()
                })
                .collect();
            Obj::new()
                .string("name", u.get("name"))
                .copy("enabled", enabled.map(Value::Bool).as_ref())
                .opt("mask", u.get("mask"))
                .opt("contents", u.get("contents"))
                .put("dropins", Value::Array(dropins))
                .done()
        })
        .collect();
    let disks: Vec<Value> = list_at(cfg, &["storage", "disks"])
        .iter()
        .map(|d| {
            let parts: Vec<Value> = list(d, "partitions")
                .iter()
                .map(|p| {
                    Obj::new()
                        .string("label", p.get("label"))
                        .opt("number", p.get("number"))
                        .opt("typeGuid", p.get("typeGuid"))
                        .opt("guid", p.get("guid"))
                        .done()
                })
                .collect();
            Obj::new()
                .string("device", d.get("device"))
                .opt("wipeTable", d.get("wipeTable"))
                .put("partitions", Value::Array(parts))
                .done()
        })
        .collect();
    let raids: Vec<Value> = list_at(cfg, &["storage", "raid"])
        .iter()
        .map(|r| {
            Obj::new()
                .string("name", r.get("name"))
                .string("level", r.get("level"))
                .copy("devices", r.get("devices"))
                .opt("spares", r.get("spares"))
                .copy("options", r.get("options"))
                .done()
        })
        .collect();
    let files: Vec<Value> = list_at(cfg, &["storage", "files"])
        .iter()
        .map(|f| {
            let append = f.get("append").and_then(Value::as_bool) == Some(true);
            let mut n = node(f);
            if !n.0.contains_key("overwrite") {
                n = n.put("overwrite", Value::Bool(true));
            }
            if append {
                n = n.put("overwrite", Value::Bool(false));
            }
            let c = f.get("contents").cloned().unwrap_or(Value::Null);
            let contents = Obj::new()
                .opt("compression", c.get("compression"))
                .string("source", c.get("source"))
                .put("verification", verification(&c))
                .done();
            n = n.copy("mode", f.get("mode"));
            if append {
                n.put("append", Value::Array(vec![contents])).done()
            } else {
                n.put("contents", contents).done()
            }
        })
        .collect();
    let links: Vec<Value> = list_at(cfg, &["storage", "links"])
        .iter()
        .map(|l| {
            node(l)
                .opt("hard", l.get("hard"))
                .string("target", l.get("target"))
                .done()
        })
        .collect();
    let dirs: Vec<Value> = list_at(cfg, &["storage", "directories"])
        .iter()
        .map(|d| node(d).copy("mode", d.get("mode")).done())
        .collect();

    Ok(Obj::new()
        .put("ignition", ignition)
        .put(
            "passwd",
            Obj::new()
                .put("users", Value::Array(users))
                .put("groups", Value::Array(groups))
                .done(),
        )
        .put(
            "systemd",
            Obj::new().put("units", Value::Array(units)).done(),
        )
        .put(
            "storage",
            Obj::new()
                .put("disks", Value::Array(disks))
                .put("raid", Value::Array(raids))
                .put("files", Value::Array(files))
                .put("directories", Value::Array(dirs))
                .put("links", Value::Array(links))
                .done(),
        )
        .done())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_semantics() {
        assert_eq!(join(&["/", "", "etc/x"]), "/etc/x");
        assert_eq!(join(&["", "/a//b/../c/"]), "/a/c");
        assert_eq!(join(&["", ""]), "");
        assert_eq!(clean("a/../.."), "..");
    }
}
