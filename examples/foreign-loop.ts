/**
 * forge's guardrails inside a loop you own (middleware mode). The same misbehaving model — prose
 * instead of a call, a call wrapped in a fenced JSON block, a premature final answer — is driven
 * twice: (a) with the two-call `Guardrails` API (`check` / `record`) and (b) with the granular
 * pieces (`ResponseValidator`, `StepEnforcer`, `ErrorTracker`). The synthetic `respond` tool is the
 * terminal tool, so the final answer is a tool call too.
 *
 * Your loop owns what WorkflowRunner would otherwise do: the iteration cap, cancellation, context
 * management and streaming. Here the model is a ScriptedClient; swap in any `LLMClient`.
 *
 * Run it: `npx tsx examples/foreign-loop.ts`
 */
import { pathToFileURL } from "node:url";
import {
  defineTool,
  ErrorTracker,
  Guardrails,
  type LLMClient,
  type LLMResponse,
  type Nudge,
  ResponseValidator,
  respondTool,
  StepEnforcer,
  type ToolCall,
  type ToolDef,
} from "forge-guardrails";
import { ScriptedClient, text, toolCall } from "forge-guardrails/testing";
import { z } from "zod";

const searchDocs = defineTool({
  name: "search_docs",
  description: "Search the documentation; returns matching document ids",
  parameters: z.object({ query: z.string() }),
  execute: ({ query }) => [{ docId: "slot-worker", title: `SlotWorker (matched '${query}')` }],
});

const readDoc = defineTool({
  name: "read_doc",
  description: "Read one document by id",
  parameters: z.object({ docId: z.string() }),
  execute: ({ docId }) =>
    docId === "slot-worker"
      ? "SlotWorker runs one workflow at a time; lower ranks run first and preempt."
      : `No document '${docId}'`,
});

const tools: Record<string, ToolDef> = Object.fromEntries(
  [searchDocs, readDoc, respondTool()].map((tool) => [tool.spec.name, tool]),
);
const toolNames = Object.keys(tools);
const toolSpecs = Object.values(tools).map((tool) => tool.spec);
const requiredSteps = ["search_docs", "read_doc"];
const terminalTool = "respond";
/** Your loop's own iteration cap. */
const maxIterations = 8;

/** The final answer the scripted model gives. */
export const FINAL_ANSWER = "Lower ranks run first, and a more urgent job preempts the running one.";

/** A small model on a bad day: prose, a fenced call, a premature answer, then the right calls. */
export function misbehavingModel(): ScriptedClient {
  return new ScriptedClient([
    text("Sure! Let me search the documentation for that."),
    text('```json\n{"tool": "search_docs", "args": {"query": "slot worker rank"}}\n```'),
    toolCall(terminalTool, { message: "It just runs them in order." }),
    toolCall("read_doc", { docId: "slot-worker" }),
    toolCall(terminalTool, { message: FINAL_ANSWER }),
  ]);
}

/** What one loop did. */
export interface LoopReport {
  answer: string;
  /** One entry per LLM call: what the loop did with the response. */
  actions: string[];
  llmCalls: number;
  /** The conversation as sent on the wire (OpenAI chat format). */
  messages: Record<string, unknown>[];
}

/** What `main` reports. */
export interface ForeignLoopOutcome {
  guardrails: LoopReport;
  granular: LoopReport;
}

interface Outcome {
  call: ToolCall;
  ok: boolean;
  content: string;
  value: unknown;
  error?: Error;
}

/** (a) The two-call API: `check` each response, `record` what ran. */
export async function runWithGuardrails(client: LLMClient, log: (line: string) => void): Promise<LoopReport> {
  const guardrails = new Guardrails({ toolNames, terminalTool, requiredSteps });
  const conversation = new Conversation();
  const actions: string[] = [];
  for (let iteration = 1; iteration <= maxIterations; iteration++) {
    const response = await client.send(conversation.messages, toolSpecs);
    const result = guardrails.check(response);
    if (result.action === "fatal") throw new Error(`Guardrails gave up: ${result.reason}`);
    if (result.action !== "execute") {
      actions.push(`${result.action}${result.toolCalls ? ` ${names(result.toolCalls)}` : ""}`);
      log(`  #${iteration} ${result.action}: ${firstLine(result.nudge?.content)}`);
      conversation.reject(response, result.toolCalls, result.nudge);
      continue;
    }
    const calls = result.toolCalls ?? [];
    actions.push(executeLabel(response, calls));
    log(`  #${iteration} ${executeLabel(response, calls)}`);
    const outcomes = await executeBatch(calls);
    conversation.answer(outcomes);
    // One call for the whole batch, with the loop's rules: the calls that succeeded count as steps
    // even when another call failed, and a failing batch counts one tool error.
    const { done, fatal } = guardrails.recordBatch(
      outcomes.map((outcome) => ({
        tool: outcome.call.tool,
        args: outcome.call.args,
        ok: outcome.ok,
        error: outcome.error,
      })),
    );
    if (fatal) throw new Error(`Guardrails gave up: ${fatal.reason}`);
    if (done) return report(outcomes, actions, iteration, conversation);
  }
  throw new Error(`No answer within ${maxIterations} LLM calls`);
}

/** (b) The granular API: validator, step enforcer and error tracker, each asked in turn. */
export async function runWithComponents(client: LLMClient, log: (line: string) => void): Promise<LoopReport> {
  const validator = new ResponseValidator(toolNames);
  const enforcer = new StepEnforcer({ requiredSteps, terminalTools: [terminalTool] });
  const errors = new ErrorTracker({ maxRetries: 3, maxToolErrors: 2 });
  const conversation = new Conversation();
  const actions: string[] = [];
  for (let iteration = 1; iteration <= maxIterations; iteration++) {
    const response = await client.send(conversation.messages, toolSpecs);
    const validation = validator.validate(response);
    if (validation.needsRetry && validation.nudge) {
      errors.recordRetry();
      if (errors.retriesExhausted) throw new Error(`No valid tool call after ${errors.retries} tries`);
      actions.push(validation.nudge.kind === "retry" ? "retry" : "tool_error");
      log(`  #${iteration} validator: ${firstLine(validation.nudge.content)}`);
      conversation.reject(response, undefined, validation.nudge);
      continue;
    }
    errors.resetRetries();
    const calls = validation.toolCalls ?? [];
    const stepCheck = enforcer.check(calls);
    const check = stepCheck.needsNudge ? stepCheck : enforcer.checkPrerequisites(calls);
    if (check.needsNudge && check.nudge) {
      if (enforcer.prematureExhausted || enforcer.prereqExhausted) {
        throw new Error(`Step enforcement gave up; pending: ${enforcer.pending().join(", ")}`);
      }
      actions.push(`step_blocked ${names(calls)}`);
      log(`  #${iteration} enforcer: ${firstLine(check.nudge.content)}`);
      conversation.reject(response, calls, check.nudge);
      continue;
    }
    actions.push(executeLabel(response, calls));
    log(`  #${iteration} ${executeLabel(response, calls)}`);
    const outcomes = await executeBatch(calls);
    conversation.answer(outcomes);
    for (const outcome of outcomes) {
      if (outcome.ok) enforcer.record(outcome.call.tool, outcome.call.args);
    }
    const clean = outcomes.every((outcome) => outcome.ok);
    errors.recordResult(clean);
    if (errors.toolErrorsExhausted) throw new Error("Tools kept failing");
    if (!clean) continue;
    enforcer.resetPremature();
    enforcer.resetPrereqViolations();
    const terminal = outcomes.some((outcome) => outcome.call.tool === terminalTool);
    if (terminal && enforcer.isSatisfied()) return report(outcomes, actions, iteration, conversation);
  }
  throw new Error(`No answer within ${maxIterations} LLM calls`);
}

/** Run both loops against the same misbehaving model and print what happened. */
export async function main(log: (line: string) => void = console.log): Promise<ForeignLoopOutcome> {
  const question = "How does SlotWorker decide which job runs next?";
  log(`Q: ${question}`);
  log("(a) Guardrails.check / record:");
  const firstModel = misbehavingModel();
  const guardrails = await runWithGuardrails(firstModel, log);
  log(`  answer: ${guardrails.answer}`);
  log("(b) ResponseValidator + StepEnforcer + ErrorTracker:");
  const secondModel = misbehavingModel();
  const granular = await runWithComponents(secondModel, log);
  log(`  answer: ${granular.answer}`);
  // Both loops used every scripted response: nothing was skipped or retried beyond the script.
  firstModel.assertDone();
  secondModel.assertDone();
  return { guardrails, granular };
}

/** The wire conversation of one loop, with tool-call ids paired to their replies. */
class Conversation {
  readonly messages: Record<string, unknown>[] = [
    { role: "system", content: "Answer questions about forge. Search, read, then respond." },
    { role: "user", content: "How does SlotWorker decide which job runs next?" },
  ];
  #nextId = 0;

  /** A response that was not run: keep what the model said and route the nudge back. */
  reject(response: LLMResponse, calls: ToolCall[] | undefined, nudge: Nudge | undefined): void {
    if (!nudge) return;
    if (nudge.role === "tool" && calls && calls.length > 0) {
      // A tool-role nudge answers the rejected calls, so every call id gets a reply.
      // Its content is one line per call of the batch, in call order.
      const ids = this.#appendCalls(calls);
      const lines = nudge.content.split("\n");
      ids.forEach((id, index) => {
        const content = lines.length === ids.length ? (lines[index] as string) : nudge.content;
        this.messages.push({ role: "tool", tool_call_id: id, content });
      });
      return;
    }
    const said = Array.isArray(response) ? JSON.stringify(response) : response.content;
    this.messages.push({ role: "assistant", content: said }, { role: "user", content: nudge.content });
  }

  /** Calls that ran, with their results. */
  answer(outcomes: Outcome[]): void {
    const ids = this.#appendCalls(outcomes.map((outcome) => outcome.call));
    outcomes.forEach((outcome, index) => {
      this.messages.push({ role: "tool", tool_call_id: ids[index], content: outcome.content });
    });
  }

  #appendCalls(calls: ToolCall[]): string[] {
    const ids = calls.map(() => `call_${++this.#nextId}`);
    this.messages.push({
      role: "assistant",
      content: "",
      tool_calls: calls.map((call, index) => ({
        id: ids[index],
        type: "function",
        function: { name: call.tool, arguments: JSON.stringify(call.args) },
      })),
    });
    return ids;
  }
}

/** Run calls in order; a bad argument or a throwing tool becomes an error result for the model. */
async function executeBatch(calls: ToolCall[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const call of calls) {
    const tool = tools[call.tool];
    try {
      if (!tool) throw new Error(`Unknown tool '${call.tool}'`);
      const value = await tool.execute(tool.spec.parameters.parse(call.args));
      outcomes.push({
        call,
        ok: true,
        value,
        content: typeof value === "string" ? value : JSON.stringify(value),
      });
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught));
      outcomes.push({
        call,
        ok: false,
        value: null,
        content: `[ToolError] ${error.name}: ${error.message}`,
        error,
      });
    }
  }
  return outcomes;
}

function report(
  outcomes: Outcome[],
  actions: string[],
  llmCalls: number,
  conversation: Conversation,
): LoopReport {
  const terminal = outcomes.find((outcome) => outcome.call.tool === terminalTool);
  return { answer: String(terminal?.value), actions, llmCalls, messages: conversation.messages };
}

/** `execute <tools>`, noting calls the validator rescued from a text response. */
function executeLabel(response: LLMResponse, calls: readonly ToolCall[]): string {
  return `execute ${names(calls)}${Array.isArray(response) ? "" : " (rescued from text)"}`;
}

function names(calls: readonly ToolCall[]): string {
  return calls.map((call) => call.tool).join(", ");
}

function firstLine(content: string | undefined): string {
  return (content ?? "").split("\n")[0] ?? "";
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
