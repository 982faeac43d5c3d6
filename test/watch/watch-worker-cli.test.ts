/**
 * `forge worker --watch <url>` as a real process: a run enqueued from another process shows on an
 * in-process watch server as its own run, named by its queue run id; a URL that is not one is refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startWatchServer, type WatchEvent } from "../../src/watch/index.ts";
import { exitOf, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";

const REGISTRY = new URL("../fixtures/durable/registry.ts", import.meta.url).pathname;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-cli-watch-worker-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("forge worker --watch", () => {
  it("reports each run it works to the watch server", async () => {
    const dir = tempDir();
    const watch = await startWatchServer({ port: 0, dir: join(dir, "runs") });
    cleanups.push(() => watch.close());
    const queue = join(dir, "queue");
    process.env.FORGE_TEST_DIR = dir;
    const worker = spawnForge([
      "worker",
      "--registry",
      REGISTRY,
      "--queue",
      queue,
      "--watch",
      watch.tokenUrl,
    ]);
    try {
      await waitForOutput(
        worker.output,
        new RegExp(`forge worker on .*: shop, runs reported to ${watch.url}`),
      );
      const enqueue = spawnForge([
        "enqueue",
        "shop",
        "Buy A1",
        "--queue",
        queue,
        "--run-id",
        "order-1",
        "--wait",
      ]);
      expect(await exitOf(enqueue.child)).toBe(0);
      await waitForOutput(worker.output, /order-1 completed/);
    } finally {
      delete process.env.FORGE_TEST_DIR;
      worker.child.kill("SIGINT");
    }
    expect(await exitOf(worker.child)).toBe(0);
    const response = await fetch(`${watch.url}/runs/order-1/events.json`);
    expect(response.status).toBe(200);
    const { events } = (await response.json()) as { events: WatchEvent[] };
    expect(events[0]).toMatchObject({ type: "run.started", name: "order-1", source: "queue" });
    expect(events.filter((event) => event.type === "llm.called")).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", outcome: "done", result: "ok" });
  }, 90_000);

  it("refuses a --watch that is not an http(s) URL", async () => {
    const run = spawnForge([
      "worker",
      "--registry",
      REGISTRY,
      "--queue",
      join(tempDir(), "q"),
      "--watch",
      "4141",
    ]);
    expect(await exitOf(run.child)).not.toBe(0);
    expect(run.stderr()).toContain("'4141' is not an http(s) URL");
  }, 60_000);
});
