// The component's `paimon:compact/progress` import: forwards events to the current listener,
// and keeps what the component says when it panics (the trap that follows says nothing).
let listener = null;
let lastPanic = null;

/** Sets the progress listener of the next component call (internal). */
export function useProgress(fn) {
  listener = fn;
}

export function report(event) {
  if (listener) {
    listener({ ...event, done: Number(event.done), total: Number(event.total) });
  }
}

export function panicked(message, decoding) {
  lastPanic = { message, decoding: decoding ?? null };
}

/** What the component sent before its last trap (`{ message, decoding }`), once (internal). */
export function takePanic() {
  const message = lastPanic;
  lastPanic = null;
  return message;
}
