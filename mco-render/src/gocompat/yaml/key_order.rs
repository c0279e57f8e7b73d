//! Mapping-key order used by upstream's YAML encoder (gopkg.in/yaml.v2).
//!
//! Keys are not compared bytewise. The encoder walks both keys rune by rune
//! and, at the first difference:
//! - two letters compare by code point;
//! - a letter sorts after anything that is not a letter;
//! - otherwise the digit runs starting there are compared as numbers (a
//!   shorter run wins a tie, then the code point decides). A run that starts
//!   with `0` right after a non-zero digit of the common prefix counts as the
//!   tail of that longer number.
//!
//! Only string keys occur in JSON, so only the string branch is modelled.

use std::cmp::Ordering;

/// Letter test used by the order. Upstream uses the Unicode `L` categories;
/// `char::is_alphabetic` agrees on ASCII and on all letters used in
/// MachineConfig specs (it also accepts a few non-letter alphabetic marks).
fn is_letter(c: char) -> bool {
    c.is_alphabetic()
}

/// Decimal-digit test (Unicode `Nd` upstream). ASCII digits are exact; other
/// numeric characters are treated as digits, a close approximation.
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// Numeric value upstream gives a digit rune: its code point minus `'0'`.
fn digit_value(c: char) -> i64 {
    i64::from(u32::from(c)) - i64::from(u32::from('0'))
}

/// Whether key `a` sorts strictly before key `b`.
pub(crate) fn key_less(a: &[char], b: &[char]) -> bool {
    let common = a.len().min(b.len());
    for i in 0..common {
        let (ca, cb) = (a[i], b[i]);
        if ca == cb {
            continue;
        }
        let (la, lb) = (is_letter(ca), is_letter(cb));
        if la && lb {
            return ca < cb;
        }
        if la || lb {
            return lb;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ca == '0' || cb == '0' {
            // Look back through the digits of the common prefix: a non-zero
            // one means both runs continue a number that is not zero.
            for &c in a[..i].iter().rev() {
                if !is_digit(c) {
                    break;
                }
                if c != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < a.len() && is_digit(a[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_value(a[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < b.len() && is_digit(b[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_value(b[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ca < cb;
    }
    a.len() < b.len()
}

fn ordering(a: &[char], b: &[char]) -> Ordering {
    if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// Sorts `items` by their keys in upstream's order.
///
/// A merge sort of our own: it never panics, even if the order is not
/// transitive for some exotic keys (upstream's result is then unspecified
/// anyway), and it runs in O(n log n) comparisons.
pub(crate) fn sort_by_key_order<T>(items: &mut Vec<(Vec<char>, T)>) {
    let n = items.len();
    if n < 2 {
        return;
    }
    // Sort a permutation, then apply it.
    let mut idx: Vec<usize> = (0..n).collect();
    let mut tmp: Vec<usize> = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r, mut o) = (start, mid, start);
            while l < mid && r < end {
                if ordering(&items[idx[r]].0, &items[idx[l]].0) == Ordering::Less {
                    tmp[o] = idx[r];
                    r += 1;
                } else {
                    tmp[o] = idx[l];
                    l += 1;
                }
                o += 1;
            }
            tmp[o..o + (mid - l)].copy_from_slice(&idx[l..mid]);
            o += mid - l;
            tmp[o..o + (end - r)].copy_from_slice(&idx[r..end]);
            start = end;
        }
        std::mem::swap(&mut idx, &mut tmp);
        width *= 2;
    }
    let mut slots: Vec<Option<(Vec<char>, T)>> = items.drain(..).map(Some).collect();
    for i in idx {
        if let Some(item) = slots[i].take() {
            items.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn less(a: &str, b: &str) -> bool {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        key_less(&a, &b)
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut items: Vec<(Vec<char>, String)> = keys
            .iter()
            .map(|k| (k.chars().collect(), (*k).to_string()))
            .collect();
        sort_by_key_order(&mut items);
        items.into_iter().map(|(_, k)| k).collect()
    }

    #[test]
    fn digit_runs_compare_numerically() {
        assert!(less("a2", "a10"));
        assert!(!less("a10", "a2"));
        assert_eq!(
            sorted(&["k10", "k9", "k1", "k100"]),
            ["k1", "k9", "k10", "k100"]
        );
    }

    #[test]
    fn letters_sort_after_non_letters() {
        // Bytewise '_' (0x5F) is after 'A'..'Z' but before 'a'..'z'; here any
        // non-letter comes first.
        assert_eq!(sorted(&["ab", "a_", "aB", "a1"]), ["a_", "a1", "aB", "ab"]);
        assert!(less("a-b", "ab"));
    }

    #[test]
    fn prefix_sorts_first() {
        assert_eq!(sorted(&["name", "na", "n"]), ["n", "na", "name"]);
    }

    #[test]
    fn leading_zeros() {
        // Same numeric value: the shorter run wins.
        assert!(less("a1", "a01"));
        assert!(less("a01", "a2"));
        // "10" vs "11" differ in the middle of a run.
        assert!(less("10", "11"));
        assert!(less("x9", "x10"));
    }

    #[test]
    fn ignition_field_names() {
        assert_eq!(
            sorted(&[
                "osImageURL",
                "baseOSExtensionsContainerImage",
                "config",
                "kernelArguments",
                "extensions",
                "fips",
                "kernelType"
            ]),
            [
                "baseOSExtensionsContainerImage",
                "config",
                "extensions",
                "fips",
                "kernelArguments",
                "kernelType",
                "osImageURL"
            ]
        );
        assert_eq!(
            sorted(&["httpHeaders", "http_proxy", "httpsProxy"]),
            ["http_proxy", "httpHeaders", "httpsProxy"]
        );
    }
}
