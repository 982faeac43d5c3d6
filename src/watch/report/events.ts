/**
 * What a watched run reports, event by event: the wire format between a source (a runner, the
 * proxy) and the watch server, and the lines of a run's file on disk. Validated with zod where it
 * enters the server.
 */
import { z } from "zod";
import type { CompactEvent } from "../../context/context-manager.ts";
import type { Message } from "../../core/messages.ts";
import type { LLMResponse } from "../../core/types.ts";

/** A run id: letters, digits, `_` and `-` (it names the run's file), at most 100 characters. */
export const runIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,100}$/, "a run id is 1–100 letters, digits, '_' or '-'");

const statechartSchema = z.object({
  id: z.string(),
  initial: z.string().nullable(),
  states: z.array(z.object({ name: z.string(), final: z.boolean(), targets: z.array(z.string()) })),
});

const messageSchema = z
  .looseObject({
    role: z.string(),
    content: z.string(),
    metadata: z.looseObject({ type: z.string() }),
  })
  .transform((message) => message as unknown as Message);

const responseSchema = z
  .union([
    z.array(z.looseObject({ tool: z.string(), args: z.record(z.string(), z.unknown()) })),
    z.looseObject({ content: z.string() }),
  ])
  .transform((response) => response as LLMResponse);

const errorSchema = z.object({
  name: z.string(),
  message: z.string(),
  statusCode: z.number().optional(),
  body: z.string().optional(),
});

/** Where a run came from. */
export const WatchSource = { RUNNER: "runner", PROXY: "proxy", EVAL: "eval", QUEUE: "queue" } as const;
export type WatchSource = (typeof WatchSource)[keyof typeof WatchSource];

/** How a run ended. */
export const WatchOutcome = { DONE: "done", FAILED: "failed", CANCELLED: "cancelled" } as const;
export type WatchOutcome = (typeof WatchOutcome)[keyof typeof WatchOutcome];

/** One event of a watched run; `at` is milliseconds since the run started. */
export const watchEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("run.started"),
    at: z.number(),
    name: z.string(),
    source: z.enum([WatchSource.RUNNER, WatchSource.PROXY, WatchSource.EVAL, WatchSource.QUEUE]),
    /** The run went on from a checkpoint (a queued run resumed by a worker). */
    resumed: z.boolean().optional(),
    /** Wall-clock start, ms since the epoch. */
    startedAt: z.number(),
    statechart: statechartSchema.nullable(),
  }),
  z.object({
    type: z.literal("state.entered"),
    at: z.number(),
    state: z.string(),
    iteration: z.number(),
    /** The workflow actor's run id (its tool call ids derive from it), on a run's first state. */
    workflowRunId: z.string().optional(),
  }),
  z.object({ type: z.literal("message.appended"), at: z.number(), message: messageSchema }),
  z.object({
    type: z.literal("llm.called"),
    at: z.number(),
    durationMs: z.number(),
    promptTokens: z.number(),
    completionTokens: z.number(),
    response: responseSchema.nullable(),
    error: errorSchema.nullable(),
  }),
  z.object({
    type: z.literal("context.compacted"),
    at: z.number(),
    stepIndex: z.number(),
    tokensBefore: z.number(),
    tokensAfter: z.number(),
    budgetTokens: z.number(),
    messagesBefore: z.number(),
    messagesAfter: z.number(),
    phaseReached: z.number(),
  }),
  z.object({
    type: z.literal("run.finished"),
    at: z.number(),
    outcome: z.enum([WatchOutcome.DONE, WatchOutcome.FAILED, WatchOutcome.CANCELLED]),
    result: z.unknown().optional(),
    error: errorSchema.nullable(),
  }),
]);

/** One event of a watched run. */
export type WatchEvent = z.output<typeof watchEventSchema>;

/** The body a source POSTs to `/api/runs/:runId/events`. */
export const watchBatchSchema = z.object({ events: z.array(watchEventSchema).min(1) });

/**
 * One LLM call as recorded (an `llm.called` event without its type): when it started, how long it
 * took, its tokens, and what it returned.
 */
export interface TimelineExchange {
  /** Milliseconds since the run started. */
  at: number;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
  response: LLMResponse | null;
  error: { name: string; message: string; statusCode?: number; body?: string } | null;
}

/** A compaction with its time (ms since the run started): a `context.compacted` event without its type. */
export interface TimelineCompaction extends CompactEvent {
  at: number;
}
