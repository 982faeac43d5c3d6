/** A stand-in checkpoint for queue tests: its `seq` tells which one a lease got back. */
import type { StoredCheckpoint } from "../../src/queue/index.ts";

export function checkpointOf(seq: number): StoredCheckpoint {
  return {
    snapshot: { seq },
    meta: {
      seq,
      workflow: "echo",
      definitionHash: "h",
      machineVersion: 1,
      reason: "test",
      runId: "r",
      iteration: seq,
    },
  };
}
