/**
 * Render generated conversations to training text through llama-server's own chat template
 * (`POST /apply-template`, with `--jinja`), so the text the model trains on is byte for byte
 * what llama-server sends it at inference.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import type { Conversation } from "./generate.ts";

/** Appended after the last turn and cut off again: the template then closes every turn. */
const END_MARKER = "END-OF-SYNTHETIC-CONVERSATION";

export interface TemplateServer {
  url: string;
  stop(): Promise<void>;
}

/** Start llama-server on `model` (any GGUF carrying the forge-tiny chat template). */
export async function startTemplateServer(
  binary: string,
  model: string,
  port: number,
  extraArgs: readonly string[] = ["-t", "1"],
): Promise<TemplateServer> {
  const child: ChildProcess = spawn(
    binary,
    [
      "-m",
      model,
      "--jinja",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-c",
      "2048",
      "--no-webui",
      ...extraArgs,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`llama-server exited: ${log}`);
    try {
      const response = await fetch(`${url}/health`);
      if (response.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`llama-server did not start: ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
    },
  };
}

/** The full rendered conversation text (ends with the terminal call's `<|im_end|>\n`). */
export async function renderConversation(
  server: TemplateServer,
  conversation: Conversation,
): Promise<string> {
  const response = await fetch(`${server.url}/apply-template`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      messages: [...conversation.messages, { role: "user", content: END_MARKER }],
      tools: conversation.tools,
    }),
  });
  if (!response.ok) throw new Error(`apply-template: ${response.status} ${await response.text()}`);
  const { prompt } = (await response.json()) as { prompt: string };
  const cut = prompt.lastIndexOf(`<|im_start|>user\n${END_MARKER}`);
  if (cut < 0) throw new Error("apply-template: end marker not found");
  return prompt.slice(0, cut);
}

/** The prompt a model sees before its first call (system + user + generation prompt). */
export async function renderPrompt(
  server: TemplateServer,
  messages: Record<string, unknown>[],
  tools: Record<string, unknown>[],
): Promise<string> {
  const response = await fetch(`${server.url}/apply-template`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages, tools, add_generation_prompt: true }),
  });
  if (!response.ok) throw new Error(`apply-template: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { prompt: string }).prompt;
}
