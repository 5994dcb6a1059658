/** Moved to api/meta.ts (child names and labels are shared basics); this path stays for callers outside src (e2e/demo). */
export * from "../api/meta.js";
