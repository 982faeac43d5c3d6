/**
 * `createRunQueue`: one string (or `{ redis } | { postgres } | { embedded }`) picks the engine; a
 * URL of a scheme no engine speaks is refused, never taken for a directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRunQueue, RunQueueConnectionError } from "../../src/queue/index.ts";
import { engineOf } from "../../src/queue/run-queue.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("engineOf", () => {
  it.each([
    ["redis://127.0.0.1:6379", "redis"],
    ["rediss://cache.example:6380/1", "redis"],
    ["postgres://app@127.0.0.1:5432/app", "postgres"],
    ["POSTGRESQL://app@db/app", "postgres"],
    [".forge/queue", "embedded"],
    ["/var/lib/forge/queue", "embedded"],
    ["C:queue", "embedded"],
  ] as const)("%s is %s", (queue, engine) => {
    expect(engineOf(queue)).toBe(engine);
  });

  it("refuses a URL of another scheme", () => {
    expect(() => engineOf("http://127.0.0.1:6379")).toThrow(RangeError);
    expect(() => engineOf("mysql://db/app")).toThrow(
      /redis:\/\/, rediss:\/\/, postgres:\/\/ or postgresql:\/\//,
    );
  });
});

describe("createRunQueue", () => {
  it("opens the embedded queue from a directory, as a string or { embedded }", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-create-queue-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const queue = await createRunQueue(join(dir, "q"));
    await queue.enqueue("echo", "x", { runId: "e1" });
    expect((await queue.get("e1"))?.status).toBe("waiting");
    const client = await createRunQueue({ embedded: join(dir, "q"), mode: "client" });
    expect((await client.get("e1"))?.status).toBe("waiting");
    await client.close();
    await queue.close();
    expect(
      await createRunQueue({ embedded: join(dir, "q") }).then((opened) => opened.close()),
    ).toBeUndefined();
  });

  it("opens BullMQ for redis:// and postgres:// URLs (here nothing listens: the typed error says where)", async () => {
    const redis = createRunQueue({ redis: "redis://127.0.0.1:1", connectTimeoutMs: 1_000 });
    await expect(redis).rejects.toBeInstanceOf(RunQueueConnectionError);
    await expect(redis).rejects.toThrow(/Cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
    const withPassword = createRunQueue({ redis: "redis://:secret@127.0.0.1:1", connectTimeoutMs: 1_000 });
    await expect(withPassword).rejects.toThrow(/Cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
    await expect(withPassword).rejects.not.toThrow(/secret/);
    const postgres = createRunQueue({
      postgres: "postgres://app:secret@127.0.0.1:1/app",
      connectTimeoutMs: 1_000,
    });
    await expect(postgres).rejects.toBeInstanceOf(RunQueueConnectionError);
    // The password stays out of the message.
    await expect(postgres).rejects.toThrow(
      /Cannot reach PostgreSQL at postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app/,
    );
  });

  it("refuses a URL of another scheme instead of making it a directory", async () => {
    await expect(createRunQueue("http://127.0.0.1:6379")).rejects.toThrow(RangeError);
    // A mistyped scheme still keeps the password out of the message, in the user info or the query.
    const typo = createRunQueue("postgress://app:s3cret@127.0.0.1/app?password=s3cret");
    await expect(typo).rejects.toThrow(/got "postgress:\/\/app:\*\*\*@127\.0\.0\.1\/app\?password=\*\*\*"/);
    await expect(typo).rejects.not.toThrow(/s3cret/);
  });
});
