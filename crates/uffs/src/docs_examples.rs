//! Keeps the command examples of README.md and docs/*.md honest: every line of a fenced code block that starts
//! with `uffs `, `$ uffs ` or `cargo run --release -- ` must parse with the real argument parser ([`Cli`]).
//! Fenced blocks marked `text` hold output or diagrams and are not checked.
//!
//! A line is split into words as a POSIX shell would (single and double quotes, backslash escapes, a line
//! ending in `\` continued on the next). A `#` that starts a word ends the line (a comment). The line is cut
//! into commands at `|`, `||`, `&&`, `;` and `&` outside quotes, and a redirection (`> FILE`, `2>&1`, `< FILE`)
//! is left out; each command whose first word is `uffs` is parsed. A parse that succeeds is still refused when
//! it took a mistyped command for a query (`uffs volume list` searches for "volume list"), or when its query
//! does not parse (`uffs 'size:>10xb'`).

use clap::error::ErrorKind;

use super::{edit_distance, Cli};

/// The words of each command on a shell line (see the module's documentation).
fn shell_commands(line: &str) -> Result<Vec<Vec<String>>, String> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    // The next word is a redirection's target, to be left out.
    let mut skip_next = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let end_word =
        |word: &mut Option<String>, skip_next: &mut bool, cmds: &mut Vec<Vec<String>>| {
            if let Some(w) = word.take() {
                if *skip_next {
                    *skip_next = false;
                } else if let Some(last) = cmds.last_mut() {
                    last.push(w);
                }
            }
        };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                end_word(&mut word, &mut skip_next, &mut commands);
                i += 1;
            }
            '#' if word.is_none() => break,
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated single quote".into()),
                        Some('\'') => break,
                        Some(&ch) => w.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated double quote".into()),
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            w.push(chars[i + 1]);
                            i += 1;
                        }
                        Some(&ch) => w.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    word.get_or_insert_with(String::new).push(next);
                }
                i += 2;
            }
            '|' | '&' | ';' => {
                end_word(&mut word, &mut skip_next, &mut commands);
                while matches!(chars.get(i), Some('|' | '&' | ';')) {
                    i += 1;
                }
                commands.push(Vec::new());
            }
            '>' | '<' => {
                // A file descriptor number before it (`2>`) belongs to the redirection.
                if word
                    .as_deref()
                    .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
                {
                    word = None;
                }
                end_word(&mut word, &mut skip_next, &mut commands);
                i += 1;
                if matches!(chars.get(i), Some('>')) {
                    i += 1;
                }
                if matches!(chars.get(i), Some('&')) {
                    // `2>&1`: the target is a descriptor, the next word.
                    i += 1;
                }
                skip_next = true;
            }
            _ => {
                word.get_or_insert_with(String::new).push(c);
                i += 1;
            }
        }
    }
    end_word(&mut word, &mut skip_next, &mut commands);
    commands.retain(|c| !c.is_empty());
    Ok(commands)
}

/// The command examples of a Markdown text: (line number, the line as a `uffs` command), from fenced code
/// blocks other than `text` ones, with continued lines joined.
fn examples(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Inside a fenced block, and whether its lines are checked: not in a `text` block (output, diagrams).
    let (mut in_block, mut checked) = (false, false);
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```").or_else(|| t.strip_prefix("~~~")) {
            in_block = !in_block;
            checked = in_block && info.trim() != "text";
            continue;
        }
        if !checked {
            continue;
        }
        let t = t.strip_prefix("$ ").unwrap_or(t);
        let mut command = if let Some(rest) = t.strip_prefix("cargo run --release -- ") {
            format!("uffs {rest}")
        } else if t.starts_with("uffs ") {
            t.to_string()
        } else {
            continue;
        };
        while command.ends_with('\\') {
            command.pop();
            match lines.next() {
                Some((_, next)) => command.push_str(next),
                None => break,
            }
        }
        out.push((n + 1, command));
    }
    out
}

/// A command name one edit away from `word` (`volume`, `deamon`): a query word that is surely a mistyped
/// command. (`uffs report ext:pdf`, two edits from `export`, is a search; the binary itself hints at both when
/// a query finds nothing.)
fn near_command(word: &str) -> Option<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .find(|name| edit_distance(&word.to_ascii_lowercase(), name) == 1)
}

/// Why `args` (a command starting with `uffs`) is not a valid uffs command line, if it is not: the argument
/// parser refuses it, its first query word is a mistyped command, or its query does not parse.
fn refusal(args: &[String]) -> Option<String> {
    match crate::parse_from(args) {
        Ok(cli) if cli.command.is_some() => None,
        Ok(cli) => {
            if let Some(meant) = cli.search.query.first().and_then(|w| near_command(w)) {
                return Some(format!(
                    "`{}` is parsed as a query word; did you mean `uffs {meant}`?",
                    cli.search.query[0]
                ));
            }
            uffs_search::compile(&cli.search.request(), 0)
                .err()
                .map(|e| e.to_string())
        }
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => None,
        Err(e) => Some(e.to_string().trim_end().to_string()),
    }
}

/// Every problem with the command examples of `text` (from file `name`): one line each, with where it is.
fn check(name: &str, text: &str) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (line, example) in examples(text) {
        match shell_commands(&example) {
            Err(e) => problems.push(format!("{name}:{line}: `{example}`: {e}")),
            Ok(commands) => {
                for args in commands.iter().filter(|c| c[0] == "uffs") {
                    checked += 1;
                    if let Some(why) = refusal(args) {
                        problems.push(format!("{name}:{line}: `{example}`:\n{why}"));
                    }
                }
            }
        }
    }
    (checked, problems)
}

#[test]
fn readme_and_docs_examples_parse() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("the docs folder")
        .map(|e| e.expect("a docs entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let (mut checked, mut problems) = (0, Vec::new());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        let (n, p) = check(&name, &text);
        if name == "README.md" {
            assert!(n > 0, "README.md has no command examples to check");
        }
        checked += n;
        problems.extend(p);
    }
    assert!(
        problems.is_empty(),
        "{} of {checked} command examples do not parse:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn a_bad_example_is_caught() {
    let doc = "Text.\n\n```sh\nuffs --source disk.img ext:pdf --sort size   # fine\nuffs index disk.img   # no -o\n\
               uffs volume list\nuffs info disk.img --jsn | head\nuffs report ext:pdf && uffs --index f.uffs 'size:>10xb'\n```\n\n\
               uffs --nonsense outside a block\n\n```text\nuffs --nonsense in output\n```\n";
    let (checked, problems) = check("doc.md", doc);
    assert_eq!(checked, 6);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].starts_with("doc.md:5:"), "{}", problems[0]);
    assert!(problems[0].contains("--output"), "{}", problems[0]);
    assert!(
        problems[1].contains("did you mean `uffs volumes`"),
        "{}",
        problems[1]
    );
    assert!(problems[2].contains("--jsn"), "{}", problems[2]);
    assert!(problems[3].starts_with("doc.md:8:"), "{}", problems[3]);
    assert!(problems[3].contains("unknown size unit"), "{}", problems[3]);
}

#[test]
fn shell_words() {
    let w = |s: &str| shell_commands(s).unwrap();
    assert_eq!(
        w(r#"uffs 'a | b' "c \"d\"" e\ f # note"#),
        [["uffs", "a | b", "c \"d\"", "e f"]]
    );
    assert_eq!(
        w("uffs x -0 | xargs -0 ls && uffs daemon start; uffs y > out 2>&1"),
        [
            vec!["uffs", "x", "-0"],
            vec!["xargs", "-0", "ls"],
            vec!["uffs", "daemon", "start"],
            vec!["uffs", "y"],
        ]
    );
    assert_eq!(
        w("uffs 'dm:thisweek !ext:tmp'"),
        [["uffs", "dm:thisweek !ext:tmp"]]
    );
    assert!(shell_commands("uffs 'open").is_err());
}
