//! The API's promises that need no `rg`: errors that say what is wrong, the `content:` term's mapping, and a
//! `Grep` shared across threads.

use uffs_grep::{Binary, Error, Grep, Options, Output};

#[test]
fn a_bad_pattern_is_a_clear_error() {
    let e = Grep::new(&Options::new("a(b")).unwrap_err();
    assert!(matches!(e, Error::Pattern(_)), "{e:?}");
    assert!(e.to_string().contains("unclosed group"), "{e}");
    let e = Grep::new(&Options::new("a\nb")).unwrap_err();
    assert!(e.to_string().contains("not allowed"), "{e}");
    assert!(matches!(
        Grep::new(&Options::default()),
        Err(Error::NoPattern)
    ));
    let e = Grep::new(&Options {
        encoding: Some("klingon".into()),
        ..Options::new("x")
    })
    .unwrap_err();
    assert_eq!(e.to_string(), "unknown encoding \"klingon\"");
    // A pattern that is no regex is fine as a fixed string.
    assert!(Grep::new(&Options {
        fixed_strings: true,
        ..Options::new("a(b")
    })
    .is_ok());
}

#[test]
fn content_maps_its_modifiers() {
    let o = Options::content("Time.out", false, false, false);
    assert!(o.fixed_strings && o.ignore_case && !o.word && o.binary == Binary::Search);
    let is_match = |o: &Options, bytes: &[u8]| {
        Grep::new(o)
            .unwrap()
            .worker()
            .is_match_slice(bytes)
            .unwrap()
    };
    assert!(is_match(&o, b"x\na TIME.OUT here\n"));
    assert!(!is_match(&o, b"x\na TIMEXOUT here\n"));
    let case = Options::content("Time", true, false, false);
    assert!(!is_match(&case, b"time\n") && is_match(&case, b"Time\n"));
    let word = Options::content("time", false, true, false);
    assert!(!is_match(&word, b"timeout\n") && is_match(&word, b"a time.\n"));
    let regex = Options::content("ti.e", false, false, true);
    assert!(is_match(&regex, b"TIDE\n"));
    // UTF-16 with a BOM is decoded; binary data does not hide a match.
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("a\r\ntime\r\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert!(is_match(
        &Options::content("TIME", false, false, false),
        &utf16
    ));
    assert!(is_match(
        &Options::content("time", false, false, false),
        b"\0\x01\x02time\0"
    ));
}

#[test]
fn one_grep_serves_many_threads() {
    let grep = Grep::new(&Options {
        output: Output::Count,
        ..Options::new("b")
    })
    .unwrap();
    let outputs: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let grep = grep.clone();
                s.spawn(move || {
                    let mut worker = grep.worker();
                    let mut out = Vec::new();
                    let text = "a\nb\n".repeat(i + 1);
                    let found = worker
                        .search_slice(&format!("f{i}"), text.as_bytes(), &mut out)
                        .unwrap();
                    assert_eq!((found.matched, found.lines), (true, i as u64 + 1));
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outputs, [&b"f0:1\n"[..], b"f1:2\n", b"f2:3\n", b"f3:4\n"]);
}

#[test]
fn output_is_appended() {
    let grep = Grep::new(&Options::new("b")).unwrap();
    let mut out = b"before\n".to_vec();
    grep.worker()
        .search_slice("p", b"a\nb\n", &mut out)
        .unwrap();
    assert_eq!(out, b"before\np:2:b\n");
}
