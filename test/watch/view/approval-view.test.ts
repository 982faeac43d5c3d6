/**
 * The run viewer shows a run parked for approval: a real watch server, a reporter-instrumented
 * runner whose run parks, and the run's page listing the batch it waits on with each call's id and
 * arguments (not "cancelled", though the parked run's actor was stopped).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AwaitingApprovalError } from "../../../src/core/errors.ts";
import { WorkflowRunner } from "../../../src/loop/runner.ts";
import { ScriptedClient } from "../../../src/testing/index.ts";
import { createWatchReporter, startWatchServer } from "../../../src/watch/index.ts";
import { paymentsScript, paymentsWorkflow } from "../../fixtures/approval/payments.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("the run viewer on a parked run", () => {
  it("shows it as awaiting approval, with the calls of the batch and their arguments", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-approval-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const watch = await startWatchServer({ port: 0, dir });
    cleanups.push(() => watch.close());
    const reporter = createWatchReporter({ url: watch.tokenUrl, name: "payments" });
    const runner = new WorkflowRunner(
      reporter.instrument({
        client: new ScriptedClient(paymentsScript().slice(0, 1)),
        contextManager: { maybeCompact: (messages) => messages },
      }),
    );
    const parked = await runner
      .run(paymentsWorkflow(dir), "Pay B2 250", { runId: "pay-1" })
      .catch((error: unknown) => error);
    expect(parked).toBeInstanceOf(AwaitingApprovalError);
    await reporter.flush();
    const page = await (await fetch(`${watch.url}/runs/${reporter.runId}`)).text();
    expect(page).toContain("awaiting approval");
    expect(page).not.toContain('class="badge cancelled"');
    expect(page).toContain("Waits for a person");
    for (const call of (parked as AwaitingApprovalError).pending) {
      expect(page).toContain(`<code>${call.callId}</code>`);
    }
    expect(page).toContain("&quot;amount&quot;: 250");
    expect(page).toContain("forge runs approve|deny pay-1");
  });
});
