//! The terminal's width, for fitting a table to the window, and shortening a path in its middle.

/// The width in columns of the terminal stdout writes to: `COLUMNS` when set to a number (an override), else
/// the window's size (TIOCGWINSZ on Unix, the console's window on Windows). `None` when stdout is not a
/// terminal (a pipe or a file is never fitted) or the size is unknown.
pub fn stdout_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return Some(n);
    }
    window_width().filter(|&n| n > 0)
}

#[cfg(unix)]
fn window_width() -> Option<usize> {
    // SAFETY: TIOCGWINSZ fills a winsize, which is plain data; a failed call leaves it zeroed.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 {
            Some(usize::from(ws.ws_col))
        } else {
            None
        }
    }
}

#[cfg(windows)]
fn window_width() -> Option<usize> {
    use windows_sys::Win32::System::Console::{
        GetConsoleScreenBufferInfo, GetStdHandle, CONSOLE_SCREEN_BUFFER_INFO, STD_OUTPUT_HANDLE,
    };
    // SAFETY: the handle is the process's own stdout; the info is plain data the call fills.
    unsafe {
        let h = GetStdHandle(STD_OUTPUT_HANDLE);
        let mut info: CONSOLE_SCREEN_BUFFER_INFO = std::mem::zeroed();
        if GetConsoleScreenBufferInfo(h, &mut info) == 0 {
            return None;
        }
        let w = i32::from(info.srWindow.Right) - i32::from(info.srWindow.Left) + 1;
        usize::try_from(w).ok()
    }
}

#[cfg(not(any(unix, windows)))]
fn window_width() -> Option<usize> {
    None
}

/// The columns `s` takes on a terminal: two for a CJK or other wide character, none for a combining mark.
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

fn char_width(c: char) -> usize {
    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
}

/// `s` in at most `width` columns: its start and end with `…` between them.
pub fn shorten_middle(s: &str, width: usize) -> String {
    if self::width(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail_cols = (width - 1) / 2;
    let head_cols = width - 1 - tail_cols;
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > head_cols {
            break;
        }
        used += w;
        out.push(c);
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = char_width(c);
        if used + w > tail_cols {
            break;
        }
        used += w;
        tail.push(c);
    }
    out.push('…');
    out.extend(tail.into_iter().rev());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_in_the_middle() {
        assert_eq!(shorten_middle("/a/b/c", 10), "/a/b/c");
        assert_eq!(shorten_middle("/abcdef/ghij.txt", 9), "/abc….txt");
        assert_eq!(shorten_middle("/abcdef/ghij.txt", 9).chars().count(), 9);
        assert_eq!(shorten_middle("abc", 1), "…");
        // Wide characters take two columns each: the result fits the columns, not a count of characters.
        let cjk = "/写真/二〇二四年/旅行の記録.jpg";
        assert_eq!(width(cjk), 31);
        let short = shorten_middle(cjk, 15);
        assert!(width(&short) <= 15, "{short}");
        assert!(
            short.starts_with("/写真") && short.ends_with(".jpg"),
            "{short}"
        );
    }
}
