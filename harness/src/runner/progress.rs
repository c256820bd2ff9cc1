//! Progress on a terminal: cases done of total, rate and ETA (indicatif), drawn on stderr only
//! when stdout and stderr are both a terminal, so logs and pipes get nothing extra.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar for `total` cases, or `None` when stdout or stderr is not a terminal (or nothing
/// runs).
pub fn bar(total: usize) -> Option<ProgressBar> {
    if total == 0 || !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "[{elapsed_precise}] {bar:30} {pos}/{len} cases, {per_sec}, ETA {eta}",
    ) {
        bar.set_style(style);
    }
    // Drawn at once, then at each finished case (indicatif limits the redraw rate).
    bar.tick();
    Some(bar)
}
