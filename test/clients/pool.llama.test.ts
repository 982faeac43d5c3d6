/**
 * EndpointPool against a real llama-server (tiny test model, `-np 2`): the slot count comes from
 * its `/props`, calls are answered through the pool, and the health check takes the endpoint out
 * once the server is stopped.
 */
import { afterAll, describe, expect, it, vi } from "vitest";
import { EndpointPool } from "../../src/clients/index.ts";
import { isToolCallList } from "../../src/core/types.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

let server: TestLlamaServer;
let pool: EndpointPool;

beforeAllOrFail(async () => {
  server = await startTestLlamaServer({ slots: 2 });
  pool = new EndpointPool({
    endpoints: [server.baseUrl],
    clientOptions: { maxTokens: 4, temperature: 0, logger: () => {} },
    healthIntervalMs: 100,
    logger: () => {},
  });
}, 900_000);

afterAll(async () => {
  await pool?.close();
  await server?.stop();
});

describe("EndpointPool on llama-server", () => {
  it("reads total_slots from /props and answers calls through it, each run on record", async () => {
    const messages = (index: number) => [{ role: "user", content: `Say hello number ${index}.` }];
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, index) =>
        pool.send(messages(index), undefined, { runId: `run-${index}` }),
      ),
    );
    expect(answers).toHaveLength(5);
    for (const answer of answers)
      expect(isToolCallList(answer) || typeof answer.content === "string").toBe(true);
    const [status] = pool.status();
    expect(status).toMatchObject({ up: true, slots: 2, inFlight: 0, waiting: 0, runs: 5 });
    expect(await pool.getContextLength()).toBeGreaterThan(0);
  });

  it("takes the endpoint out once llama-server is stopped", async () => {
    await server.stop();
    await vi.waitFor(
      () => {
        if (pool.status()[0]?.up !== false) throw new Error("still up");
      },
      { timeout: 20_000, interval: 20 },
    );
    expect(pool.status()[0]?.error).toMatch(/ECONNREFUSED|fetch failed|health check/);
  });
});
