//! Go's `strconv.FormatFloat(f, 'g', -1, 64)`, the text upstream's YAML
//! encoder writes for a float: shortest round-trip digits, exponent form
//! when the decimal exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`),
//! otherwise positional (`1500`, `0.0001`).

/// Appends Go's `'g'` shortest formatting of `f` to `out`.
pub(crate) fn push_go_float(f: f64, out: &mut Vec<u8>) {
    if f.is_nan() {
        out.extend_from_slice(b".nan");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { b".inf" } else { b"-.inf" });
        return;
    }
    if f == 0.0 {
        // Upstream reads a JSON `-0` as the integer 0, so both zeros print as 0.
        out.push(b'0');
        return;
    }
    if f < 0.0 {
        out.push(b'-');
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d[.ddd]e<exp>".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = match sci.split_once('e') {
        Some(parts) => parts,
        None => (sci.as_str(), "0"),
    };
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let nd = digits.len() as i32;
    if !(-4..6).contains(&exp) {
        out.push(digits[0]);
        if nd > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(e.to_string().as_bytes());
        return;
    }
    // Positional: the decimal point sits after `exp + 1` digits.
    let dp = exp + 1;
    if dp <= 0 {
        out.extend_from_slice(b"0.");
        for _ in 0..(-dp) {
            out.push(b'0');
        }
        out.extend_from_slice(&digits);
    } else if dp >= nd {
        out.extend_from_slice(&digits);
        for _ in 0..(dp - nd) {
            out.push(b'0');
        }
    } else {
        let (int_part, frac) = digits.split_at(dp as usize);
        out.extend_from_slice(int_part);
        out.push(b'.');
        out.extend_from_slice(frac);
    }
}

#[cfg(test)]
mod tests {
    use super::push_go_float;

    fn g(f: f64) -> String {
        let mut v = Vec::new();
        push_go_float(f, &mut v);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn matches_go_g_format() {
        assert_eq!(g(1.5), "1.5");
        assert_eq!(g(1500.0), "1500");
        assert_eq!(g(123456.5), "123456.5");
        assert_eq!(g(1e6), "1e+06");
        assert_eq!(g(1234567.5), "1.2345675e+06");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1e-05");
        assert_eq!(g(-2.5e-7), "-2.5e-07");
        assert_eq!(g(1e23), "1e+23");
        assert_eq!(g(1e100), "1e+100");
        assert_eq!(g(0.1), "0.1");
        assert_eq!(g(-0.0), "0");
        assert_eq!(g(100000.0), "100000");
    }
}
