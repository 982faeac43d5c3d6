/**
 * The retry helpers on their own (the transient rule and backoff are `test/core/transient.test.ts`).
 */
import { describe, expect, it } from "vitest";
import { sleep } from "../../src/clients/retry.ts";

describe("sleep", () => {
  it("rejects with the signal's reason as soon as it aborts", async () => {
    const controller = new AbortController();
    const reason = new Error("stop");
    setTimeout(() => controller.abort(reason), 10);
    const started = performance.now();
    await expect(sleep(10_000, controller.signal)).rejects.toBe(reason);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
