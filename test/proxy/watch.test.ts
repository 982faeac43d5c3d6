/**
 * `forge proxy --watch <url>`: a request whose tool call the proxy rescued from text shows up on
 * the watch server as a run, seen in real headless Chromium, through real sockets on 127.0.0.1.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable } from "../../eval/report/screenshot.ts";
import { startWatchServer } from "../../src/watch/index.ts";
import { exitOf, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";
import { weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { startScriptedBackend, textCompletion } from "./helpers/scripted-backend.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("forge proxy --watch", () => {
  it("shows a request whose tool call was rescued from text as a run, live in Chromium", async () => {
    expect(
      chromiumAvailable(),
      `${CHROMIUM_PATH} is not installed. Install it with: apt-get update && apt-get install -y chromium`,
    ).toBe(true);
    const watch = await startWatchServer({ port: 0, dir: mkdtempSync(join(tmpdir(), "forge-watch-proxy-")) });
    cleanups.push(() => watch.close());
    const backend = await startScriptedBackend([
      textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'),
    ]);
    cleanups.push(() => backend.close());
    const forge = spawnForge([
      "proxy",
      "--backend-url",
      backend.url,
      "--port",
      "0",
      "--watch",
      watch.tokenUrl,
    ]);
    cleanups.push(async () => {
      forge.child.kill("SIGTERM");
      expect(await exitOf(forge.child)).toBe(0);
    });
    const [, proxyUrl] = await waitForOutput(
      forge.stdout,
      /listening on (http:\/\/127\.0\.0\.1:\d+).*runs reported to http:\/\/127\.0\.0\.1:\d+/,
    );

    const browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
      headless: true,
    });
    cleanups.push(() => browser.close());
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
    await page.goto(watch.url);

    const answer = await fetch(`${proxyUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "qwen3:8b",
        messages: [{ role: "user", content: "Weather in Lima?" }],
        tools: [weatherToolOpenAI],
      }),
    });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as {
      choices: { message: { tool_calls: { function: { name: string } }[] } }[];
    };
    expect(body.choices[0]?.message.tool_calls[0]?.function.name).toBe("get_weather");

    // The runs list shows the request as it arrives, then its page the whole exchange.
    const link = page.locator('#runs a:has-text("qwen3:8b")');
    await link.waitFor({ timeout: 10_000 });
    await vi.waitFor(() => expect(watch.store.list()[0]?.finished).not.toBeNull(), { timeout: 10_000 });
    await link.click();
    await page.locator("#outcome .badge.done").waitFor({ timeout: 10_000 });
    const rows = page.locator("#events .event");
    await expect(rows.filter({ hasText: "user input" }).textContent()).resolves.toContain("Weather in Lima?");
    await expect(rows.filter({ hasText: "LLM call 1" }).textContent()).resolves.toContain(
      'text: <tool_call>{"name": "get_weather"',
    );
    const detail = await page.locator("#detail").textContent();
    expect(detail).toContain('"rescues": 1');
    expect(detail).toContain('"name": "get_weather"');
    await expect(page.locator("#totals").textContent()).resolves.toMatch(/^1 LLM calls/);
    await expect(page.locator("#statechart").textContent()).resolves.toContain("no statechart");
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
