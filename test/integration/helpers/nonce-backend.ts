/**
 * A deterministic backend for driving real coding agents through the proxy: a step for the
 * scripted backend (`test/proxy/helpers/scripted-backend.ts`) that can only reach its final answer
 * if the agent really ran the tool call it was given. Its first answer to the task calls the
 * agent's own shell tool with a command that writes a random nonce to a file and prints it
 * reversed; only a request whose tool result holds the reversed nonce (which appears nowhere
 * else, so only running the command yields it) gets the final answer, which carries a second
 * nonce; any other tool result gets an error text without it.
 */
import { randomBytes } from "node:crypto";
import type { BackendReply, BackendRequest, BackendStep } from "../../proxy/helpers/scripted-backend.ts";

/** One run's secrets and the command the agent is asked to run. */
export interface NonceTask {
  /** Marks the task's prompt, so the backend tells it from the agent's side requests. */
  taskId: string;
  /** Written to {@link NonceTask.file} by the command. */
  nonce: string;
  /** The nonce reversed: what the tool result must contain. */
  proof: string;
  /** Only in the final answer, which the backend gives only after the proof came back. */
  finalNonce: string;
  /** The file the command writes, relative to the agent's working directory. */
  file: string;
  /** The shell command of the tool call. */
  command: string;
  /** The prompt to give the agent. */
  prompt: string;
}

/** A fresh task with random nonces. */
export function createNonceTask(file = "forge-proof.txt"): NonceTask {
  const hex = () => randomBytes(8).toString("hex");
  const taskId = `task-${hex()}`;
  const nonce = `nonce-${hex()}`;
  return {
    taskId,
    nonce,
    proof: [...nonce].reverse().join(""),
    finalNonce: `final-${hex()}`,
    file,
    command: `printf '%s\\n' ${nonce} > ${file} && rev ${file}`,
    prompt: `Run the shell command you are given for ${taskId}, then report what it printed.`,
  };
}

/** What the backend decided to answer one chat-completions request. */
export type NonceDecision =
  | { kind: "text"; text: string; why: "side-request" | "final" | "no-proof" | "no-shell-tool" }
  | { kind: "tool_call"; name: string; args: Record<string, unknown> };

interface ChatTool {
  function?: { name?: string; parameters?: JsonSchema };
}
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}
interface ChatMessage {
  role?: string;
  content?: unknown;
}

/**
 * The answer to one request (a pure function of its body): a side request (one without the
 * task's id or without tools: a title, a summary) gets a short text; the task gets a call to `shellTool` until a
 * tool result comes back, then the final answer when that result holds the proof, else an error
 * text.
 */
export function decideNonceReply(
  body: Record<string, unknown>,
  task: NonceTask,
  shellTool: string,
): NonceDecision {
  const messages = (Array.isArray(body.messages) ? body.messages : []) as ChatMessage[];
  const tools = (Array.isArray(body.tools) ? body.tools : []) as ChatTool[];
  const tool = tools.find((candidate) => candidate.function?.name === shellTool);
  const isTask = messages.some(
    (message) => message.role === "user" && textOf(message.content).includes(task.taskId),
  );
  // A title, a summary or a warm-up: not the task, or the task without the agent's tools.
  if (!isTask || tools.length === 0) return { kind: "text", text: "Forge agent test", why: "side-request" };
  const toolResults = messages
    .filter((message) => message.role === "tool")
    .map((message) => textOf(message.content));
  if (toolResults.some((result) => result.includes(task.proof))) {
    return { kind: "text", text: `The command ran. Final code: ${task.finalNonce}`, why: "final" };
  }
  if (toolResults.length > 0) {
    return {
      kind: "text",
      text: `ERROR: the tool result does not hold the command's output; it was: ${toolResults.join(" | ").slice(0, 300)}`,
      why: "no-proof",
    };
  }
  if (tool === undefined) {
    const names = tools.map((candidate) => candidate.function?.name).join(", ");
    return { kind: "text", text: `ERROR: no tool named ${shellTool} among: ${names}`, why: "no-shell-tool" };
  }
  return {
    kind: "tool_call",
    name: shellTool,
    args: shellArguments(tool.function?.parameters, task.command),
  };
}

/**
 * Arguments for a shell tool, read from its JSON schema: the command goes in `command` or `cmd`
 * (an argv array when the schema says array), a `description` is given when the tool has one,
 * and every other required boolean is false (Qwen Code's `is_background`).
 */
export function shellArguments(schema: JsonSchema | undefined, command: string): Record<string, unknown> {
  const properties = schema?.properties ?? {};
  const key = ["command", "cmd"].find((name) => name in properties) ?? "command";
  const args: Record<string, unknown> = {
    [key]: properties[key]?.type === "array" ? ["bash", "-lc", command] : command,
  };
  if ("description" in properties) args.description = "Write the proof file and print it reversed";
  for (const name of schema?.required ?? []) {
    if (!(name in args) && properties[name]?.type === "boolean") args[name] = false;
  }
  return args;
}

/** The backend's answer: the proxy's guarded path asks without streaming, a forwarded request may stream. */
export function nonceReply(request: BackendRequest, task: NonceTask, shellTool: string): BackendReply {
  return replyWith(request, decideNonceReply(request.body, task, shellTool));
}

/** The backend's reply carrying `decided` (streamed when the request streams). */
export function replyWith(request: BackendRequest, decided: NonceDecision): BackendReply {
  // On the proxy's guarded path a text answer is a call of its `respond` tool (prose is nudged).
  const tools = (Array.isArray(request.body.tools) ? request.body.tools : []) as ChatTool[];
  const decision: NonceDecision =
    decided.kind === "text" && tools.some((tool) => tool.function?.name === "respond")
      ? { kind: "tool_call", name: "respond", args: { message: decided.text } }
      : decided;
  const message =
    decision.kind === "text"
      ? { role: "assistant", content: decision.text }
      : {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_nonce_0",
              type: "function",
              function: { name: decision.name, arguments: JSON.stringify(decision.args) },
            },
          ],
        };
  const finishReason = decision.kind === "text" ? "stop" : "tool_calls";
  const model = typeof request.body.model === "string" ? request.body.model : "scripted-model";
  if (request.body.stream === true) return streamedReply(message, finishReason, model);
  return {
    body: {
      id: "chatcmpl-nonce",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message, finish_reason: finishReason }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    },
  };
}

/** The step to give `startScriptedBackend` as its fallback: every request is answered by {@link nonceReply}. */
export function nonceStep(task: NonceTask, shellTool: string): BackendStep {
  return (request) => nonceReply(request, task, shellTool);
}

function streamedReply(message: Record<string, unknown>, finishReason: string, model: string): BackendReply {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-nonce",
      object: "chat.completion.chunk",
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
  const toolCalls = (message.tool_calls as Record<string, unknown>[] | undefined)?.map((call, index) => ({
    index,
    ...call,
  }));
  const body =
    chunk({ role: "assistant", content: "" }, null) +
    (toolCalls ? chunk({ tool_calls: toolCalls }, null) : chunk({ content: message.content }, null)) +
    chunk({}, finishReason) +
    "data: [DONE]\n\n";
  return { body, contentType: "text/event-stream" };
}

/** A message's text: a string, or the text of its parts. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof part === "string"
          ? part
          : typeof part?.text === "string"
            ? (part.text as string)
            : JSON.stringify(part),
      )
      .join("\n");
  }
  return content === undefined || content === null ? "" : JSON.stringify(content);
}
