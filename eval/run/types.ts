/**
 * What one eval run produces: its measurements (a JSONL row's metrics) and its trace (the full
 * record a timeline is drawn from and a replay starts from).
 */
import type { CompactEvent } from "../../src/context/index.ts";
import type { Message } from "../../src/core/messages.ts";
import type { LoopConfig } from "../ablation.ts";
import type { TokenSource } from "../metrics/run-metrics.ts";
import type { TerminalCall } from "../scenarios/scenario.ts";
import type { RunContextLimit } from "./context-limit.ts";
import type { RecordedExchange } from "./recording-client.ts";

/** How a run ended. */
export const RunStatus = {
  /** A terminal tool succeeded. */
  DONE: "done",
  /** The loop gave up (retries, step enforcement, tool errors, iterations) or stopped without a terminal call. */
  FAILED: "failed",
  /** The backend or the harness failed (HTTP error, connection refused, crash); a prompt over the context is FAILED with `context_exceeded`. */
  ERROR: "error",
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** Nudges sent during a run, by kind. */
export interface NudgeCounts {
  retry: number;
  unknown_tool: number;
  step: number;
  prerequisite: number;
}

/** The metrics of one run. */
export interface RunMeasurement {
  status: RunStatus;
  completed: boolean;
  /** Completed, the terminal arguments valid, and (stateful) the final tool state valid. */
  accurate: boolean;
  answerProblem: string | null;
  stateProblem: string | null;
  /** `max_iterations`, `retries_exhausted`, `step_enforcement`, `tool_execution`, `context_exceeded`, `backend_error`, `no_terminal_call`, … */
  failureKind: string | null;
  errorName: string | null;
  errorMessage: string | null;
  terminal: TerminalCall | null;
  iterations: number;
  idealIterations: number;
  wastedCalls: number;
  /** ideal / actual iterations for a completed run, else null. */
  efficiency: number | null;
  toolCalls: number;
  toolErrors: number;
  textResponses: number;
  rescues: number;
  nudges: NudgeCounts;
  /** LLM calls sent with `toolChoice: "required"`: the retries after a prose answer the loop forced. */
  forcedRetries: number;
  /** Switches up to a stronger client (`reforged+escalation`); absent for other configs. */
  escalations?: number;
  /** LLM calls a stronger client served; absent for other configs. */
  escalatedCalls?: number;
  compactions: number;
  maxPhase: number;
  /** Prompt tokens summed over the calls: the backend's counts where it reported them (see `tokenSource`). */
  inputTokens: number;
  outputTokens: number;
  peakContextTokens: number;
  /** Prompt tokens served from the backend's prompt cache, where it said. */
  cachedTokens: number;
  /** Tokens the backend evaluated: the first prompt in full, later prompts less cache hits, all generated (see `evaluatedTokensOf`). */
  evaluatedTokens: number;
  /** `backend`: every call's usage came from the backend; `estimate`: chars/4 for all; `mixed`; `none`: no call. */
  tokenSource: TokenSource;
  wallMs: number;
  startedFromSnapshot: boolean;
}

/** A compaction event with its time. */
export interface TimedCompaction extends CompactEvent {
  at: number;
}

/** The full record of one run. */
export interface RunTrace {
  key: string;
  scenario: string;
  config: LoopConfig;
  runId: string;
  /** The persisted snapshot the run started from (JSON), when it did not start fresh. */
  initialSnapshot: unknown;
  /** The history the run started with (the snapshot's, or the system prompt and user message). */
  startMessages: Message[];
  /** Every message appended during the run, with its time (ms since the start). */
  messages: { at: number; message: Message }[];
  exchanges: RecordedExchange[];
  compactions: TimedCompaction[];
  /** Statechart states entered, in order. */
  transitions: { at: number; state: string; iteration: number }[];
  /** The persisted snapshot at the end (null for the peer loop, which has none). */
  finalSnapshot: unknown;
  /** The run's limits in the backend's real tokens, and each request's prompt tokens, when they were counted. */
  contextLimit?: RunContextLimit & { promptTokens: number[] };
}

/** A run's measurements and trace. */
export interface RunOutcome {
  measurement: RunMeasurement;
  trace: RunTrace;
}
