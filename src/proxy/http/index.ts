/** The proxy's HTTP guards: host and origin checks, body limits, deadlines, admission gates, draining and memory reclaim. */

export { AdmissionGate, type Release, SerialGate } from "./admission-gate.ts";
export { RequestDeadline } from "./deadline.ts";
export { ProxyDrain, refuseWhileDraining, SHUTDOWN_RETRY_AFTER_SECONDS } from "./drain.ts";
export { guardHostAndOrigin } from "./host-guard.ts";
export { DEFAULT_MAX_JSON_DEPTH, parseBody, readBodyText } from "./read-body.ts";
export { BodyReclaimer, DEFAULT_RECLAIM_AFTER_BYTES } from "./reclaim.ts";
