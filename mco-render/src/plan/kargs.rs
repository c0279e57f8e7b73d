//! Kernel argument splitting and the `rpm-ostree kargs` argument list.

/// Whitespace in the C/POSIX locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\x0c' | b'\n' | b'\r' | b'\t' | b'\x0b')
}

/// Splits one string the way the kernel splits its command line: on whitespace outside double
/// quotes; quotes are kept and cannot be escaped.
pub fn split_kernel_arguments(args: &str) -> Vec<String> {
    let b = args.as_bytes();
    let mut out = Vec::new();
    let mut stop = 0;
    while stop < b.len() {
        let mut start = stop;
        while start < b.len() && is_space(b[start]) {
            start += 1;
        }
        let mut end = start;
        let mut in_quote = false;
        while end < b.len() {
            if is_space(b[end]) && !in_quote {
                break;
            }
            if b[end] == b'"' {
                in_quote = !in_quote;
            }
            end += 1;
        }
        if start != end {
            // Boundaries are ASCII bytes, so the slice is valid UTF-8.
            out.push(String::from_utf8_lossy(&b[start..end]).into_owned());
        }
        stop = end;
    }
    out
}

/// Splits every entry and flattens the result.
pub fn parse_kernel_arguments(kargs: &[String]) -> Vec<String> {
    kargs
        .iter()
        .flat_map(|k| split_kernel_arguments(k))
        .map(|a| a.trim().to_string())
        .collect()
}

/// `rpm-ostree kargs` arguments: `--delete-if-present=` each old argument, then `--append=` each
/// new one.
pub fn generate_kargs(old: &[String], new: &[String]) -> Vec<String> {
    let mut out: Vec<String> = parse_kernel_arguments(old)
        .into_iter()
        .map(|a| format!("--delete-if-present={a}"))
        .collect();
    out.extend(
        parse_kernel_arguments(new)
            .into_iter()
            .map(|a| format!("--append={a}")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_unquoted_space() {
        assert_eq!(
            split_kernel_arguments(r#"  a=1 b="x y"  c"#),
            ["a=1", r#"b="x y""#, "c"]
        );
        assert_eq!(
            split_kernel_arguments(r#"a="unterminated b"#),
            [r#"a="unterminated b"#]
        );
        assert!(split_kernel_arguments(" \t\n").is_empty());
    }

    #[test]
    fn generate() {
        let old = vec!["a b".to_string()];
        let new = vec!["c".to_string()];
        assert_eq!(
            generate_kargs(&old, &new),
            [
                "--delete-if-present=a",
                "--delete-if-present=b",
                "--append=c"
            ]
        );
    }
}
