//! Two objects with one identity (group, kind, namespace and name): `kubectl apply -f DIR`
//! applies the files in the order it walks them and the later object replaces the earlier,
//! so reading does the same, and says so with a [`Notice`].

use super::kinds;
use super::strict::{Notice, Rule};
use super::Manifests;
use crate::api::meta::ObjectMeta;
use serde_json::Value;

/// What identifies an object on a cluster.
struct Identity<'a> {
    group: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
}

impl<'a> Identity<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        let text = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
        let name = text("/metadata/name");
        let kind = text("/kind");
        if name.is_empty() || kind.is_empty() || kind.ends_with("List") {
            return None;
        }
        Some(Identity {
            group: kinds::group_version(text("/apiVersion")).0,
            kind,
            namespace: text("/metadata/namespace"),
            name,
        })
    }

    fn is(&self, v: &Value) -> bool {
        Identity::of(v).is_some_and(|o| {
            o.group == self.group
                && o.kind == self.kind
                && o.namespace == self.namespace
                && o.name == self.name
        })
    }

    fn is_meta(&self, m: &ObjectMeta) -> bool {
        m.name == self.name && m.namespace.as_deref().unwrap_or("") == self.namespace
    }
}

/// Removes the first `(file, object)` of `items` that `is` picks, returning its file.
fn take<T>(items: &mut Vec<(String, T)>, is: impl Fn(&T) -> bool) -> Option<String> {
    let i = items.iter().position(|(_, x)| is(x))?;
    Some(items.remove(i).0)
}

impl Manifests {
    /// Before `v` (read from `file`, its document at `line`) is added: removes an object of the
    /// same identity read before, with its location, and records the replacement.
    pub(super) fn replace_earlier(&mut self, file: &str, line: usize, v: &Value) {
        let Some(id) = Identity::of(v) else {
            return;
        };
        let mco = id.group == kinds::MCO_GROUP;
        let earlier = match id.kind {
            "MachineConfig" if mco => take(&mut self.machine_configs, |m| id.is_meta(&m.metadata)),
            "MachineConfigPool" if mco => take(&mut self.pools, |p| id.is_meta(&p.metadata)),
            "ControllerConfig" if mco => match &self.controller_config {
                Some((f, c)) if id.is_meta(&c.metadata) => {
                    let f = f.clone();
                    self.controller_config = None;
                    Some(f)
                }
                _ => None,
            },
            "Node" if id.group.is_empty() => take(&mut self.nodes, |n| n.metadata.name == id.name),
            crate::api::rollout_policy::KIND if id.group == crate::api::rollout_policy::GROUP => {
                take(&mut self.rollout_policies, |p| id.is_meta(&p.metadata))
            }
            "MachineOSConfig" if mco => {
                take(&mut self.machine_os_configs, |c| id.is_meta(&c.metadata))
            }
            _ => take(&mut self.others, |o| id.is(o)),
        };
        let Some(earlier) = earlier else {
            return;
        };
        let at = self
            .locations
            .iter()
            .position(|l| l.file == earlier && l.kind == id.kind && l.name == id.name);
        // Both are named at their `metadata.name` lines.
        let earlier_at = match at.map(|i| {
            let l = self.locations.remove(i);
            l.positions.line_of("/metadata/name").unwrap_or(l.line)
        }) {
            Some(l) => format!("{earlier}:{l}"),
            None => earlier.clone(),
        };
        let namespace = if id.namespace.is_empty() {
            String::new()
        } else {
            format!(" (namespace {:?})", id.namespace)
        };
        self.notices.push(Notice {
            rule: Rule::Replaced,
            file: file.to_string(),
            line,
            kind: id.kind.to_string(),
            name: id.name.to_string(),
            pointer: "/metadata/name".into(),
            message: format!(
                "also defined in {earlier_at}{namespace}: kubectl apply -f applies both, this one \
                 last, so it replaces that one"
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &str)]) -> Manifests {
        let mut m = Manifests::default();
        for (file, text) in files {
            if let Err(e) = m.add_file(file, text) {
                panic!("{e}");
            }
        }
        m
    }

    #[test]
    fn the_later_replaces_the_earlier_of_one_identity_only() {
        let mc = |karg: &str| {
            format!("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-x\nspec:\n  kernelArguments: [{karg}]\n")
        };
        let secret = |ns: &str| {
            format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull\n  namespace: {ns}\n")
        };
        let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: cluster\n";
        let config_node =
            "apiVersion: config.openshift.io/v1\nkind: Node\nmetadata:\n  name: cluster\n";
        let m = read(&[
            ("a.yaml", &mc("a")),
            ("b.yaml", &format!("{}---\n{}", mc("b"), secret("one"))),
            (
                "c.yaml",
                &format!(
                    "{}---\n{}---\n{node}---\n{config_node}",
                    secret("two"),
                    secret("one")
                ),
            ),
        ]);
        assert_eq!(m.machine_configs.len(), 1);
        assert_eq!(m.machine_configs[0].0, "b.yaml");
        assert_eq!(m.machine_configs[0].1.spec.kernel_arguments, ["b"]);
        assert_eq!(m.others_of_kind("Secret").len(), 2);
        assert_eq!((m.nodes.len(), m.others_of_kind("Node").len()), (1, 1));
        let said: Vec<(&str, usize, &str)> = m
            .notices
            .iter()
            .map(|n| (n.file.as_str(), n.line, n.message.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                ("b.yaml", 1, "also defined in a.yaml:4: kubectl apply -f applies both, this one last, so it replaces that one"),
                ("c.yaml", 7, "also defined in b.yaml:11 (namespace \"one\"): kubectl apply -f applies both, this one last, so it replaces that one"),
            ]
        );
        // The earlier's location went with it.
        assert_eq!(m.line_of("a.yaml", "MachineConfig", "99-x"), None);
    }
}
