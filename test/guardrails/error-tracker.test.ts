/** ErrorTracker: the consecutive retry and tool-error budgets, and what resets them. */
import { describe, expect, it } from "vitest";
import { ErrorTracker } from "../../src/guardrails/error-tracker.ts";

describe("ErrorTracker", () => {
  it("defaults to 3 retries and 2 tool errors", () => {
    const tracker = new ErrorTracker();
    expect([tracker.maxRetries, tracker.maxToolErrors]).toEqual([3, 2]);
  });

  it("allows maxRetries nudges; the next retry exhausts the budget", () => {
    const tracker = new ErrorTracker({ maxRetries: 3 });
    for (let retry = 1; retry <= 3; retry += 1) {
      tracker.recordRetry();
      expect(tracker.retriesExhausted).toBe(false);
    }
    tracker.recordRetry();
    expect(tracker.retries).toBe(4);
    expect(tracker.retriesExhausted).toBe(true);
  });

  it("resetRetries ends the retry streak", () => {
    const tracker = new ErrorTracker({ maxRetries: 1 });
    tracker.recordRetry();
    tracker.recordRetry();
    expect(tracker.retriesExhausted).toBe(true);
    tracker.resetRetries();
    expect(tracker.retries).toBe(0);
    expect(tracker.retriesExhausted).toBe(false);
  });

  it("counts failures; the failure past maxToolErrors exhausts the budget", () => {
    const tracker = new ErrorTracker({ maxToolErrors: 2 });
    tracker.recordResult(false);
    tracker.recordResult(false);
    expect(tracker.toolErrors).toBe(2);
    expect(tracker.toolErrorsExhausted).toBe(false);
    tracker.recordResult(false);
    expect(tracker.toolErrorsExhausted).toBe(true);
  });

  it("does not count soft errors (ToolResolutionError)", () => {
    const tracker = new ErrorTracker({ maxToolErrors: 0 });
    tracker.recordResult(false, true);
    tracker.recordResult(false, true);
    expect(tracker.toolErrors).toBe(0);
    expect(tracker.toolErrorsExhausted).toBe(false);
  });

  it("recordResult(true) does not reset the streak (the seeds: only resetErrors does)", () => {
    const tracker = new ErrorTracker({ maxToolErrors: 1 });
    tracker.recordResult(false);
    tracker.recordResult(true);
    expect(tracker.toolErrors).toBe(1);
    tracker.recordResult(false);
    tracker.recordResult(true);
    expect(tracker.toolErrors).toBe(2);
    expect(tracker.toolErrorsExhausted).toBe(true);
  });

  it("resetErrors clears the tool-error streak and leaves the retries", () => {
    const tracker = new ErrorTracker({ maxToolErrors: 0 });
    tracker.recordRetry();
    tracker.recordResult(false);
    expect(tracker.toolErrorsExhausted).toBe(true);
    tracker.resetErrors();
    expect(tracker.toolErrors).toBe(0);
    expect(tracker.toolErrorsExhausted).toBe(false);
    expect(tracker.retries).toBe(1);
  });

  it("keeps the two budgets apart", () => {
    const tracker = new ErrorTracker({ maxRetries: 0, maxToolErrors: 0 });
    tracker.recordRetry();
    expect([tracker.retriesExhausted, tracker.toolErrorsExhausted]).toEqual([true, false]);
    tracker.resetRetries();
    tracker.recordResult(false);
    expect([tracker.retriesExhausted, tracker.toolErrorsExhausted]).toEqual([false, true]);
  });

  it.each([
    [{ maxRetries: -1 }, "maxRetries must be a non-negative integer, got -1"],
    [{ maxRetries: 1.5 }, "maxRetries must be a non-negative integer, got 1.5"],
    [{ maxToolErrors: Number.NaN }, "maxToolErrors must be a non-negative integer, got NaN"],
  ])("rejects %o with a RangeError naming the option", (options, message) => {
    expect(() => new ErrorTracker(options)).toThrow(new RangeError(message));
  });

  it("accepts a budget of 0 (the first failure exhausts it)", () => {
    const tracker = new ErrorTracker({ maxRetries: 0 });
    expect(tracker.retriesExhausted).toBe(false);
    tracker.recordRetry();
    expect(tracker.retriesExhausted).toBe(true);
  });
});
