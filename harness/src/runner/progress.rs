//! Progress on a terminal: cases done of total, rate and ETA (indicatif), drawn on stderr only
//! when stdout is a terminal, so logs and pipes get nothing extra.

use std::io::IsTerminal;
use std::sync::OnceLock;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static BAR: OnceLock<ProgressBar> = OnceLock::new();

/// Start the bar for `total` cases when stdout is a terminal; a no-op otherwise.
pub fn start(total: usize) {
    if !std::io::stdout().is_terminal() || total == 0 {
        return;
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cases, {per_sec}, ETA {eta}",
    ) {
        bar.set_style(style);
    }
    let _ = BAR.set(bar);
}

/// One case finished.
pub fn tick() {
    if let Some(b) = BAR.get() {
        b.inc(1);
    }
}

/// Remove the bar before the closing lines.
pub fn finish() {
    if let Some(b) = BAR.get() {
        b.finish_and_clear();
    }
}
