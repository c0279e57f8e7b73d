//! Edge cases of the deflate stream (empty, past block and window boundaries, repetitive,
//! incompressible); each at least decodes back (flate2), and where the
//! Butane corpus shows Go's bytes for the situation, the bytes are checked too.

use super::*;
use std::io::Read;

fn inflate(z: &[u8]) -> Vec<u8> {
    let mut back = Vec::new();
    flate2::read::DeflateDecoder::new(z)
        .read_to_end(&mut back)
        .expect("a valid deflate stream");
    back
}

/// A deterministic byte stream (xorshift), incompressible in practice.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn empty_input_is_one_empty_final_fixed_block() {
    // Every stream in the corpus ends with this 10-bit block; with no input it is all.
    assert_eq!(deflate_best(b""), [0x03, 0x00]);
}

#[test]
fn round_trips() {
    let text: Vec<u8> = (0..5000)
        .flat_map(|i| format!("line {i}: the quick brown fox {}\n", i % 17).into_bytes())
        .collect();
    let mut mixed = noise(40_000, 7);
    mixed.extend_from_slice(&text[..50_000]);
    mixed.extend(noise(30_000, 9));
    mixed.extend_from_within(1000..20_000);
    let cases: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"abc".to_vec(),
        b"abcd".to_vec(),
        b"hello hello hello hello\n".to_vec(),
        vec![0; 1],
        vec![7; 70_000],
        vec![b'x'; 300_000],
        (0..200_000u32).map(|i| (i % 251) as u8).collect(),
        text.clone(),
        noise(100, 1),
        noise(70_000, 2),
        noise(200_000, 3),
        mixed,
    ];
    for data in &cases {
        let z = deflate_best(data);
        assert_eq!(inflate(&z), *data, "{} bytes", data.len());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gzip_best(data)[..])
            .read_to_end(&mut back)
            .expect("a valid gzip member");
        assert_eq!(back, *data);
    }
}

#[test]
fn repetitive_input_compresses_well() {
    let z = deflate_best(&[b'x'; 300_000]);
    assert!(z.len() < 1000, "{}", z.len());
}

#[test]
fn random_input_is_stored() {
    // 200 KiB of noise: the matcher's blocks cross the window's slides, and every block it
    // can still see the input of is cheaper stored.
    let data = noise(200_000, 3);
    let z = deflate_best(&data);
    assert!(z.len() < data.len() + data.len() / 100, "{}", z.len());
    assert_eq!(inflate(&z), data);
    // A small noisy input is one stored block and the final empty fixed one.
    let small = noise(100, 1);
    let z = deflate_best(&small);
    assert_eq!(z[0], 0);
    assert_eq!(&z[1..5], &[100, 0, !100u8, 0xff]);
    assert_eq!(&z[5..105], &small[..]);
    assert_eq!(&z[105..], &[3, 0]);
}
