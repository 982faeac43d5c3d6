/**
 * A watched run exported in the eval's trace format (GET /runs/:runId/trace.json) and replayed
 * from it with its workflow: the same history and outcome; a changed answer shows where it differs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../../src/core/tools.ts";
import { defineWorkflow } from "../../../src/core/workflow.ts";
import { WorkflowRunner } from "../../../src/loop/runner.ts";
import { ScriptedClient, text, toolCall } from "../../../src/testing/index.ts";
import {
  createWatchReporter,
  eventsOfTrace,
  replayWatchedTrace,
  startWatchServer,
  type WatchedRunTrace,
  WatchReplayError,
} from "../../../src/watch/index.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const workflow = defineWorkflow({
  name: "weather",
  description: "Look up the weather, then report it",
  tools: [
    defineTool({
      name: "get_weather",
      description: "The weather in a city",
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => `sunny in ${city}`,
    }),
    defineTool({
      name: "report",
      description: "Report the weather",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `reported: ${text}`,
    }),
  ],
  requiredSteps: ["get_weather"],
  terminalTool: "report",
  systemPrompt: "Report the weather in {city}.",
});
const contextManager = { maybeCompact: (messages: never[]) => messages };

async function watchedRun(): Promise<{ trace: WatchedRunTrace; result: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), "forge-watch-trace-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const watch = await startWatchServer({ port: 0, dir });
  cleanups.push(() => watch.close());
  const reporter = createWatchReporter({ url: watch.tokenUrl, name: "weather" });
  // A chatty answer (retry nudge) and a premature report (step nudge) before the run is done.
  const client = new ScriptedClient([
    text("Let me think."),
    toolCall("report", { text: "?" }),
    toolCall("get_weather", { city: "Paris" }),
    toolCall("report", { text: "sunny" }),
  ]);
  const runner = new WorkflowRunner(reporter.instrument({ client, contextManager }));
  const result = await runner.run(workflow, "Weather in Paris?", { promptVars: { city: "Paris" } });
  await reporter.flush();
  const response = await fetch(`${watch.url}/runs/${reporter.runId}/trace.json`);
  expect(response.status).toBe(200);
  return { trace: (await response.json()) as WatchedRunTrace, result };
}

describe("a watched run as an eval trace", () => {
  it("is exported in the eval's trace format and replays to the same history and outcome", async () => {
    const { trace, result } = await watchedRun();
    expect(result).toBe("reported: sunny");
    expect(trace.startMessages.map((message) => message.metadata.type)).toEqual([
      "system_prompt",
      "user_input",
    ]);
    expect(trace.startMessages[0]?.content).toBe("Report the weather in Paris.");
    expect(trace.exchanges).toHaveLength(4);
    expect(trace.exchanges[2]).toMatchObject({
      response: [{ tool: "get_weather", args: { city: "Paris" } }],
    });
    expect(trace.transitions.map((transition) => transition.state)).toContain("done");
    expect(trace.outcome).toMatchObject({ outcome: "done", result: "reported: sunny" });
    // The eval's trace reader (`forge watch --traces`) takes it as one of its own.
    const { events } = eventsOfTrace(trace);
    expect(events.filter((event) => event.type === "llm.called")).toHaveLength(4);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", outcome: "done" });

    const replay = await replayWatchedTrace(trace, { workflow, runner: { contextManager } });
    expect(replay).toMatchObject({ identical: true, difference: null, outcome: { outcome: "done", result } });
    expect(replay.replayedMessages).toBe(trace.messages.length);
    expect(replay.recordedMessages).toBeGreaterThanOrEqual(8);
  });

  it("says where a replay differs, replays a recorded backend error, and refuses a trace without its start", async () => {
    const { trace } = await watchedRun();
    const changed = structuredClone(trace);
    changed.exchanges[2] = {
      ...changed.exchanges[2]!,
      response: [{ tool: "get_weather", args: { city: "Rome" } }],
    };
    const replay = await replayWatchedTrace(changed, { workflow, runner: { contextManager } });
    expect(replay.identical).toBe(false);
    expect(replay.difference).toMatch(/^message \d+: recorded .*Paris.* \/ replayed .*Rome/);

    const failing = structuredClone(trace);
    failing.exchanges[0] = {
      ...failing.exchanges[0]!,
      response: null,
      error: { name: "BackendError", message: "HTTP 400: bad request", statusCode: 400, body: "bad request" },
    };
    const failed = await replayWatchedTrace(failing, { workflow, runner: { contextManager } });
    expect(failed.outcome).toMatchObject({ outcome: "failed", error: { name: "BackendError" } });
    expect(failed.identical).toBe(false);

    await expect(
      replayWatchedTrace({ ...trace, startMessages: [] }, { workflow, runner: { contextManager } }),
    ).rejects.toThrow(WatchReplayError);
  });
});
