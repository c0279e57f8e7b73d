//! `docs/src/cluster-dump.md` says how to make the dump `status` reads and what each missing
//! kind costs: it must hold, for every kind `mco_render::status::sources` lists, the `kubectl
//! get` of the resource in the namespace it is read from, and the words of what the view
//! misses without it.

use mco_render::status::Source;

fn chapter() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/cluster-dump.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_chapter_names_every_kind_status_reads_and_what_it_costs() {
    let text = chapter();
    for s in Source::ALL {
        let served = s.served();
        let scope = match (served.namespace, served.namespaced) {
            (Some(ns), _) => format!(" -n {ns}"),
            (None, true) => " -A".to_string(),
            (None, false) => String::new(),
        };
        let get = format!(
            "kubectl get {}{scope} -o yaml > dump/{}.yaml",
            served.resource(),
            served.plural
        );
        assert!(text.contains(&get), "no {get:?} in the chapter");
        let row = format!("| {} | {} |", s.label(), s.without());
        assert!(text.contains(&row), "no row {row:?} in the chapter");
    }
}
