//! Panics as errors. A panic is a bug (ours, or a library's assertion on input we failed to
//! validate); the user should get one typed `internal` line naming it, not a Rust backtrace
//! banner. [`install_hook`] (the CLI installs it) records each panic's message and location
//! for the thread instead of printing it; whoever catches the panic (the engine's native
//! calls, the CLI's `main`) reads it with [`message`] and reports it as an error.

use std::any::Any;
use std::cell::RefCell;

thread_local! {
    /// The last panic of this thread, as the hook saw it (message and location).
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the recording hook: a panic is kept for [`message`] and printed nowhere. Only for
/// a program that catches every panic it can hit (a panic nobody catches would then end the
/// thread silently).
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string().replace(":\n", ": ").replace('\n', " ");
        LAST.with(|l| *l.borrow_mut() = Some(text));
    }));
}

/// The message of a caught panic: what the hook recorded on this thread (message and
/// location), else the payload's text.
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(recorded) = LAST.with(|l| l.borrow_mut().take()) {
        return recorded;
    }
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
