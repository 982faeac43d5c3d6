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
import type { BfclAnswer, BfclTarget, BfclWireMessage } from "./targets.ts";

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

/** A multi-turn answer before its first step. */
export function emptyMultiTurnAnswer(): MultiTurnAnswer {
  return {
    calls: [],
    text: "",
    llmCalls: 0,
    nudges: 0,
    rescues: 0,
    gaveUp: false,
    prose: false,
    renamed: 0,
    declined: 0,
    turns: [],
    forceQuit: false,
  };
}

/**
 * Answer `item` on `target`, executing its calls on `apis` (see the module comment). `answer` is
 * filled step by step, so that a case cut short (its deadline) still shows what it did and cost.
 */
export async function answerMultiTurn(
  item: MultiTurnCase,
  target: BfclTarget,
  apis: SimulatedApis,
  signal: AbortSignal,
  answer: MultiTurnAnswer = emptyMultiTurnAnswer(),
): Promise<MultiTurnAnswer> {
  const messages: BfclWireMessage[] = [];
  await apis.begin(item);
  try {
    for (const turn of item.turns) {
      messages.push(...turn);
      const steps: MultiTurnStep[] = [];
      answer.turns.push(steps);
      for (let count = 0; ; ) {
        const reply = await target.ask({ messages, tools: item.tools }, signal);
        messages.push(reply.message);
        const step: MultiTurnStep = { calls: reply.calls, text: reply.text, results: [] };
        steps.push(step);
        addStep(answer, reply);
        const outcome = await apis.step(item.id, stepResponses(step));
        if (outcome.status !== "executed") break;
        step.results = outcome.results;
        messages.push(...toolMessages(outcome.results, reply.callIds));
        count += 1;
        if (count > MAXIMUM_STEP_LIMIT) {
          answer.forceQuit = true;
          break;
        }
      }
      if (answer.forceQuit) break;
    }
  } finally {
    await apis.end(item.id);
  }
  return answer;
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

/** Count one step's answer into the case's: its calls, its text (the last step's) and the guardrails' counts. */
function addStep(answer: MultiTurnAnswer, reply: BfclAnswer): void {
  answer.calls.push(...reply.calls);
  answer.text = reply.text;
  answer.llmCalls += reply.llmCalls;
  answer.nudges += reply.nudges;
  answer.rescues += reply.rescues;
  answer.renamed += reply.renamed;
  answer.declined += reply.declined;
  answer.gaveUp ||= reply.gaveUp;
  answer.prose ||= reply.prose;
}
