/**
 * Eval traces (`npm run eval` writes them to `<out>.traces.jsonl`, one run a line) read as watch
 * runs, so `forge watch --traces <file>` shows a batch's runs in the same viewer, offline.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { ForgeError } from "../../core/errors.ts";
import { createWorkflowMachine } from "../../machines/workflow.machine.ts";
import { statechartOf, type WatchEvent, WatchOutcome, watchEventSchema } from "../report/index.ts";

/** A line of an eval traces file that is not a run's trace. */
export class EvalTraceError extends ForgeError {
  constructor(
    readonly file: string,
    readonly line: number,
    detail: string,
  ) {
    super(
      `${file}, line ${line}: ${detail}. Pass --traces the .traces.jsonl file an eval run wrote (npm run eval -- run --out <file>.jsonl), not its rows file.`,
    );
    this.name = "EvalTraceError";
  }
}

const timed = z.object({ at: z.number() });

/** The parts of the eval's `RunTrace` the viewer reads (the rest is ignored). */
const traceSchema = z.object({
  key: z.string(),
  scenario: z.string(),
  config: z.looseObject({ name: z.string() }),
  runId: z.string(),
  startMessages: z.array(z.unknown()),
  messages: z.array(timed.extend({ message: z.unknown() })),
  exchanges: z.array(z.looseObject({ at: z.number() })),
  compactions: z.array(z.looseObject({ at: z.number() })),
  transitions: z.array(z.object({ at: z.number(), state: z.string(), iteration: z.number() })),
});

const FINAL_OUTCOMES: Record<string, WatchOutcome> = {
  done: WatchOutcome.DONE,
  responded: WatchOutcome.DONE,
  failed: WatchOutcome.FAILED,
  cancelled: WatchOutcome.CANCELLED,
};

/** A run id for an eval key (`backend|model|config|scenario|run|seed`). */
export function runIdOfTraceKey(key: string): string {
  return `eval-${key.replace(/[^A-Za-z0-9_-]+/g, "_")}`.slice(0, 100);
}

/** One eval trace as the events a watch source would have sent, in time order. */
export function eventsOfTrace(value: unknown): { runId: string; events: WatchEvent[] } {
  const trace = traceSchema.parse(value);
  const timedEvents: { at: number; order: number; event: unknown }[] = [];
  const push = (at: number, event: Record<string, unknown>) =>
    timedEvents.push({ at, order: timedEvents.length, event: { ...event, at } });
  for (const transition of trace.transitions) push(transition.at, { type: "state.entered", ...transition });
  for (const entry of trace.messages) push(entry.at, { type: "message.appended", message: entry.message });
  for (const exchange of trace.exchanges) push(exchange.at, { ...exchange, type: "llm.called" });
  for (const compaction of trace.compactions)
    push(compaction.at, { ...compaction, type: "context.compacted" });
  timedEvents.sort((a, b) => a.at - b.at || a.order - b.order);
  const lastAt = timedEvents.at(-1)?.at ?? 0;
  const lastState = trace.transitions.at(-1)?.state;
  const raw: unknown[] = [
    {
      type: "run.started",
      at: 0,
      name: `${trace.scenario} × ${trace.config.name}`,
      source: "eval",
      startedAt: 0,
      statechart: statechartOf(createWorkflowMachine({} as never)),
    },
    ...trace.startMessages.map((message) => ({ type: "message.appended", at: 0, message })),
    ...timedEvents.map((entry) => entry.event),
    ...(lastState !== undefined && FINAL_OUTCOMES[lastState] !== undefined
      ? [{ type: "run.finished", at: lastAt, outcome: FINAL_OUTCOMES[lastState], error: null }]
      : []),
  ];
  return { runId: runIdOfTraceKey(trace.key), events: raw.map((event) => watchEventSchema.parse(event)) };
}

/** Every run of an eval traces file. */
export function readEvalTraces(file: string): { runId: string; events: WatchEvent[] }[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const runs: { runId: string; events: WatchEvent[] }[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new EvalTraceError(file, index + 1, `not JSON (${(error as Error).message})`);
    }
    try {
      runs.push(eventsOfTrace(value));
    } catch (error) {
      const detail = error instanceof z.ZodError ? z.prettifyError(error) : (error as Error).message;
      throw new EvalTraceError(file, index + 1, `not an eval run trace (${detail.split("\n")[0]})`);
    }
  });
  return runs;
}
