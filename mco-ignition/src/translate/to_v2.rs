//! 3.2 -> 2.2, as upstream's converter does it.
//!
//! Filesystems are named by their path (or by a counter when they have none); every file,
//! directory and link is placed on the filesystem with the longest path that is a plain string
//! prefix of its own path, with that prefix stripped, else on `root`. Files without `overwrite`
//! get `overwrite: false`; each `append` entry becomes its own file with `append: true`; a file
//! with neither a source nor appends is dropped.

use serde_json::{Map, Value};

use super::value::{list, list_at, obj, str_of};
use super::TranslateError;

fn unsupported(msg: &str) -> TranslateError {
    TranslateError::Unsupported(msg.to_string())
}

fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn check(cfg: &Value) -> Result<(), TranslateError> {
    let ign = cfg.get("ignition").cloned().unwrap_or(Value::Null);
    for m in list_at(&ign, &["config", "merge"]) {
        if has(m, "compression") {
            return Err(unsupported(
                "Compression in Ignition.Config.Merge is not supported on 2.2",
            ));
        }
        if has(m, "httpHeaders") {
            return Err(unsupported(
                "HTTPHeaders in Ignition.Config.Merge are not supported on 2.2",
            ));
        }
    }
    if let Some(r) = ign.get("config").and_then(|c| c.get("replace")) {
        if has(r, "compression") {
            return Err(unsupported(
                "Compression in Ignition.Config.Replace is not supported on 2.2",
            ));
        }
        if has(r, "httpHeaders") {
            return Err(unsupported(
                "HTTPHeaders in Ignition.Config.Replace are not supported on 2.2",
            ));
        }
    }
    for ca in list_at(&ign, &["security", "tls", "certificateAuthorities"]) {
        if has(ca, "compression") {
            return Err(unsupported(
                "Compression in Ignition.Security.TLS.CertificateAuthorities is not supported on 2.2",
            ));
        }
        if has(ca, "httpHeaders") {
            return Err(unsupported(
                "HTTPHeaders in Ignition.Security.TLS.CertificateAuthorities are not supported on 2.2",
            ));
        }
    }
    if let Some(p) = ign.get("proxy") {
        if has(p, "httpProxy") || has(p, "httpsProxy") || has(p, "noProxy") {
            return Err(unsupported(
                "HTTP proxies in Ignition.Proxy are not supported on 2.2",
            ));
        }
    }
    if !list_at(cfg, &["storage", "luks"]).is_empty() {
        return Err(unsupported("LUKS is not supported on 2.2"));
    }
    for u in list_at(cfg, &["passwd", "users"]) {
        if u.get("shouldExist").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported(
                "ShouldExist in Passwd.Users is not supported on 2.2",
            ));
        }
    }
    for g in list_at(cfg, &["passwd", "groups"]) {
        if g.get("shouldExist").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported(
                "ShouldExist in Passwd.Groups is not supported on 2.2",
            ));
        }
    }
    for d in list_at(cfg, &["storage", "disks"]) {
        for p in list(d, "partitions") {
            if has(p, "sizeMiB") || has(p, "startMiB") {
                return Err(unsupported(
                    "SizeMiB and StartMiB in Storage.Disks.Partitions is not supported on 2.2",
                ));
            }
            if p.get("resize").and_then(Value::as_bool) == Some(true) {
                return Err(unsupported(
                    "Resize in Storage.Disks.Partitions is not supported on 2.2",
                ));
            }
        }
    }
    for fs in list_at(cfg, &["storage", "filesystems"]) {
        if has(fs, "mountOptions") {
            return Err(unsupported(
                "MountOptions in Storage.Filesystems is not supported on 2.2",
            ));
        }
    }
    for f in list_at(cfg, &["storage", "files"]) {
        if f.get("contents").is_some_and(|c| has(c, "httpHeaders")) {
            return Err(unsupported(
                "HTTPHeaders in Storage.Files.Contents are not supported on 2.2",
            ));
        }
        for a in list(f, "append") {
            if has(a, "httpHeaders") {
                return Err(unsupported(
                    "HTTPHeaders in Storage.Files.Append.* are not supported on 2.2",
                ));
            }
        }
    }
    Ok(())
}

/// Builder for one output object: inserts only what Go's encoder would write for 2.2's
/// `omitempty` fields (non-pointer zero values are left out, pointers are kept when set).
struct Out(Map<String, Value>);

impl Out {
    fn new() -> Self {
        Out(Map::new())
    }
    /// A plain (non-pointer) string: left out when empty or absent.
    fn plain_str(&mut self, key: &str, v: Option<&Value>) -> &mut Self {
        if let Some(s) = v.and_then(Value::as_str) {
            if !s.is_empty() {
                self.0.insert(key.into(), Value::String(s.into()));
            }
        }
        self
    }
    /// A plain boolean: left out when false or absent.
    fn plain_bool(&mut self, key: &str, v: Option<&Value>) -> &mut Self {
        if v.and_then(Value::as_bool) == Some(true) {
            self.0.insert(key.into(), Value::Bool(true));
        }
        self
    }
    /// A plain integer: left out when zero or absent.
    fn plain_int(&mut self, key: &str, v: Option<&Value>) -> &mut Self {
        if let Some(n) = v.filter(|n| n.as_i64().is_some_and(|i| i != 0)) {
            self.0.insert(key.into(), n.clone());
        }
        self
    }
    /// A pointer or list value: copied when present.
    fn copy(&mut self, key: &str, v: Option<&Value>) -> &mut Self {
        if let Some(x) = v.filter(|x| !x.is_null()) {
            self.0.insert(key.into(), x.clone());
        }
        self
    }
    fn put(&mut self, key: &str, v: Value) -> &mut Self {
        self.0.insert(key.into(), v);
        self
    }
    fn done(&mut self) -> Value {
        Value::Object(std::mem::take(&mut self.0))
    }
}

fn verification(r: &Value) -> Value {
    Out::new()
        .copy("hash", r.get("verification").and_then(|v| v.get("hash")))
        .done()
}

fn cfg_ref(r: &Value) -> Value {
    Out::new()
        .plain_str("source", r.get("source"))
        .put("verification", verification(r))
        .done()
}

fn users(cfg: &Value) -> Vec<Value> {
    list_at(cfg, &["passwd", "users"])
        .iter()
        .map(|u| {
            Out::new()
                .plain_str("name", u.get("name"))
                .copy("passwordHash", u.get("passwordHash"))
                .copy("sshAuthorizedKeys", u.get("sshAuthorizedKeys"))
                .copy("uid", u.get("uid"))
                .plain_str("gecos", u.get("gecos"))
                .plain_str("homeDir", u.get("homeDir"))
                .plain_bool("noCreateHome", u.get("noCreateHome"))
                .plain_str("primaryGroup", u.get("primaryGroup"))
                .copy("groups", u.get("groups"))
                .plain_bool("noUserGroup", u.get("noUserGroup"))
                .plain_bool("noLogInit", u.get("noLogInit"))
                .plain_str("shell", u.get("shell"))
                .plain_bool("system", u.get("system"))
                .done()
        })
        .collect()
}

fn groups(cfg: &Value) -> Vec<Value> {
    list_at(cfg, &["passwd", "groups"])
        .iter()
        .map(|g| {
            Out::new()
                .plain_str("name", g.get("name"))
                .copy("gid", g.get("gid"))
                .plain_str("passwordHash", g.get("passwordHash"))
                .plain_bool("system", g.get("system"))
                .done()
        })
        .collect()
}

fn units(cfg: &Value) -> Vec<Value> {
    list_at(cfg, &["systemd", "units"])
        .iter()
        .map(|u| {
            let dropins: Vec<Value> = list(u, "dropins")
                .iter()
                .map(|d| {
                    Out::new()
                        .plain_str("name", d.get("name"))
                        .plain_str("contents", d.get("contents"))
                        .done()
                })
                .collect();
            Out::new()
                .plain_str("name", u.get("name"))
                .copy("enabled", u.get("enabled"))
                .plain_bool("mask", u.get("mask"))
                .plain_str("contents", u.get("contents"))
                .put("dropins", Value::Array(dropins))
                .done()
        })
        .collect()
}

fn disks(cfg: &Value) -> Vec<Value> {
    list_at(cfg, &["storage", "disks"])
        .iter()
        .map(|d| {
            let parts: Vec<Value> = list(d, "partitions")
                .iter()
                .map(|p| {
                    Out::new()
                        .plain_str("label", p.get("label"))
                        .plain_int("number", p.get("number"))
                        .plain_str("typeGuid", p.get("typeGuid"))
                        .plain_str("guid", p.get("guid"))
                        .done()
                })
                .collect();
            Out::new()
                .plain_str("device", d.get("device"))
                .plain_bool("wipeTable", d.get("wipeTable"))
                .put("partitions", Value::Array(parts))
                .done()
        })
        .collect()
}

fn raids(cfg: &Value) -> Vec<Value> {
    list_at(cfg, &["storage", "raid"])
        .iter()
        .map(|r| {
            Out::new()
                .plain_str("name", r.get("name"))
                .plain_str("level", r.get("level"))
                .copy("devices", r.get("devices"))
                .plain_int("spares", r.get("spares"))
                .copy("options", r.get("options"))
                .done()
        })
        .collect()
}

fn filesystems(cfg: &Value) -> Vec<Value> {
    let mut counter = 1;
    list_at(cfg, &["storage", "filesystems"])
        .iter()
        .map(|f| {
            let name = match str_of(f, "path") {
                Some(p) => p.to_string(),
                None => {
                    let n = counter.to_string();
                    counter += 1;
                    n
                }
            };
            let mount = Out::new()
                .plain_str("device", f.get("device"))
                .plain_str("format", f.get("format"))
                .plain_bool("wipeFilesystem", f.get("wipeFilesystem"))
                .copy("label", f.get("label"))
                .copy("uuid", f.get("uuid"))
                .copy("options", f.get("options"))
                .done();
            Out::new()
                .plain_str("name", Some(&Value::String(name)))
                .put("mount", mount)
                .done()
        })
        .collect()
}

/// The filesystem and relative path of a node (longest plain prefix wins, first on ties).
fn place(path: &str, fss: &[String]) -> (String, String) {
    let mut fsname = String::new();
    let mut rel = path.to_string();
    for fs in fss {
        if path.starts_with(fs.as_str()) && fs.len() > fsname.len() {
            fsname = fs.clone();
            rel = path[fs.len()..].to_string();
        }
    }
    if fsname.is_empty() {
        fsname = "root".into();
    }
    (fsname, rel)
}

fn node(n: &Value, fss: &[String]) -> Out {
    let path = str_of(n, "path").unwrap_or("");
    let (fsname, rel) = place(path, fss);
    let mut out = Out::new();
    out.plain_str("filesystem", Some(&Value::String(fsname)))
        .plain_str("path", Some(&Value::String(rel)))
        .copy("overwrite", n.get("overwrite"));
    for key in ["user", "group"] {
        if let Some(o) = obj(n, key).filter(|o| !o.is_empty()) {
            let ov = Value::Object(o.clone());
            let owner = Out::new()
                .copy("id", ov.get("id"))
                .plain_str("name", ov.get("name"))
                .done();
            out.put(key, owner);
        }
    }
    out
}

fn contents(r: &Value) -> Value {
    Out::new()
        .plain_str("compression", r.get("compression"))
        .plain_str("source", r.get("source"))
        .put("verification", verification(r))
        .done()
}

fn files(cfg: &Value, fss: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for f in list_at(cfg, &["storage", "files"]) {
        let mut base = node(f, fss);
        if !base.0.contains_key("overwrite") {
            base.put("overwrite", Value::Bool(false));
        }
        base.copy("mode", f.get("mode"));
        if let Some(c) = f.get("contents").filter(|c| has(c, "source")) {
            let mut file = Out(base.0.clone());
            file.put("contents", contents(c));
            out.push(file.done());
        }
        for a in list(f, "append") {
            let mut file = Out(base.0.clone());
            file.put("contents", contents(a))
                .put("append", Value::Bool(true))
                .put("overwrite", Value::Bool(false));
            out.push(file.done());
        }
    }
    out
}

fn links(cfg: &Value, fss: &[String]) -> Vec<Value> {
    list_at(cfg, &["storage", "links"])
        .iter()
        .map(|l| {
            node(l, fss)
                .plain_bool("hard", l.get("hard"))
                .plain_str("target", l.get("target"))
                .done()
        })
        .collect()
}

fn directories(cfg: &Value, fss: &[String]) -> Vec<Value> {
    list_at(cfg, &["storage", "directories"])
        .iter()
        .map(|d| node(d, fss).copy("mode", d.get("mode")).done())
        .collect()
}

/// Converts a normalised spec 3.2 config to spec 2.2 (unpruned: may hold empty objects/lists).
pub(crate) fn v32_to_v22(cfg: &Value) -> Result<Value, TranslateError> {
    check(cfg)?;
    let fss: Vec<String> = list_at(cfg, &["storage", "filesystems"])
        .iter()
        .filter_map(|f| str_of(f, "path").map(str::to_string))
        .collect();
    let ign = cfg.get("ignition").cloned().unwrap_or(Value::Null);
    let conf = ign.get("config").cloned().unwrap_or(Value::Null);
    let mut ign_config = Out::new();
    if let Some(r) = conf.get("replace").filter(|r| has(r, "source")) {
        ign_config.put("replace", cfg_ref(r));
    }
    let merges: Vec<Value> = list(&conf, "merge").iter().map(cfg_ref).collect();
    ign_config.put("append", Value::Array(merges));
    let cas: Vec<Value> = list_at(&ign, &["security", "tls", "certificateAuthorities"])
        .iter()
        .map(cfg_ref)
        .collect();
    let timeouts = ign.get("timeouts").cloned().unwrap_or(Value::Null);
    let ignition = Out::new()
        .put("version", Value::String("2.2.0".into()))
        .put("config", ign_config.done())
        .put(
            "security",
            Out::new()
                .put(
                    "tls",
                    Out::new()
                        .put("certificateAuthorities", Value::Array(cas))
                        .done(),
                )
                .done(),
        )
        .put(
            "timeouts",
            Out::new()
                .copy("httpResponseHeaders", timeouts.get("httpResponseHeaders"))
                .copy("httpTotal", timeouts.get("httpTotal"))
                .done(),
        )
        .done();
    let out = Out::new()
        .put("ignition", ignition)
        .put(
            "passwd",
            Out::new()
                .put("users", Value::Array(users(cfg)))
                .put("groups", Value::Array(groups(cfg)))
                .done(),
        )
        .put(
            "systemd",
            Out::new().put("units", Value::Array(units(cfg))).done(),
        )
        .put(
            "storage",
            Out::new()
                .put("disks", Value::Array(disks(cfg)))
                .put("raid", Value::Array(raids(cfg)))
                .put("filesystems", Value::Array(filesystems(cfg)))
                .put("files", Value::Array(files(cfg, &fss)))
                .put("directories", Value::Array(directories(cfg, &fss)))
                .put("links", Value::Array(links(cfg, &fss)))
                .done(),
        )
        .done();
    crate::v2::sanity_check(&out).map_err(TranslateError::ConvertedInvalid)?;
    Ok(out)
}
