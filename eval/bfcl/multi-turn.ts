/**
 * A multi-turn case answered as BFCL's FC handler answers it (`BaseHandler.inference_multi_turn_FC`
 * with `OpenAICompletionsHandler`'s FC methods): each user turn is appended to the history, the
 * target is asked, the answer's calls run on the case's simulated APIs and their results go back
 * as tool messages, step after step, until an answer the handler cannot execute (no call, or one
 * it cannot decode) ends the turn. Past BFCL's step limit the case is given up (force-quit): the
 * turns after it are not asked, and BFCL's checker fails a case with fewer turns than its truth.
 */
import { z } from "zod";
import type { MultiTurnCase } from "./cases.ts";
import type { SimulatedApis, StepResponses } from "./simulated-apis.ts";
import type { BfclAnswer, BfclCall, BfclTarget, BfclWireMessage } from "./targets.ts";

/** BFCL's `MAXIMUM_STEP_LIMIT` (constants/default_prompts.py): steps with calls per turn before a force-quit. */
export const MAXIMUM_STEP_LIMIT = 20;

/** One step of a turn: what the target answered and, when its calls ran, their results. */
export const multiTurnStepSchema = z.object({
  calls: z.array(z.object({ name: z.string(), arguments: z.string() })),
  text: z.string(),
  /** The tool results fed back, one per call; empty when the step ended the turn. */
  results: z.array(z.string()),
});

/** One step of a turn. */
export type MultiTurnStep = z.infer<typeof multiTurnStepSchema>;

/** What a target answered to a multi-turn case: per turn, its steps, and the guardrails' counts. */
export interface MultiTurnAnswer extends Omit<BfclAnswer, "callIds" | "message"> {
  turns: MultiTurnStep[][];
  /** More than {@link MAXIMUM_STEP_LIMIT} steps with calls in one turn: the later turns were not asked. */
  forceQuit: boolean;
}

/**
 * A step as BFCL's FC handler records it (`model_responses`): the calls as `{name: arguments}` when
 * the answer had any, else its text. What the bridge decodes, executes and scores.
 */
export function stepResponses(step: Pick<MultiTurnStep, "calls" | "text">): StepResponses {
  return step.calls.length > 0 ? step.calls.map((call) => ({ [call.name]: call.arguments })) : step.text;
}

/**
 * Answer `item` on `target`, executing its calls on `apis` (see the module comment). `turns` is
 * filled as the case goes, so that a case cut short (its deadline) still shows what it did.
 */
export async function answerMultiTurn(
  item: MultiTurnCase,
  target: BfclTarget,
  apis: SimulatedApis,
  signal: AbortSignal,
  turns: MultiTurnStep[][] = [],
): Promise<MultiTurnAnswer> {
  const totals = { llmCalls: 0, nudges: 0, rescues: 0, renamed: 0, gaveUp: false, prose: false };
  const messages: BfclWireMessage[] = [];
  let forceQuit = false;
  await apis.begin(item);
  try {
    for (const turn of item.turns) {
      messages.push(...turn);
      const steps: MultiTurnStep[] = [];
      turns.push(steps);
      for (let count = 0; ; ) {
        const answer = await target.ask({ messages, tools: item.tools }, signal);
        messages.push(answer.message);
        addCounts(totals, answer);
        const step: MultiTurnStep = { calls: answer.calls, text: answer.text, results: [] };
        steps.push(step);
        const outcome = await apis.step(item.id, stepResponses(step));
        if (outcome.status !== "executed") break;
        step.results = outcome.results;
        messages.push(...toolMessages(outcome.results, answer.callIds));
        count += 1;
        if (count > MAXIMUM_STEP_LIMIT) {
          forceQuit = true;
          break;
        }
      }
      if (forceQuit) break;
    }
  } finally {
    await apis.end(item.id);
  }
  const last = turns.at(-1)?.at(-1);
  return {
    ...totals,
    calls: turns.flatMap((steps) => steps.flatMap((step): BfclCall[] => step.calls)),
    text: last?.text ?? "",
    turns,
    forceQuit,
  };
}

/** The FC handler's tool messages: each result with the id of its call (`zip`: the shorter wins). */
export function toolMessages(results: readonly string[], callIds: readonly string[]): BfclWireMessage[] {
  const count = Math.min(results.length, callIds.length);
  return Array.from({ length: count }, (_, index) => ({
    role: "tool",
    content: results[index],
    tool_call_id: callIds[index],
  }));
}

function addCounts(
  totals: Pick<MultiTurnAnswer, "llmCalls" | "nudges" | "rescues" | "renamed" | "gaveUp" | "prose">,
  answer: BfclAnswer,
): void {
  totals.llmCalls += answer.llmCalls;
  totals.nudges += answer.nudges;
  totals.rescues += answer.rescues;
  totals.renamed += answer.renamed;
  totals.gaveUp ||= answer.gaveUp;
  totals.prose ||= answer.prose;
}
