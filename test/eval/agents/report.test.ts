/**
 * The agent suite's bookkeeping: the proxy's JSON access log counted into a row's guardrail
 * events, the request counter in front of a real HTTP server, and the report's pairing with the
 * direct arm.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { buildAgentReport, renderAgentMarkdown } from "../../../eval/agents/report.ts";
import { startRequestCounter } from "../../../eval/agents/request-counter.ts";
import { type AgentRow, countProxyLog } from "../../../eval/agents/run.ts";
import { formatAccessLine } from "../../../src/proxy/access-log.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const record = {
  time: "2026-01-01T00:00:00.000Z",
  requestId: "r1",
  method: "POST",
  path: "/v1/chat/completions",
  status: 200,
  durationMs: 10,
  model: "m",
  backendMs: 9,
  retries: 0,
  rescues: 0,
  nudges: 0,
  compactions: 0,
  guardrail: undefined,
  imagesOmitted: 0,
  proseAnswers: 0,
  renamedTools: 0,
  followUpCalls: 0,
};

describe("countProxyLog", () => {
  it("counts the LLM routes' lines from the proxy's own JSON format and skips forge's messages", () => {
    const log = [
      "forge proxy listening on http://127.0.0.1:1234",
      formatAccessLine({ ...record, nudges: 1, retries: 1, renamedTools: 1 }, "json"),
      formatAccessLine({ ...record, loopGuard: "note" }, "json"),
      formatAccessLine({ ...record, loopGuard: "stop", denied: 2, proseAnswers: 1 }, "json"),
      formatAccessLine({ ...record, status: 502, degenerate: 1 }, "json"),
      formatAccessLine({ ...record, method: "GET", path: "/v1/models" }, "json"),
    ].join("\n");
    expect(countProxyLog(log)).toEqual({
      turns: 4,
      loopNotes: 1,
      loopNarrows: 0,
      loopStops: 1,
      denied: 2,
      renamed: 1,
      prose: 1,
      nudges: 1,
      rescues: 0,
      degenerate: 1,
      proxyErrors: 1,
    });
  });
});

describe("startRequestCounter", () => {
  it("forwards requests unchanged and counts the POSTs", async () => {
    const upstream: Server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += String(chunk);
      });
      request.on("end", () => {
        response.writeHead(201, { "content-type": "application/json", "x-upstream": "yes" });
        response.end(JSON.stringify({ method: request.method, url: request.url, body }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
    const counter = await startRequestCounter(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
    cleanups.push(() => counter.close());

    const posted = await fetch(`${counter.url}/v1/chat/completions`, { method: "POST", body: '{"a":1}' });
    expect(posted.status).toBe(201);
    expect(posted.headers.get("x-upstream")).toBe("yes");
    expect(await posted.json()).toEqual({ method: "POST", url: "/v1/chat/completions", body: '{"a":1}' });
    await (await fetch(`${counter.url}/v1/models`)).text();
    expect(counter.posts()).toBe(1);
    expect(counter.answered()).toBe(1);
    counter.reset();
    expect(counter.posts()).toBe(0);
    expect(counter.answered()).toBe(0);
  });
});

function row(overrides: Partial<AgentRow>): AgentRow {
  const base: AgentRow = {
    key: "",
    task: "t1",
    agent: "pi",
    model: "m",
    arm: "direct",
    passed: false,
    detail: "",
    turns: 2,
    backendCalls: 2,
    loopNotes: 0,
    loopNarrows: 0,
    loopStops: 0,
    denied: 0,
    renamed: 0,
    prose: 0,
    nudges: 0,
    rescues: 0,
    degenerate: 0,
    proxyErrors: 0,
    wallMs: 10_000,
    exitReason: "exit",
    exitCode: 0,
    answerTail: "",
    stderrTail: "",
    at: "2026-01-01T00:00:00.000Z",
  };
  const merged = { ...base, ...overrides };
  return { ...merged, key: `${merged.model}|${merged.agent}|${merged.arm}|${merged.task}` };
}

describe("buildAgentReport", () => {
  it("pairs the proxy arm with the direct arm task by task and sums the guardrail events", () => {
    const report = buildAgentReport([
      row({ task: "t1", arm: "direct", passed: false }),
      row({ task: "t1", arm: "proxy", passed: true, nudges: 2, loopStops: 1 }),
      row({ task: "t2", arm: "direct", passed: true }),
      row({ task: "t2", arm: "proxy", passed: true, exitReason: "timeout", exitCode: null }),
    ]);
    const proxy = report.arms.find((arm) => arm.arm === "proxy");
    expect(proxy).toMatchObject({ passed: 2, runs: 2, timeouts: 1 });
    expect(proxy?.events).toMatchObject({ nudges: 2, loops: 1 });
    expect(proxy?.versusDirect).toMatchObject({ onlyFirst: 1, onlySecond: 0 });
    expect(report.arms.find((arm) => arm.arm === "direct")?.versusDirect).toBeNull();
    const markdown = renderAgentMarkdown(report);
    expect(markdown).toContain("| m | pi | proxy | 2/2");
    expect(markdown).toContain("| t2 | ✓ 2t 10 s | ✓ ⏱ 2t 10 s |");
  });
});
