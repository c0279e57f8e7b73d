//! `-o json|yaml`, one spelling on every command. Kubernetes objects print as `kubectl apply
//! -f` reads them: JSON as one `v1 List` holding them (as `kubectl get -o json` prints
//! several; one object asked for by name prints alone, as `kubectl get KIND NAME` prints it),
//! YAML as one document each. Reports (validate, report, diff, schedule, status)
//! print as one value, in either.

use super::{to_json, to_yaml, Failure, Format};
use serde::Serialize;

/// A `v1 List` of objects: what `kubectl get -o json` prints for several objects and what
/// `kubectl apply -f` creates or updates one by one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct List<'a, T> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [T],
}

impl<'a, T> List<'a, T> {
    pub(crate) fn new(items: &'a [T]) -> Self {
        List {
            api_version: "v1",
            kind: "List",
            items,
        }
    }
}

/// `objects` as `-o json|yaml` prints them: a `v1 List` (JSON), or documents separated by
/// `---` (YAML; nothing for no object).
pub(crate) fn objects_text<T: Serialize>(objects: &[T], format: Format) -> Result<String, Failure> {
    match format {
        Format::Json => Ok(format!("{}\n", to_json(&List::new(objects))?)),
        Format::Yaml => {
            let mut text = String::new();
            for (i, o) in objects.iter().enumerate() {
                if i > 0 {
                    text.push_str("---\n");
                }
                text.push_str(&to_yaml(o)?);
            }
            Ok(text)
        }
    }
}

/// One object asked for by name, as `kubectl get KIND NAME -o json|yaml` prints it: the object
/// itself, which `kubectl apply -f` takes too.
pub(crate) fn object_text<T: Serialize>(object: &T, format: Format) -> Result<String, Failure> {
    match format {
        Format::Json => Ok(format!("{}\n", to_json(object)?)),
        Format::Yaml => to_yaml(object),
    }
}

/// A report printed as a value (`-o json` or `-o yaml`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Data {
    Json,
    Yaml,
}

/// `value` as `-o json|yaml` prints it, ending with a newline.
pub(crate) fn data_text(value: &impl Serialize, format: Data) -> Result<String, Failure> {
    match format {
        Data::Json => Ok(format!("{}\n", to_json(value)?)),
        Data::Yaml => to_yaml(value),
    }
}

impl super::DiffFormat {
    /// The value format, `None` for text.
    pub(crate) fn data(self) -> Option<Data> {
        match self {
            super::DiffFormat::Text => None,
            super::DiffFormat::Json => Some(Data::Json),
            super::DiffFormat::Yaml => Some(Data::Yaml),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_one_v1_list_and_yaml_one_document_per_object() {
        let objects = [json!({"kind": "A"}), json!({"kind": "B"})];
        let Ok(text) = objects_text(&objects, Format::Json) else {
            panic!("JSON");
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "List", "items": objects})
        );
        let Ok(text) = objects_text(&objects, Format::Yaml) else {
            panic!("YAML");
        };
        assert_eq!(text, "kind: A\n---\nkind: B\n");
        assert_eq!(
            objects_text::<serde_json::Value>(&[], Format::Yaml).ok(),
            Some(String::new())
        );
    }
}
