//! `uffs man`: the manual page, generated from the argument parser by `clap_mangen`.
//!
//! clap_mangen writes one page per command, and the main page lists the others as `uffs-index(1)` and so on.
//! uffs installs as one file, so this page holds them all: clap_mangen's title, synopsis, description and
//! options for `uffs` itself, then a COMMANDS section with each command's synopsis, description, options and
//! examples, then the query syntax, sources and examples of `uffs --help`.

use std::io::{self, Write};

use clap::Command;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;

/// The manual page of `cmd` (the whole parser, `Cli::command()`), as roff.
pub(crate) fn page(cmd: Command) -> String {
    let cmd = cmd.disable_help_subcommand(true);
    let man = Man::new(cmd.clone());
    let mut page = roff_preamble();
    for render in [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ] {
        page += &piece(&man, render, true);
    }
    page += &own_text(|r| {
        r.control("SH", ["COMMANDS"]);
    });
    commands(&cmd, "uffs", &mut page);
    if let Some(after) = cmd.get_after_help() {
        page += &own_text(|r| help_text(r, &after.to_string(), true));
    }
    page += &piece(&man, Man::render_version_section, true);
    page
}

/// The section of every subcommand of `cmd` (whose name on the command line is `name`), then theirs.
fn commands(cmd: &Command, name: &str, page: &mut String) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{name} {}", sub.get_name());
        // Built on its own, with the name it is typed with, and without the `-h, --help` every command has.
        let sub = sub
            .clone()
            .bin_name(&name)
            .disable_help_flag(true)
            .disable_help_subcommand(true);
        let man = Man::new(sub.clone());
        *page += &own_text(|r| {
            r.control("SS", [name.as_str()]);
        });
        // The pieces' own headings (SYNOPSIS, OPTIONS) are left out: the command's name heads them all.
        *page += &piece(&man, Man::render_synopsis_section, false);
        *page += &piece(&man, Man::render_description_section, false);
        if sub.get_arguments().next().is_some() {
            *page += &piece(&man, Man::render_options_section, false);
        }
        if let Some(after) = sub.get_after_help() {
            *page += &own_text(|r| help_text(r, &after.to_string(), false));
        }
        commands(&sub, &name, page);
    }
}

/// What every rendering begins with (a string for the apostrophe); the page needs it once.
fn roff_preamble() -> String {
    Roff::new().render()
}

/// One of clap_mangen's pieces of `man`, without the preamble; unless `headings`, its `.SH` headings become
/// paragraph breaks.
fn piece(man: &Man, render: fn(&Man, &mut dyn Write) -> io::Result<()>, headings: bool) -> String {
    let mut out = Vec::new();
    render(man, &mut out).expect("writing to memory does not fail");
    let text = String::from_utf8_lossy(&out);
    let text = text.strip_prefix(&roff_preamble()).unwrap_or(&text);
    text.lines()
        .map(|l| match l.starts_with(".SH ") && !headings {
            true => ".PP\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect()
}

/// Roff written by `write`, without the preamble.
fn own_text(write: impl FnOnce(&mut Roff)) -> String {
    let mut roff = Roff::new();
    write(&mut roff);
    roff.render()
        .strip_prefix(&roff_preamble())
        .unwrap_or_default()
        .to_string()
}

/// An `after_help` text as roff. Its indented lines (examples, tables) keep their lines and spacing; other lines
/// are prose, filled to the page's width. A line such as `EXAMPLES:` or `QUERY SYNTAX (...):` heads what follows:
/// a section of its own when `sections`, else a line in bold.
fn help_text(roff: &mut Roff, text: &str, sections: bool) {
    let mut verbatim = false;
    let mut set_verbatim = |roff: &mut Roff, now: bool| {
        if verbatim != now {
            roff.control(if now { "nf" } else { "fi" }, []);
            verbatim = now;
        }
    };
    roff.control("PP", []);
    for line in text.lines() {
        if line.trim().is_empty() {
            set_verbatim(roff, false);
            roff.control("PP", []);
        } else if line.starts_with(' ') {
            set_verbatim(roff, true);
            roff.text([roman(line)]);
        } else if let Some(heading) = heading(line) {
            set_verbatim(roff, false);
            if sections {
                roff.control("SH", [heading]);
            } else {
                roff.control("PP", []);
                roff.text([bold(heading)]);
                roff.control("br", []);
            }
        } else {
            set_verbatim(roff, false);
            roff.text([roman(line)]);
        }
    }
    set_verbatim(roff, false);
}

/// The heading a help line is, without its colon: upper case up to a colon or an opening bracket.
fn heading(line: &str) -> Option<&str> {
    let heading = line.strip_suffix(':')?;
    let head = heading.split('(').next().unwrap_or_default();
    (!head.trim().is_empty() && head.chars().all(|c| c.is_ascii_uppercase() || c == ' '))
        .then_some(heading)
}
