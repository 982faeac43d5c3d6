/**
 * The watch server without a browser: its event endpoint's checks, its Host guard, runs reopened
 * from disk after a restart, and the statechart drawn from a machine.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ContextManager, SlidingWindowCompact } from "../../../src/context/index.ts";
import { defineTool } from "../../../src/core/tools.ts";
import { defineWorkflow } from "../../../src/core/workflow.ts";
import { WorkflowRunner } from "../../../src/loop/runner.ts";
import { createWorkflowMachine } from "../../../src/machines/workflow.machine.ts";
import { ScriptedClient, toolCall } from "../../../src/testing/index.ts";
import {
  createWatchApp,
  createWatchReporter,
  RunStore,
  renderStatechart,
  startWatchServer,
  statechartOf,
  type WatchEvent,
  WatchReportError,
} from "../../../src/watch/index.ts";

const started: WatchEvent = {
  type: "run.started",
  at: 0,
  name: "demo #1",
  source: "runner",
  startedAt: Date.parse("2026-01-01T00:00:00Z"),
  statechart: {
    id: "m",
    initial: "a",
    states: [
      { name: "a", final: false, targets: ["b"] },
      { name: "b", final: true, targets: [] },
    ],
  },
};
const entered = (state: string, at: number): WatchEvent => ({
  type: "state.entered",
  at,
  state,
  iteration: 1,
});

const TOKEN = "test-token";

function post(
  app: ReturnType<typeof createWatchApp>,
  runId: string,
  body: unknown,
  type = "application/json",
  token: string | null = TOKEN,
) {
  return app.request(`/api/runs/${runId}/events`, {
    method: "POST",
    headers: { "content-type": type, ...(token !== null && { authorization: `Bearer ${token}` }) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("the watch server", () => {
  it("takes a batch of events and shows the run; refuses a bad run id, a non-JSON type and a bad event", async () => {
    const app = createWatchApp({
      store: new RunStore(mkdtempSync(join(tmpdir(), "forge-watch-"))),
      token: TOKEN,
    });
    const accepted = await post(app, "demo-1", { events: [started, entered("a", 5)] });
    expect(accepted.status).toBe(200);
    await expect(accepted.json()).resolves.toEqual({ runId: "demo-1", events: 2 });
    const page = await (await app.request("/runs/demo-1")).text();
    expect(page).toContain('<g class="state current" data-state="a">');
    expect(page).toContain("demo #1");
    const json = await (await app.request("/runs/demo-1/events.json")).json();
    expect(json).toEqual({ runId: "demo-1", events: [started, entered("a", 5)] });

    expect((await post(app, "../etc", { events: [started] })).status).toBe(404);
    expect((await post(app, "a.b", { events: [started] })).status).toBe(400);
    expect((await post(app, "demo-1", { events: [started] }, "text/plain")).status).toBe(415);
    const bad = await post(app, "demo-1", { events: [{ type: "state.entered", at: "soon" }] });
    expect(bad.status).toBe(400);
    await expect(bad.json()).resolves.toMatchObject({
      error: expect.stringContaining("not a batch of watch events"),
    });
    expect((await app.request("/runs/nope")).status).toBe(404);
  });

  it("answers only the Host names it listens on", async () => {
    const watch = await startWatchServer({ port: 0, dir: mkdtempSync(join(tmpdir(), "forge-watch-")) });
    try {
      expect(watch.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(watch.url)).status).toBe(200);
      const rebound = await watch.app.request("/", { headers: { host: `evil.example:${watch.port}` } });
      expect(rebound.status).toBe(403);
      await expect(rebound.text()).resolves.toContain("is not served here");
    } finally {
      await watch.close();
    }
  });

  it("reopens the runs recorded in its directory, skipping a broken line with a warning", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-"));
    const store = new RunStore(dir);
    expect(store.list()).toHaveLength(0);
    store.append("old-run", [started, entered("a", 3), entered("b", 9)]);
    const reopened = new RunStore(dir);
    expect(reopened.get("old-run")).toMatchObject({ name: "demo #1", currentState: "b", lastAt: 9 });
    expect(reopened.get("old-run")?.trace.transitions.map((transition) => transition.state)).toEqual([
      "a",
      "b",
    ]);

    writeFileSync(join(dir, "broken.jsonl"), `{"type":"nope"}\n${JSON.stringify(started)}\n`);
    const warnings: string[] = [];
    const again = new RunStore(dir, { onWarning: (message) => warnings.push(message) });
    expect(again.get("broken")?.events).toEqual([started]);
    expect(warnings).toEqual([expect.stringMatching(/broken\.jsonl, line 1: not a watch event.*skipped/)]);
  });

  it("a reporter whose server is gone says so on flush", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-"));
    const watch = await startWatchServer({ port: 0, dir });
    await watch.close();
    const errors: WatchReportError[] = [];
    const reporter = createWatchReporter({ url: watch.tokenUrl, onError: (error) => errors.push(error) });
    reporter.onMessage({ role: "user", content: "hi", metadata: { type: "user_input" } } as never);
    reporter.inspect({ type: "@xstate.actor", actorRef: { sessionId: "x:0" }, rootId: "x:0" } as never);
    await expect(reporter.flush()).rejects.toThrow(WatchReportError);
    await expect(reporter.flush()).rejects.toThrow(
      /Could not send run events to the watch server at http:\/\/127\.0\.0\.1/,
    );
    expect(errors).toHaveLength(1);
  });
});

describe("a reporter's compactions", () => {
  it("are each reported once when its onCompact is also the ContextManager's own", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-"));
    const watch = await startWatchServer({ port: 0, dir });
    try {
      const reporter = createWatchReporter({ url: watch.tokenUrl, name: "reader" });
      let compacted = 0;
      const contextManager = new ContextManager({
        strategy: new SlidingWindowCompact({ keepRecent: 1 }),
        budgetTokens: 300,
        onCompact: (event) => {
          compacted += 1;
          reporter.onCompact(event);
        },
      });
      const workflow = defineWorkflow({
        name: "reader",
        description: "Read pages",
        tools: [
          defineTool({
            name: "read",
            description: "Read a page",
            parameters: z.object({ page: z.number() }),
            execute: () => "lorem ipsum ".repeat(40),
          }),
          defineTool({ name: "finish", description: "Done", parameters: z.object({}), execute: () => "ok" }),
        ],
        terminalTool: "finish",
        systemPrompt: "Read, then finish.",
      });
      const client = new ScriptedClient([
        ...[1, 2, 3, 4].map((page) => toolCall("read", { page })),
        toolCall("finish"),
      ]);
      const runner = new WorkflowRunner(reporter.instrument({ client, contextManager }));
      await runner.run(workflow, "Read four pages.");
      await reporter.flush();
      const response = await fetch(`${watch.url}/runs/${reporter.runId}/events.json`);
      const { events } = (await response.json()) as { events: WatchEvent[] };
      expect(compacted).toBeGreaterThan(0);
      expect(events.filter((event) => event.type === "context.compacted")).toHaveLength(compacted);
    } finally {
      await watch.close();
    }
  });
});

describe("statechartOf", () => {
  it("draws the workflow machine's top-level states and transitions, the current one highlighted", () => {
    const graph = statechartOf(createWorkflowMachine({} as never));
    expect(graph.initial).toBe("compact");
    const byName = Object.fromEntries(graph.states.map((state) => [state.name, state]));
    expect(byName.infer?.targets).toEqual(["validate", "failed"]);
    expect(byName.review?.targets).toEqual(expect.arrayContaining(["done", "compact"]));
    expect(byName.done).toMatchObject({ final: true, targets: [] });
    const svg = renderStatechart(graph, "execute");
    expect(svg.match(/class="state[^"]*current[^"]*"/g)).toEqual(['class="state current"']);
    expect(svg).toContain('data-state="execute"');
    expect(svg.match(/<path class="edge"/g)?.length).toBe(
      graph.states.reduce((sum, state) => sum + state.targets.length, 0),
    );
  });
});
