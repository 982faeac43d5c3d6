/**
 * Durable runs: a worker takes runs off a queue and runs them with the workflows of
 * examples/registry.ts, checkpointing each step; a producer enqueues a run by id and waits for its
 * result. `FORGE_QUEUE` names the queue: `redis://127.0.0.1:6379` (Redis, `npm install bullmq@6
 * ioredis@5`), `postgres://…`, or a directory; without it, an embedded queue in a temporary
 * directory, so the example runs anywhere.
 *
 * Run it: `FORGE_QUEUE=redis://127.0.0.1:6379 npx tsx examples/redis-worker.ts`
 * The same from the command line, in two terminals: docs/getting-started/durable-runs.md.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createRunQueue, startWorker } from "forge-guardrails/queue";
import registry from "./registry.ts";

/** Enqueue one run, work it, and resolve with its result. */
export async function main(log: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env) {
  const scratch = env.FORGE_QUEUE ? undefined : mkdtempSync(join(tmpdir(), "forge-runs-"));
  const queue = await createRunQueue(env.FORGE_QUEUE ?? (scratch as string));
  const worker = startWorker({ queue, registry, concurrency: 2 });
  try {
    const runId = `weather-${Date.now().toString(36)}`;
    await queue.enqueue("weather", "What's the weather in Lisbon?", { runId }); // the same runId twice: one run
    const result = await queue.result(runId);
    log(`${runId}: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await worker.close(); // runs under way go back to the queue, to resume from their checkpoint
    await queue.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
