/** The embedded engine: runs as files in one folder, for one machine, with no server to run. */
export type { QuarantinedFile } from "./files.ts";
export { createEmbeddedQueue, type EmbeddedQueueOptions, type EmbeddedRunQueue } from "./queue.ts";
