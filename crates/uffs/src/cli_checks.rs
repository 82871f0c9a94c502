//! Checks of the argument parser as a whole: every option, argument and command says what it is for in `--help`
//! (and so in the man page and the shells' completions, which are generated from the same parser).

use clap::{Arg, Command};

use super::cli_command;

/// Every argument and subcommand under `cmd` (whose name on the command line is `name`) without help text, as
/// `uffs index --partition` or `uffs info <SOURCE>`. clap's own `--help`, `--version` and `help` command have
/// theirs.
fn missing_help(cmd: &Command, name: &str) -> Vec<String> {
    let has_text =
        |s: Option<&clap::builder::StyledStr>| s.is_some_and(|s| !s.to_string().trim().is_empty());
    let mut missing: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| !has_text(a.get_help()) && !has_text(a.get_long_help()))
        .map(|a| format!("{name} {}", arg_name(a)))
        .collect();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let sub_name = format!("{name} {}", sub.get_name());
        if !has_text(sub.get_about()) && !has_text(sub.get_long_about()) {
            missing.push(sub_name.clone());
        }
        missing.extend(missing_help(sub, &sub_name));
    }
    missing
}

/// An argument as `--help` shows it: `--long`, else `-s`, else `<VALUE>`.
fn arg_name(arg: &Arg) -> String {
    if let Some(long) = arg.get_long() {
        format!("--{long}")
    } else if let Some(short) = arg.get_short() {
        format!("-{short}")
    } else {
        let value = arg.get_value_names().and_then(|v| v.first().cloned());
        format!(
            "<{}>",
            value.map_or_else(|| arg.get_id().to_string(), |v| v.to_string())
        )
    }
}

#[test]
fn every_option_and_command_has_help() {
    let mut cmd = cli_command();
    // Built as the user sees it: flattened arguments in place, clap's own help and version added.
    cmd.build();
    let missing = missing_help(&cmd, "uffs");
    assert!(
        missing.is_empty(),
        "{} options, arguments or commands have no help text (a doc comment on the field or variant):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

/// The reading options added to the commands that read sources bring no summary of their own: `uffs --help` and
/// each command's help start with the command's (a doc comment on an options struct had become every one's).
#[test]
fn each_command_keeps_its_own_summary() {
    let mut cmd = cli_command();
    cmd.build();
    let about = |c: &Command| c.get_about().map(|a| a.to_string()).unwrap_or_default();
    assert!(
        about(&cmd).starts_with("Ultra Fast File Search"),
        "{}",
        about(&cmd)
    );
    let abouts: Vec<String> = cmd.get_subcommands().map(about).collect();
    for (sub, text) in cmd.get_subcommands().zip(&abouts) {
        let same = abouts.iter().filter(|a| *a == text).count();
        assert_eq!(
            same,
            1,
            "`uffs {}` shares its summary: {text}",
            sub.get_name()
        );
    }
}

#[test]
fn a_missing_help_is_caught() {
    let mut cmd = Command::new("t")
        .arg(Arg::new("json").long("json").help("Print JSON"))
        .arg(Arg::new("partition").long("partition"))
        .arg(Arg::new("source").value_name("SOURCE"))
        .subcommand(
            Command::new("said")
                .about("Has an about")
                .arg(Arg::new("x").short('x')),
        )
        .subcommand(Command::new("silent"));
    cmd.build();
    assert_eq!(
        missing_help(&cmd, "t"),
        ["t --partition", "t <SOURCE>", "t said -x", "t silent"]
    );
}

/// The options of how a source is read are offered where a source is read, and nowhere else (`uffs sql`
/// translates a query, `uffs daemon stop` stops a process).
#[test]
fn reading_options_are_offered_where_sources_are_read() {
    let mut cmd = cli_command();
    cmd.build();
    let find = |path: &[&str]| -> Command {
        let mut c = cmd.clone();
        for p in path {
            c = c
                .find_subcommand(p)
                .unwrap_or_else(|| panic!("{path:?}"))
                .clone();
        }
        c
    };
    let offers = |c: &Command| c.get_arguments().any(|a| a.get_id() == "shadow_storage");
    assert!(offers(&cmd), "a query reads sources");
    for path in super::READS_SOURCES {
        assert!(offers(&find(path)), "{path:?}");
    }
    for path in [
        &["sql"][..],
        &["completions"],
        &["man"],
        &["daemon", "stop"],
        &["daemon", "start"],
        &["volumes", "list"],
        &["volumes", "remove"],
    ] {
        assert!(!offers(&find(path)), "{path:?}");
    }
}

/// A plain query skips the parser (`plain_query`): it must mean what the parser makes of it, and the commands'
/// names it knows must be the parser's.
#[test]
fn a_plain_query_means_what_the_parser_makes_of_it() {
    let mut names: Vec<String> = cli_command()
        .get_subcommands()
        .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_all_aliases()))
        .map(str::to_string)
        .collect();
    names.push("help".into());
    names.sort();
    let mut known: Vec<String> = super::COMMAND_NAMES.iter().map(|s| s.to_string()).collect();
    known.sort();
    assert_eq!(known, names);

    let argv = |words: &[&str]| -> Vec<std::ffi::OsString> {
        std::iter::once("uffs")
            .chain(words.iter().copied())
            .map(Into::into)
            .collect()
    };
    for words in [
        &["report"][..],
        &["report", "draft"],
        &["ext:pdf size:>1mb", "!temp"],
        &["child:*.jpg", "dm:today"],
        &["deamon", "stop"],
        &["Ünïcödé"],
    ] {
        let fast = super::plain_query(&argv(words)).unwrap_or_else(|| panic!("{words:?}"));
        let parsed = super::parse_from(argv(words)).unwrap();
        assert!(fast.command.is_none() && parsed.command.is_none());
        assert_eq!(fast.search.request(), parsed.search.request(), "{words:?}");
        assert_eq!(fast.search.place(), parsed.search.place(), "{words:?}");
        assert_eq!(
            fast.reading.shadow_storage, parsed.reading.shadow_storage,
            "{words:?}"
        );
        assert_eq!(
            format!("{:?}", fast.reading.walk.options()),
            format!("{:?}", parsed.reading.walk.options()),
            "{words:?}"
        );
    }
    // Left to the parser: flags, commands, nothing at all, an empty word.
    for words in [
        &[][..],
        &["report", "--count"],
        &["-i", "report"],
        &["daemon", "status"],
        &["help"],
        &["report", ""],
        &["--", "-x"],
    ] {
        assert!(super::plain_query(&argv(words)).is_none(), "{words:?}");
    }
}
