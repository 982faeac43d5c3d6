/**
 * `npm run eval -- replay`: re-run a recorded run from its trace (its persisted start snapshot, its
 * runId and the recorded LLM responses, through a ScriptedClient) and check that the loop
 * produces the identical history.
 */
import { BackendError } from "../../src/core/errors.ts";
import { ScriptedClient, type ScriptStep } from "../../src/testing/index.ts";
import { LoopKind } from "../ablation.ts";
import { readTraces } from "../report/write-report.ts";
import { runForge } from "../run/forge-run.ts";
import type { RunTrace } from "../run/types.ts";
import { scenarioById } from "../scenarios/index.ts";

/** The outcome of a replay. */
export interface ReplayResult {
  identical: boolean;
  /** The first difference, when not identical. */
  difference: string | null;
  recordedMessages: number;
  replayedMessages: number;
}

/** Replay one trace. */
export async function replayTrace(trace: RunTrace): Promise<ReplayResult> {
  if (trace.config.loop !== LoopKind.FORGE)
    throw new Error(`Run ${trace.key} used the ${trace.config.loop} loop; only forge runs replay`);
  const scenario = scenarioById(trace.scenario);
  if (!scenario) throw new Error(`Run ${trace.key} names unknown scenario '${trace.scenario}'`);
  const script: ScriptStep[] = trace.exchanges.map((exchange) =>
    exchange.error
      ? new BackendError(exchange.error.statusCode ?? 500, exchange.error.body ?? "", exchange.error.message)
      : (exchange.response ?? { content: "" }),
  );
  const replayed = await runForge({
    key: trace.key,
    scenario,
    config: trace.config,
    client: new ScriptedClient(script),
    runId: trace.runId,
    initialSnapshot: trace.initialSnapshot,
  });
  const strip = (entries: RunTrace["messages"]) => entries.map((entry) => JSON.stringify(entry.message));
  const recorded = strip(trace.messages);
  const again = strip(replayed.trace.messages);
  const index = recorded.findIndex((message, position) => message !== again[position]);
  const firstDifference =
    index >= 0 ? index : recorded.length !== again.length ? Math.min(recorded.length, again.length) : -1;
  return {
    identical: firstDifference === -1,
    difference:
      firstDifference === -1
        ? null
        : `message ${firstDifference + 1}: recorded ${recorded[firstDifference] ?? "(none)"} / replayed ${again[firstDifference] ?? "(none)"}`,
    recordedMessages: recorded.length,
    replayedMessages: again.length,
  };
}

/** Read a trace by key from a traces file (the first trace when no key is given). */
export function findTrace(file: string, key?: string): RunTrace {
  const traces = readTraces(file, key ? new Set([key]) : undefined);
  const trace = key ? traces.get(key) : traces.values().next().value;
  if (!trace) throw new Error(key ? `No trace '${key}' in ${file}` : `No traces in ${file}`);
  return trace;
}
