/**
 * `forge watch` in real headless Chromium (Debian's chromium through playwright-core): a scripted
 * run with a premature terminal call and a compaction, watched live on a real socket.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable } from "../../eval/report/screenshot.ts";
import { ContextManager, SlidingWindowCompact } from "../../src/context/index.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createWatchReporter, type RunningWatchServer, startWatchServer } from "../../src/watch/index.ts";
import { weatherWorkflow } from "../helpers/workflows.ts";

/** A scripted answer that waits until the test releases it, so the page can be watched mid-run. */
function gated(response: LLMResponse) {
  let release = () => {};
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { step: () => opened.then(() => response), release };
}

/** Opens a page that records console errors and any request leaving the watch server. */
async function openPage(browser: Browser, origin: string) {
  const page = await browser.newPage({ viewport: { width: 1240, height: 900 } });
  const consoleErrors: string[] = [];
  const outside: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  page.on("request", (request) => {
    if (!request.url().startsWith(origin)) outside.push(request.url());
  });
  return { page, consoleErrors, outside };
}

const rowsOf = (page: Page, kind: string) => page.locator(`#events .event[data-kind="${kind}"]`);

describe("forge watch in headless Chromium", () => {
  let browser: Browser;
  let watch: RunningWatchServer;

  beforeAll(async () => {
    expect(
      chromiumAvailable(),
      `${CHROMIUM_PATH} is not installed. Install it with: apt-get update && apt-get install -y chromium`,
    ).toBe(true);
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
    watch = await startWatchServer({ port: 0, dir: mkdtempSync(join(tmpdir(), "forge-watch-")) });
  });

  afterAll(async () => {
    await browser?.close();
    await watch?.close();
  });

  it("shows a run's states, its step nudge and its compaction live, with no console errors", async () => {
    const premature = gated(toolCall("report_weather", { city: "Paris", weather: "?" }));
    const lookup = gated(toolCall("get_weather", { city: "Paris" }));
    const report = gated(toolCall("report_weather", { city: "Paris", weather: "sunny" }));
    const client = new ScriptedClient([premature.step, lookup.step, report.step]);
    const reporter = createWatchReporter({ url: watch.tokenUrl, name: "weather" });
    // 250 tokens (tools included): the history outgrows it within the run, so the sliding window drops old turns.
    const contextManager = new ContextManager({
      strategy: new SlidingWindowCompact({ keepRecent: 1 }),
      budgetTokens: 250,
      onCompact: reporter.onCompact,
    });
    const runner = new WorkflowRunner(reporter.instrument({ client, contextManager }));
    const { workflow } = weatherWorkflow();

    const { page: list, consoleErrors: listErrors } = await openPage(browser, watch.url);
    await list.goto(watch.url);
    await expect(list.locator("#runs").textContent()).resolves.toContain("No runs yet");

    const result = runner.run(workflow, "Weather in Paris?", { promptVars: { user: "Ada" } });
    // The list page learns of the run over its stream, without a reload.
    const link = list.locator('#runs a:has-text("weather #1")');
    await link.waitFor({ timeout: 10_000 });
    const { page, consoleErrors, outside } = await openPage(browser, watch.url);
    await page.goto(`${watch.url}${await link.getAttribute("href")}`);

    // Waiting for the first answer: the statechart is drawn with `infer` highlighted.
    const states = await page
      .locator("svg.statechart .state")
      .evaluateAll((nodes) => nodes.map((node) => (node as SVGGElement).dataset.state));
    expect(states).toEqual(
      expect.arrayContaining([
        "compact",
        "infer",
        "validate",
        "enforce",
        "execute",
        "review",
        "done",
        "failed",
      ]),
    );
    await expect(page.locator("svg.statechart .state.current").getAttribute("data-state")).resolves.toBe(
      "infer",
    );
    await expect(rowsOf(page, "step_nudge").count()).resolves.toBe(0);

    premature.release();
    await rowsOf(page, "step_nudge").waitFor({ timeout: 10_000 });
    await expect(rowsOf(page, "step_nudge").textContent()).resolves.toContain("[StepEnforcementError]");

    // The history outgrows the small budget before the last answer is released: the compaction
    // shows while the run still waits for the model.
    lookup.release();
    await rowsOf(page, "compaction").first().waitFor({ timeout: 10_000 });
    await expect(rowsOf(page, "compaction").allTextContents()).resolves.toContainEqual(
      expect.stringMatching(/compaction phase \d.*→ \d+ messages \([1-9]\d* dropped or summarized\)/s),
    );
    await expect(page.locator("#outcome").textContent()).resolves.toContain("running");

    report.release();
    await expect(result).resolves.toEqual({ reported: "Paris: sunny" });
    await page.locator("#outcome .badge.done").waitFor({ timeout: 10_000 });
    await expect(page.locator("svg.statechart .state.current").getAttribute("data-state")).resolves.toBe(
      "done",
    );
    await expect(rowsOf(page, "llm").count()).resolves.toBe(3);
    await expect(page.locator("#totals").textContent()).resolves.toMatch(/^3 LLM calls · \d+ prompt/);
    await reporter.flush();
    client.assertDone();

    // The live page ends up showing what a fresh render of the finished run shows.
    const live = await page.locator("#events").innerHTML();
    // The strip's marks arrived a batch at a time, as SVG, and match a fresh render too.
    const liveMarks = await page.locator("#strip g.marks").innerHTML();
    expect(liveMarks).toContain("<line");
    await expect(
      page
        .locator("#strip g.marks line")
        .first()
        .evaluate((node) => node.namespaceURI),
    ).resolves.toBe("http://www.w3.org/2000/svg");
    const { page: reopened } = await openPage(browser, watch.url);
    await reopened.goto(page.url());
    expect(await reopened.locator("#events").innerHTML()).toBe(live);
    expect(await reopened.locator("#strip g.marks").innerHTML()).toBe(liveMarks);

    const screenshot = process.env.FORGE_WATCH_SCREENSHOT;
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    expect(consoleErrors).toEqual([]);
    expect(listErrors).toEqual([]);
    expect(outside).toEqual([]);
  }, 60_000);
});
