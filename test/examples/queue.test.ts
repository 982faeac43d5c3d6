import { describe, expect, it } from "vitest";
import { main } from "../../examples/queue.ts";

describe("examples/queue", () => {
  it("runs each enqueued order once, charging each once with its own idempotency key", async () => {
    const lines: string[] = [];
    const { results, payments, runs } = await main((line) => lines.push(line));
    expect(results).toEqual(["Order A1 is paid.", "Order B2 is paid."]);
    expect(payments).toHaveLength(2);
    expect(payments[0]).toMatch(/^A1:10 \(order-A1:[0-9a-z]{9}\)$/);
    expect(runs.map((run) => [run.runId, run.status, run.attempts])).toEqual([
      ["order-A1", "completed", 1],
      ["order-B2", "completed", 1],
    ]);
    expect(lines.at(-1)).toContain("payments: A1:10");
  });
});
