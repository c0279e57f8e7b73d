//! How kubectl cuts a file into documents (k8s.io/apimachinery's `YAMLOrJSONDecoder`): a stream
//! whose first non-space character (within its first 4096 bytes) is `{` is read as a sequence
//! of JSON values, falling back to YAML for the rest when the first or second value does not
//! decode; any other stream is cut into documents at each line that starts with `---`, which
//! may be followed by spaces and a comment only. Lines are read as Go's `bufio.Reader.ReadLine`
//! gives them: a `\r\n` ending is a `\n`.

/// How far into the stream kubectl looks for the `{` that makes it JSON.
const SNIFF_LEN: usize = 4096;

/// One YAML document's text, as kubectl hands it to the YAML library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// The document's text, every line ending in `\n`.
    pub text: String,
    /// The 1-based line of the file the text's first line is.
    pub first_line: usize,
}

/// A line starting with `---` followed by something other than spaces and a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadSeparator {
    /// What follows the `---`, trimmed.
    pub rest: String,
    /// The 1-based line.
    pub line: usize,
}

/// Whether kubectl reads `text` as a stream of JSON values.
pub(crate) fn sniffs_json(text: &str) -> bool {
    let mut end = text.len().min(SNIFF_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_start().starts_with('{')
}

/// Cuts a YAML stream (from `start`, a byte offset at the start of a line numbered
/// `first_line`) into kubectl's documents; the documents before a bad separator are returned
/// with it. Empty documents are kept (the caller numbers them).
pub(crate) fn yaml_chunks(text: &str, first_line: usize) -> (Vec<Chunk>, Option<BadSeparator>) {
    let mut chunks = Vec::new();
    let mut buffer = String::new();
    let mut buffer_line = first_line;
    let mut lines = text.split('\n').peekable();
    let mut n = first_line;
    while let Some(raw) = lines.next() {
        let last = lines.peek().is_none();
        if last && raw.is_empty() {
            break;
        }
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return (
                    chunks,
                    Some(BadSeparator {
                        rest: trimmed.to_string(),
                        line: n,
                    }),
                );
            }
            if !buffer.is_empty() {
                chunks.push(Chunk {
                    text: std::mem::take(&mut buffer),
                    first_line: buffer_line,
                });
            }
            buffer_line = n + 1;
            n += 1;
            continue;
        }
        if buffer.is_empty() {
            buffer_line = n;
        }
        buffer.push_str(line);
        buffer.push('\n');
        n += 1;
    }
    if !buffer.is_empty() {
        chunks.push(Chunk {
            text: buffer,
            first_line: buffer_line,
        });
    }
    (chunks, None)
}

/// The 1-based line of byte `offset` of `text`.
pub(crate) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Where the YAML decoder takes over after the JSON values ending at `offset`: past the
/// white space that follows, up to and including the first newline.
pub(crate) fn after_json_whitespace(text: &str, offset: usize) -> usize {
    let mut at = offset;
    for c in text[offset.min(text.len())..].chars() {
        if !c.is_whitespace() {
            break;
        }
        at += c.len_utf8();
        if c == '\n' {
            break;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<(String, usize)> {
        yaml_chunks(text, 1)
            .0
            .into_iter()
            .map(|c| (c.text, c.first_line))
            .collect()
    }

    #[test]
    fn cuts_at_separator_lines_only() {
        assert_eq!(
            texts("a: 1\n--- # two\nb: |\n  ---\n---\r\nc: 3"),
            [
                ("a: 1\n".to_string(), 1),
                ("b: |\n  ---\n".to_string(), 3),
                ("c: 3\n".to_string(), 6)
            ]
        );
        assert_eq!(texts("---\n---\n"), []);
    }

    #[test]
    fn refuses_content_after_a_separator() {
        let (chunks, bad) = yaml_chunks("a: 1\n--- {b: 2}\n", 1);
        assert!(chunks.is_empty());
        assert_eq!(
            bad,
            Some(BadSeparator {
                rest: "{b: 2}".into(),
                line: 2
            })
        );
        assert!(yaml_chunks("----\n", 1).1.is_some());
    }

    #[test]
    fn json_is_sniffed_from_the_first_brace() {
        assert!(sniffs_json("  \n {\"a\": 1}"));
        assert!(!sniffs_json("[1]"));
        assert!(!sniffs_json("# c\n{}"));
    }
}
