/** The local control plane for integration and end-to-end tests. */
export { startControlPlane } from "./control-plane.js";
export type { ControlPlane, Profile, StartOptions, StopOptions } from "./control-plane.js";
export { PrerequisiteError } from "./toolchain.js";
export { FAKE_NODE_LABEL } from "./fake-nodes.js";
export { GATEWAY_API_CRD_NAMES, ISTIO_CRD_NAMES } from "./crds.js";
