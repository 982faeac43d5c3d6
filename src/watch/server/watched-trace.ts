/**
 * A watched run written in the eval's trace format (`RunTrace`: start messages, timed messages,
 * recorded LLM exchanges, compactions, states entered), and replayed from it: the recorded answers
 * are sent back in order through a fresh `WorkflowRunner`, and the history it builds is compared
 * with the recorded one, as `npm run eval -- replay` does for an eval run.
 */
import { BackendError, ForgeError } from "../../core/errors.ts";
import { type Message, MessageType } from "../../core/messages.ts";
import { ChunkType, type LLMClient, type LLMResponse, type StreamChunk } from "../../core/types.ts";
import type { Workflow } from "../../core/workflow.ts";
import { WorkflowRunner, type WorkflowRunnerOptions } from "../../loop/runner.ts";
import type { TimelineCompaction, TimelineExchange } from "../report/index.ts";
import type { RunRecord } from "../view/index.ts";

/**
 * A watched run as an eval trace. `scenario` is `watch:<run name>` and `config` names the source:
 * the eval's `replay` command looks scenarios up by id, so it does not replay these; use
 * `replayWatchedTrace` with the run's workflow.
 */
export interface WatchedRunTrace {
  key: string;
  scenario: string;
  config: { name: string; source: string; resumed: boolean };
  runId: string;
  initialSnapshot: null;
  startMessages: Message[];
  messages: { at: number; message: Message }[];
  exchanges: (TimelineExchange & { tokenSource: "estimate" })[];
  compactions: TimelineCompaction[];
  transitions: { at: number; state: string; iteration: number }[];
  finalSnapshot: null;
  /** How the run ended, or null while it runs. */
  outcome: { outcome: string; result?: unknown; error: { name: string; message: string } | null } | null;
}

const START_TYPES: ReadonlySet<string> = new Set([MessageType.SYSTEM_PROMPT, MessageType.USER_INPUT]);

/**
 * A watched run's trace: its leading system prompt and user message are its start messages. It
 * covers the events the record holds: for a run whose older events left the server's memory
 * (`record.dropped > 0`), build a record from `RunStore.allEvents` first (as `trace.json` does).
 */
export function traceOfRun(record: RunRecord): WatchedRunTrace {
  const { messages } = record.trace;
  let starts = 0;
  while (starts < messages.length && START_TYPES.has(messages[starts]?.message.metadata.type ?? "")) starts++;
  const finished = record.finished;
  return {
    key: record.runId,
    scenario: `watch:${record.name}`,
    config: { name: record.source, source: record.source, resumed: record.resumed },
    // The workflow actor's run id: its tool call ids derive from it, so a replay must reuse it.
    runId: record.workflowRunId ?? record.runId,
    initialSnapshot: null,
    startMessages: messages.slice(0, starts).map((entry) => entry.message),
    messages: messages.slice(starts),
    exchanges: record.trace.exchanges.map((exchange) => ({ ...exchange, tokenSource: "estimate" })),
    compactions: record.trace.compactions,
    transitions: record.trace.transitions,
    finalSnapshot: null,
    outcome:
      finished === null
        ? null
        : {
            outcome: finished.outcome,
            ...(finished.result !== undefined && { result: finished.result }),
            error: finished.error,
          },
  };
}

/** A trace that cannot be replayed as given. */
export class WatchReplayError extends ForgeError {
  constructor(
    readonly runId: string,
    detail: string,
  ) {
    super(`Cannot replay watched run ${runId}: ${detail}.`);
    this.name = "WatchReplayError";
  }
}

/** The outcome of a replay, as the eval's `replayTrace` reports it, with the run's result. */
export interface WatchReplayResult {
  identical: boolean;
  /** The first difference, when not identical. */
  difference: string | null;
  recordedMessages: number;
  replayedMessages: number;
  /** The replayed run's outcome: `done` with its result, or the typed error's name. */
  outcome:
    | { outcome: "done"; result: unknown }
    | { outcome: "failed"; error: { name: string; message: string } };
}

/**
 * Replay a watched run's trace with its workflow: the recorded answers (and backend errors) in
 * order, through a runner built from `runner` (its client is replaced). A run resumed from a
 * checkpoint has no start messages in its trace and does not replay.
 * @example
 * const trace = await (await fetch(`${url}/runs/${runId}/trace.json`)).json();
 * const replay = await replayWatchedTrace(trace, { workflow, runner: { contextManager } });
 * if (!replay.identical) console.error(replay.difference);
 */
export async function replayWatchedTrace(
  trace: WatchedRunTrace,
  options: { workflow: Workflow; runner: Omit<WorkflowRunnerOptions, "client"> },
): Promise<WatchReplayResult> {
  if (trace.config.resumed || trace.startMessages.length === 0) {
    throw new WatchReplayError(
      trace.runId,
      "its trace has no start messages (it was resumed from a checkpoint, or the watch server got its events from the middle); replay the run it resumed",
    );
  }
  const script = trace.exchanges.map((exchange) => exchange);
  let next = 0;
  const answer = (): LLMResponse => {
    const exchange = script[next++];
    if (exchange === undefined) {
      throw new WatchReplayError(
        trace.runId,
        `the runner asked for answer ${next}, the trace recorded ${script.length}`,
      );
    }
    if (exchange.error !== null) {
      throw new BackendError(
        exchange.error.statusCode ?? 500,
        exchange.error.body ?? "",
        exchange.error.message,
      );
    }
    return exchange.response ?? { content: "" };
  };
  const client: LLMClient = {
    apiFormat: "ollama",
    send: async () => answer(),
    async *sendStream() {
      yield { type: ChunkType.FINAL, response: answer() } as StreamChunk;
    },
    getContextLength: async () => null,
  };
  const replayed: Message[] = [];
  const runner = new WorkflowRunner({
    ...options.runner,
    client,
    onMessage: (message) => {
      options.runner.onMessage?.(message);
      replayed.push(message);
    },
  });
  const userMessage = trace.startMessages.find((message) => message.metadata.type === MessageType.USER_INPUT);
  let outcome: WatchReplayResult["outcome"];
  try {
    const result = await runner.run(options.workflow, userMessage?.content ?? "", {
      initialMessages: trace.startMessages,
      runId: trace.runId,
    });
    outcome = { outcome: "done", result };
  } catch (error) {
    outcome = {
      outcome: "failed",
      error: { name: (error as Error).name, message: (error as Error).message },
    };
  }
  const recorded = trace.messages.map((entry) => JSON.stringify(entry.message));
  const again = replayed.map((message) => JSON.stringify(message));
  const index = recorded.findIndex((message, position) => message !== again[position]);
  const first =
    index >= 0 ? index : recorded.length !== again.length ? Math.min(recorded.length, again.length) : -1;
  return {
    identical: first === -1,
    difference:
      first === -1
        ? null
        : `message ${first + 1}: recorded ${recorded[first] ?? "(none)"} / replayed ${again[first] ?? "(none)"}`,
    recordedMessages: recorded.length,
    replayedMessages: again.length,
    outcome,
  };
}
