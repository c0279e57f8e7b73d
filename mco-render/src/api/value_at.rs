//! Reading fields of loosely typed objects (`serde_json::Value`) by JSON pointer, as the
//! controllers read cluster objects they do not model: absent or mistyped fields read as empty.

use serde_json::Value;

/// The string at `ptr` (a JSON pointer such as `/metadata/name`), or `""`.
pub fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The strings of the list at `ptr`, skipping items that are not strings; empty when absent.
pub fn strings_at(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_and_mistyped_read_as_empty() {
        let v = json!({"m": {"name": "a", "n": 1, "l": ["x", 2, "y"]}});
        assert_eq!(str_at(&v, "/m/name"), "a");
        assert_eq!(str_at(&v, "/m/n"), "");
        assert_eq!(str_at(&v, "/m/missing"), "");
        assert_eq!(strings_at(&v, "/m/l"), ["x", "y"]);
        assert!(strings_at(&v, "/m/name").is_empty());
        assert!(strings_at(&v, "/nothing").is_empty());
    }
}
