/**
 * The transient-failure rule shared by the clients' retries and the run queue's worker: which
 * backend errors are transient, and how long each wait is.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BackendError, StreamError } from "../../src/core/errors.ts";
import { backoffDelayMs, isTransientBackendError } from "../../src/core/transient.ts";

const policy = { retryBaseMs: 100, retryMaxMs: 1_000, maxRetryAfterMs: 5_000 };

describe("isTransientBackendError", () => {
  it.each([429, 502, 503, 504, 529])("is true for HTTP %i from the server", (status) => {
    expect(isTransientBackendError(new BackendError(status, "busy"))).toBe(true);
  });

  it.each([400, 401, 403, 404, 408, 413, 422, 500])("is false for HTTP %i", (status) => {
    expect(isTransientBackendError(new BackendError(status, "no"))).toBe(false);
  });

  it("is false for the client's own 502 on an answer of the wrong shape or a redirect", () => {
    expect(isTransientBackendError(new BackendError(502, "{", "bad", { cause: new SyntaxError("x") }))).toBe(
      false,
    );
    const zodError = z.object({ a: z.string() }).safeParse({}).error;
    expect(isTransientBackendError(new BackendError(502, "{}", "bad", { cause: zodError }))).toBe(false);
    const redirect = new TypeError("fetch failed", { cause: new Error("unexpected redirect") });
    expect(isTransientBackendError(new BackendError(502, "", "redirect", { cause: redirect }))).toBe(false);
  });

  it("is false for what is not a BackendError", () => {
    expect(isTransientBackendError(new StreamError("cut"))).toBe(false);
    expect(isTransientBackendError(new Error("503"))).toBe(false);
  });
});

describe("backoffDelayMs", () => {
  it("doubles from retryBaseMs, with a jitter between half and all of it", () => {
    expect(backoffDelayMs(0, policy, undefined, 0)).toBe(50);
    expect(backoffDelayMs(0, policy, undefined, 0.999_999)).toBe(100);
    expect(backoffDelayMs(2, policy, undefined, 0.999_999)).toBe(400);
  });

  it("is capped at retryMaxMs", () => {
    expect(backoffDelayMs(10, policy, undefined, 0.999_999)).toBe(1_000);
  });

  it("waits at least what Retry-After asks, and gives up past maxRetryAfterMs", () => {
    expect(backoffDelayMs(0, policy, 2, 0.5)).toBe(2_000);
    expect(backoffDelayMs(0, policy, 0, 0)).toBe(50);
    expect(backoffDelayMs(0, policy, 6, 0)).toBeNull();
  });
});
