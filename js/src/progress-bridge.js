// The component's `paimon:compact/progress` import: forwards events to the current listener.
let listener = null;

/** Sets the progress listener of the next component call (internal). */
export function useProgress(fn) {
  listener = fn;
}

export function report(event) {
  if (listener) {
    listener({ ...event, done: Number(event.done), total: Number(event.total) });
  }
}
