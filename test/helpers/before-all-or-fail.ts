/** A `beforeAll` whose failure fails each test it guards, so a broken real-process setup reads as failed tests. */
import { beforeAll, beforeEach } from "vitest";

/**
 * Runs `setup` once before the tests of the enclosing scope, like `beforeAll`; when it throws,
 * every test of that scope fails with the setup's error. (A failing `beforeAll` makes vitest report
 * the suite's tests as skipped, which hides a llama-server that cannot start.)
 * @example
 * beforeAllOrFail(async () => {
 *   server = await startTestLlamaServer();
 * }, 900_000);
 */
export function beforeAllOrFail(setup: () => Promise<void> | void, timeoutMs?: number): void {
  let failure: Error | undefined;
  beforeAll(async () => {
    try {
      await setup();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      failure = new Error(`the tests' setup failed: ${reason}`, { cause: error });
    }
  }, timeoutMs);
  beforeEach(() => {
    if (failure) throw failure;
  });
}
