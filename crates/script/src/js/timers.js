// k6/timers: setTimeout and setInterval as k6 gives them globally.
export const setTimeout = globalThis.setTimeout;
export const clearTimeout = globalThis.clearTimeout;
export const setInterval = globalThis.setInterval;
export const clearInterval = globalThis.clearInterval;
export default { setTimeout, clearTimeout, setInterval, clearInterval };
