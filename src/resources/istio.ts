/** Moved to router/istio.ts (the router owns its objects); this path stays for callers outside src (e2e/demo). */
export * from "../router/istio.js";
