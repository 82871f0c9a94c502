//! `*` and `?` wildcards over a whole name (or path), on bytes; `?` matches one character (one UTF-8 sequence).

/// Whether `pat` matches all of `s`. Iterative with one backtrack point: linear for patterns without `*`,
/// and at most quadratic otherwise.
pub fn matches(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() && pat[p] == b'*' {
            star = Some((p, i));
            p += 1;
        } else if p < pat.len() && pat[p] == b'?' {
            p += 1;
            i += utf8_len(s[i]);
        } else if p < pat.len() && pat[p] == s[i] {
            p += 1;
            i += 1;
        } else if let Some((sp, si)) = star {
            p = sp + 1;
            let next = si + utf8_len(s[si]);
            star = Some((sp, next));
            i = next;
        } else {
            return false;
        }
    }
    pat[p.min(pat.len())..].iter().all(|&c| c == b'*')
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards() {
        let m = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes());
        assert!(m("*.jpg", "photo.jpg"));
        assert!(!m("*.jpg", "photo.jpg.txt"));
        assert!(m("img_????.jpg", "img_0001.jpg"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("?.txt", "é.txt"));
        assert!(m("*", ""));
        assert!(!m("?", ""));
    }
}
