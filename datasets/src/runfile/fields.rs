//! The columns of a TREC line and its numbers, read byte by byte: a run of a million queries is
//! some 10^8 lines, and at that size the generic `split_ascii_whitespace` and `str::parse::<f64>`
//! are most of `hopbench eval`'s time. Each function here gives exactly what its generic
//! counterpart gives (tested against it), only faster on the shapes runs are written in.

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const ADD: u64 = 0x5f5f_5f5f_5f5f_5f5f;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The bytes of `b` at or below 0x20 from `i` on, eight at a time: each set high bit of the
/// result marks one (every ASCII white space byte is down there, so the candidates for a
/// separator are these; a word past the end is padded with a byte above 0x20).
fn low_bytes(b: &[u8], i: usize) -> u64 {
    let word = match b.get(i..i + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("eight bytes")),
        None => {
            let mut pad = [b'x'; 8];
            pad[..b.len() - i].copy_from_slice(&b[i..]);
            u64::from_le_bytes(pad)
        }
    };
    // (byte & 0x7f) + 0x5f stays below 0x100 (no carry between bytes) and reaches 0x80
    // exactly when byte & 0x7f >= 0x21
    !(((word & LOW7) + ADD) | word) & HIGH
}

/// The lines of `text` split into columns in one pass: for each line (`'\n'`-terminated; a last
/// line without one counts when it holds any byte, as `str::split_terminator` splits),
/// `each(index, columns, count)` gets the line's 0-based index, its first `N` columns (split at
/// runs of ASCII white space exactly as [`str::split_ascii_whitespace`] splits; `""` past the
/// last) and how many columns it has in all. Returns how many lines there were.
///
/// One pass, eight bytes at a time, finds both the line ends and the column separators: for a
/// run of 10^8 lines a line-then-columns pair of passes is most of the reading time. The other
/// control bytes at or below 0x20 belong to their column, as they do for
/// `split_ascii_whitespace`.
pub(crate) fn for_each_row<'a, const N: usize, E>(
    text: &'a str,
    mut each: impl FnMut(usize, &[&'a str; N], usize) -> Result<(), E>,
) -> Result<usize, E> {
    let b = text.as_bytes();
    let mut out = [""; N];
    let mut count = 0;
    let mut start = 0;
    let mut line = 0;
    let mut i = 0;
    while i < b.len() {
        let mut low = low_bytes(b, i);
        while low != 0 {
            let p = i + (low.trailing_zeros() / 8) as usize;
            low &= low - 1;
            let c = b[p];
            if !c.is_ascii_whitespace() {
                continue;
            }
            if p > start {
                if let Some(slot) = out.get_mut(count) {
                    // both ends sit next to ASCII bytes (or the text's ends): char boundaries
                    *slot = &text[start..p];
                }
                count += 1;
            }
            start = p + 1;
            if c == b'\n' {
                each(line, &out, count)?;
                line += 1;
                count = 0;
                out = [""; N];
            }
        }
        i += 8;
    }
    let last_line_start = b.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    if last_line_start < b.len() {
        if start < b.len() {
            if let Some(slot) = out.get_mut(count) {
                *slot = &text[start..];
            }
            count += 1;
        }
        each(line, &out, count)?;
        line += 1;
    }
    Ok(line)
}

/// The powers of ten the fast path divides by (each exact in an `f64`).
const EXACT_POWERS: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// `s` as an `f64`, exactly as `s.parse::<f64>()` reads it.
///
/// Plain decimals (`-12.375`, `0.5`, `7`) of at most 15 digits take a fast path: the digits
/// are an integer below 10^15 < 2^53 and the divisor a power of ten of at most 10^15, both exact
/// in an `f64`, so their IEEE quotient is the correctly rounded value, the one `parse` returns
/// (Clinger's fast path). Anything else (exponents, `inf`, longer numbers) goes to `parse`.
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (negative, body) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if body.is_empty() || body.len() > 15 {
        return s.parse().ok();
    }
    let mut mantissa: u64 = 0;
    let mut dot: Option<usize> = None;
    for (k, &c) in body.iter().enumerate() {
        let digit = c.wrapping_sub(b'0');
        if digit <= 9 {
            mantissa = mantissa * 10 + u64::from(digit);
        } else if c == b'.' && dot.is_none() {
            dot = Some(k);
        } else {
            return s.parse().ok();
        }
    }
    let scale = match dot {
        // "." alone has no digit
        Some(_) if body.len() == 1 => return None,
        Some(k) => body.len() - k - 1,
        None => 0,
    };
    let value = mantissa as f64 / EXACT_POWERS[scale];
    Some(if negative { -value } else { value })
}

/// `s` as an `i64`, exactly as `s.parse::<i64>()` reads it (optional sign, ASCII digits, no
/// overflow), without its generic error path.
pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 18 {
        return s.parse().ok();
    }
    let (negative, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        // at most 18 digits: no overflow
        v = v * 10 + i64::from(c - b'0');
    }
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (the tests need no `rand`).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.next() as usize % from.len()]
        }
    }

    fn same_f64(s: &str) {
        let fast = parse_f64(s);
        let slow = s.parse::<f64>().ok();
        assert_eq!(
            fast.map(f64::to_bits),
            slow.map(f64::to_bits),
            "`{s}`: fast {fast:?}, parse {slow:?}"
        );
    }

    #[test]
    fn floats_equal_the_standard_parse_bit_for_bit() {
        for s in [
            "0",
            "-0",
            "+0",
            "0.0",
            "-0.0",
            ".5",
            "5.",
            ".",
            "-",
            "+",
            "",
            "1e3",
            "1E-3",
            "inf",
            "-inf",
            "NaN",
            "nan",
            "infinity",
            "1.2.3",
            "1..2",
            "--1",
            "1-",
            " 1",
            "1 ",
            "0.1",
            "0.2",
            "0.3",
            "100.466679",
            "123456789012345",
            "1234567890123456",
            "0.000000000000000000001",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "9007199254740993",
            "999999999999999.9",
            "0000000000000000000000001.5",
            "1.0000000000000000000000",
            "18446744073709551616",
            "4.9e-324",
            "1.7976931348623157e308",
            "0x10",
            "1_000",
            "١",
        ] {
            same_f64(s);
        }
        let parts = ["", "-", "+"];
        let digits = [
            "0",
            "00",
            "1",
            "9",
            "12",
            "305",
            "7777777",
            "123456789",
            "000120",
        ];
        let mut g = Lcg(7);
        for _ in 0..200_000 {
            let mut s = String::from(g.pick(&parts));
            for _ in 0..(g.next() % 3) {
                s.push_str(g.pick(&digits));
            }
            if !g.next().is_multiple_of(4) {
                s.push('.');
                for _ in 0..(g.next() % 4) {
                    s.push_str(g.pick(&digits));
                }
            }
            same_f64(&s);
            // and a random finite value printed as runs print it
            let v = f64::from_bits(g.next() << 31 | g.next());
            if v.is_finite() {
                same_f64(&format!("{v}"));
                same_f64(&format!("{v:.6}"));
                same_f64(&format!("{:.9}", v / 1e300));
            }
        }
    }

    #[test]
    fn integers_equal_the_standard_parse() {
        for s in [
            "0",
            "-0",
            "+0",
            "1",
            "-1",
            "+",
            "-",
            "",
            "12a",
            "a",
            "007",
            "1.0",
            " 1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "999999999999999999",
            "1000000000000000000",
            "-999999999999999999",
            "+999999999999999999",
        ] {
            assert_eq!(parse_i64(s), s.parse::<i64>().ok(), "`{s}`");
        }
    }

    /// The slow reference: lines by `split_terminator`, columns by `split_ascii_whitespace`.
    fn rows_slowly(text: &str) -> Vec<Vec<&str>> {
        text.split_terminator('\n')
            .map(|l| l.split_ascii_whitespace().collect())
            .collect()
    }

    fn rows_fast<const N: usize>(text: &str) -> Vec<(Vec<&str>, usize)> {
        let mut got = Vec::new();
        let n = for_each_row::<N, ()>(text, |i, cols, count| {
            assert_eq!(i, got.len());
            got.push((cols.to_vec(), count));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, got.len());
        got
    }

    fn same_rows(text: &str) {
        let want = rows_slowly(text);
        let got = rows_fast::<4>(text);
        assert_eq!(got.len(), want.len(), "{text:?}");
        for ((cols, count), w) in got.iter().zip(&want) {
            assert_eq!(*count, w.len(), "{text:?}");
            for (k, c) in cols.iter().enumerate() {
                assert_eq!(*c, w.get(k).copied().unwrap_or(""), "{text:?}");
            }
        }
    }

    #[test]
    fn rows_split_as_split_terminator_then_split_ascii_whitespace() {
        for text in [
            "",
            "\n",
            "\n\n",
            " ",
            "a",
            "a\n",
            "a\nb",
            " a \n\n b",
            "q Q0 d 1 2.5 tag\n",
            "q\tQ0\td\t1\t2.5\ttag\r\n",
            "q  Q0 d 1 2.5",
            "a b c d e f g h\ni j",
            "\x0ba\x0b b\x0cc\n\x00 \x1f",
            "é ü\u{a0}x y\n  ",
            "12345678\n12345678",
            "1234567 \n",
            "       \n       x",
        ] {
            same_rows(text);
        }
        let pieces = [
            "a",
            "bc",
            "défg",
            " ",
            "  ",
            "\t",
            "\r",
            "\n",
            "\x0b",
            "\x0c",
            "\x00",
            "0123456789",
        ];
        let mut g = Lcg(11);
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(g.next() % 40) {
                text.push_str(g.pick(&pieces));
            }
            same_rows(&text);
        }
    }

    #[test]
    fn an_error_stops_the_rows_at_its_line() {
        let mut seen = 0;
        let r = for_each_row::<2, usize>("a\nb\nc\n", |i, _, _| {
            seen += 1;
            if i == 1 {
                Err(i)
            } else {
                Ok(())
            }
        });
        assert_eq!((r, seen), (Err(1), 2));
    }
}
