//! systemd unit file lexing as upstream's unit deserializer does it, including its buffered
//! reader's line-length check, to reproduce which contents it rejects and with what message.

/// One `Name=Value` option and its section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2UnitOption {
    /// Section name.
    pub section: String,
    /// Option name.
    pub name: String,
    /// Option value.
    pub value: String,
}

const LINE_MAX: usize = 2048;
const BUF_SIZE: usize = 4096;

/// A model of Go's `bufio.Reader` over an in-memory string: which bytes are buffered.
struct Buf<'a> {
    data: &'a [u8],
    start: usize,
    end: usize,
    eof: bool,
}

enum Read<T> {
    Ok(T),
    Eof(T),
}

impl<'a> Buf<'a> {
    fn buffered(&self) -> usize {
        self.end - self.start
    }
    fn fill(&mut self) {
        if self.end >= self.data.len() {
            self.eof = true;
        } else {
            self.end = self.data.len().min(self.start + BUF_SIZE);
        }
    }
    fn take_eof(&mut self) -> bool {
        std::mem::replace(&mut self.eof, false)
    }
    fn full_rune(b: &[u8]) -> bool {
        match b.first() {
            None => false,
            Some(c) if *c < 0x80 => true,
            Some(c) => {
                let need = if *c >= 0xF0 {
                    4
                } else if *c >= 0xE0 {
                    3
                } else {
                    2
                };
                b.len() >= need
            }
        }
    }
    /// Reads one rune; `None` at end of input.
    fn read_rune(&mut self) -> Option<(char, usize)> {
        while self.buffered() < 4
            && !Self::full_rune(&self.data[self.start..self.end])
            && !self.eof
            && self.buffered() < BUF_SIZE
        {
            self.fill();
        }
        if self.start == self.end {
            self.take_eof();
            return None;
        }
        let rest = &self.data[self.start..self.end];
        let (c, size) = match std::str::from_utf8(&rest[..rest.len().min(4)]) {
            Ok(s) => s.chars().next().map(|c| (c, c.len_utf8())),
            Err(e) if e.valid_up_to() > 0 => std::str::from_utf8(&rest[..e.valid_up_to()])
                .ok()
                .and_then(|s| s.chars().next())
                .map(|c| (c, c.len_utf8())),
            Err(_) => None,
        }
        .unwrap_or(('\u{FFFD}', 1));
        self.start += size;
        Some((c, size))
    }
    fn unread(&mut self, size: usize) {
        self.start -= size;
    }
    /// Reads through `delim`, or to the end of input.
    fn read_until(&mut self, delim: u8) -> Read<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let region = &self.data[self.start..self.end];
            if let Some(i) = region.iter().position(|b| *b == delim) {
                out.extend_from_slice(&region[..=i]);
                self.start += i + 1;
                return Read::Ok(out);
            }
            if self.take_eof() {
                out.extend_from_slice(region);
                self.start = self.end;
                return Read::Eof(out);
            }
            if self.buffered() >= BUF_SIZE {
                out.extend_from_slice(region);
                self.start = self.end;
            }
            self.fill();
        }
    }
    fn peek_has_newline(&self) -> bool {
        self.data[self.start..self.start + LINE_MAX]
            .iter()
            .any(|b| *b == b'\r' || *b == b'\n')
    }
}

enum Step {
    NextSection,
    SectionName,
    SectionSuffix(String),
    SectionOrOption(String),
    IgnoreLine(Box<Step>),
    OptionName(String),
    OptionValue(String, String, Vec<u8>),
}

fn is_comment(c: char) -> bool {
    c == '#' || c == ';'
}

/// Lexes unit contents; `Err` holds the deserializer's message (without upstream's
/// "invalid unit content: " prefix).
pub fn deserialize(contents: &str) -> Result<Vec<V2UnitOption>, String> {
    let mut b = Buf {
        data: contents.as_bytes(),
        start: 0,
        end: 0,
        eof: false,
    };
    let mut opts = Vec::new();
    let mut step = Step::NextSection;
    loop {
        if b.buffered() >= LINE_MAX && !b.peek_has_newline() {
            return Err(format!("line too long (max {LINE_MAX} bytes)"));
        }
        step = match step {
            Step::NextSection => match b.read_rune() {
                None => return Ok(opts),
                Some(('[', _)) => Step::SectionName,
                Some((c, _)) if is_comment(c) => Step::IgnoreLine(Box::new(Step::NextSection)),
                Some(_) => Step::NextSection,
            },
            Step::SectionName => match b.read_until(b']') {
                Read::Ok(sec) => {
                    Step::SectionSuffix(String::from_utf8_lossy(&sec[..sec.len() - 1]).into())
                }
                Read::Eof(_) => return Err("unable to find end of section".into()),
            },
            Step::SectionSuffix(section) => {
                let (line, _) = to_eol(&mut b);
                let garbage = trim_space(&line);
                if !garbage.is_empty() {
                    let bytes: Vec<String> = garbage.iter().map(|x| x.to_string()).collect();
                    return Err(format!(
                        "found garbage after section name : [{}]",
                        bytes.join(" ")
                    ));
                }
                Step::SectionOrOption(section)
            }
            Step::IgnoreLine(next) => {
                loop {
                    let (line, _) = to_eol(&mut b);
                    let mut l = line.as_slice();
                    if let Some(s) = l.strip_suffix(b" ") {
                        l = s;
                    }
                    if !l.ends_with(b"\\") {
                        break;
                    }
                }
                *next
            }
            Step::SectionOrOption(section) => match b.read_rune() {
                None => return Ok(opts),
                Some((c, _)) if c.is_whitespace() => Step::SectionOrOption(section),
                Some(('[', _)) => Step::SectionName,
                Some((c, _)) if is_comment(c) => {
                    Step::IgnoreLine(Box::new(Step::SectionOrOption(section)))
                }
                Some((_, size)) => {
                    b.unread(size);
                    Step::OptionName(section)
                }
            },
            Step::OptionName(section) => {
                let mut partial = String::new();
                loop {
                    match b.read_rune() {
                        None => return Err("EOF".into()),
                        Some(('\n', _)) | Some(('\r', _)) => {
                            return Err(
                                "unexpected newline encountered while parsing option name".into()
                            )
                        }
                        Some(('=', _)) => break,
                        Some((c, _)) => partial.push(c),
                    }
                }
                Step::OptionValue(section, partial.trim().to_string(), Vec::new())
            }
            Step::OptionValue(section, name, mut partial) => {
                let (line, eof) = to_eol(&mut b);
                let mut cont = false;
                if !trim_space(&line).is_empty() {
                    partial.extend_from_slice(&line);
                    if line.last() == Some(&b'\\') {
                        if !eof {
                            partial.push(b'\n');
                        }
                        cont = true;
                    }
                }
                if cont {
                    Step::OptionValue(section, name, partial)
                } else {
                    let val = String::from_utf8_lossy(&partial).into_owned();
                    let value = if val.ends_with('\n') {
                        format!("{}\n", val.trim())
                    } else {
                        val.trim().to_string()
                    };
                    opts.push(V2UnitOption {
                        section: section.clone(),
                        name,
                        value,
                    });
                    Step::SectionOrOption(section)
                }
            }
        };
    }
}

fn to_eol(b: &mut Buf<'_>) -> (Vec<u8>, bool) {
    let (mut line, eof) = match b.read_until(b'\n') {
        Read::Ok(l) => (l, false),
        Read::Eof(l) => (l, true),
    };
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    (line, eof)
}

fn trim_space(b: &[u8]) -> &[u8] {
    let s = String::from_utf8_lossy(b);
    let t = s.trim();
    if t.is_empty() {
        return &[];
    }
    // Locate the trimmed region in the original bytes (leading/trailing ASCII or Unicode space).
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if s.len() == b.len() {
        &b[lead..b.len() - trail]
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_options_and_sections() {
        let o = deserialize("[Unit]\nA=1\n[Install]\nWantedBy=x\n").unwrap_or_default();
        assert_eq!(o.len(), 2);
        assert_eq!(o[1].section, "Install");
        assert_eq!(o[1].value, "x");
    }

    #[test]
    fn reports_upstream_errors() {
        assert_eq!(
            deserialize("[Unit"),
            Err("unable to find end of section".into())
        );
        assert_eq!(deserialize("[Unit]\nNoEquals"), Err("EOF".into()));
        assert_eq!(
            deserialize("[Unit]\nBad\nX=1"),
            Err("unexpected newline encountered while parsing option name".into())
        );
        assert_eq!(
            deserialize("[Unit] x"),
            Err("found garbage after section name : [120]".into())
        );
        let long = format!("[Unit]\nA={}\n", "x".repeat(3000));
        assert_eq!(
            deserialize(&long),
            Err("line too long (max 2048 bytes)".into())
        );
    }
}
