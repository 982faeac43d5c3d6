import { setTimeout as sleep } from "node:timers/promises";
import { execa, type ResultPromise } from "execa";
import getPort from "get-port";
import { afterAll, describe, expect, it } from "vitest";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { ensureLlamaServer, ensureTestModel } from "../helpers/test-model.ts";

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
} as const;

describe("llama-server built from the bundled llama.cpp", () => {
  let server: ResultPromise<{ all: true; reject: false }> | undefined;
  let baseUrl = "";
  let serverLog = "";

  beforeAllOrFail(async () => {
    const [binary, modelPath] = await Promise.all([ensureLlamaServer(), ensureTestModel()]);
    const port = await getPort({ host: "127.0.0.1" });
    baseUrl = `http://127.0.0.1:${port}`;
    server = execa(
      binary,
      ["--model", modelPath, "--host", "127.0.0.1", "--port", String(port), "--jinja"].concat([
        "--ctx-size",
        "2048",
        "--parallel",
        "1",
        "--threads",
        "2",
        "--no-webui",
      ]),
      { all: true, reject: false },
    );
    server.all.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    await waitForHealth(baseUrl, server, () => serverLog);
  }, 900_000);

  afterAll(async () => {
    server?.kill("SIGTERM");
    await server;
  });

  it("reports the context size in /props", async () => {
    const response = await fetch(`${baseUrl}/props`);
    const props = (await response.json()) as { default_generation_settings: { n_ctx: number } };
    expect(props.default_generation_settings.n_ctx).toBe(2048);
  });

  it("parses a grammar-forced Hermes tool call into OpenAI tool_calls", async () => {
    const response = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [{ role: "user", content: "What is the weather in Paris?" }],
        tools: [weatherTool],
        tool_choice: "required",
        temperature: 0,
        max_tokens: 200,
      }),
    });
    expect(response.status).toBe(200);
    const completion = (await response.json()) as {
      choices: Array<{
        finish_reason: string;
        message: { tool_calls?: Array<{ function: { name: string; arguments: string } }> };
      }>;
    };
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    const toolCall = choice?.message.tool_calls?.[0];
    expect(toolCall?.function.name).toBe("get_weather");
    expect(JSON.parse(toolCall?.function.arguments ?? "null")).toHaveProperty("city");
  });
});

/** Polls /health until the server answers 200, failing early with its log if it exits. */
async function waitForHealth(baseUrl: string, server: ResultPromise, readLog: () => string): Promise<void> {
  let exited = false;
  void server.finally(() => {
    exited = true;
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`llama-server exited before becoming healthy:\n${readLog()}`);
    const status = await fetch(`${baseUrl}/health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(100);
  }
  throw new Error(`llama-server did not become healthy within 60s:\n${readLog()}`);
}
