/**
 * `forge proxy` as a user runs it (from the sources): the CLI starts the proxy on 127.0.0.1 in front of a
 * scripted backend, the openai SDK gets clean tool calls through it, and SIGTERM stops it.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exitOf, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";
import { weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { type ScriptedBackend, startScriptedBackend, textCompletion } from "./helpers/scripted-backend.ts";

describe("forge proxy (CLI)", () => {
  let backend: ScriptedBackend;

  beforeAll(async () => {
    backend = await startScriptedBackend();
  });
  afterAll(async () => {
    await backend.close();
  });

  it("serves guarded tool calls on 127.0.0.1 and exits cleanly on SIGTERM", async () => {
    const { child, output } = spawnForge([
      "proxy",
      "--backend-url",
      `${backend.url}/v1`,
      "--port",
      "0",
      "--max-retries",
      "1",
      "--api-key",
      "cli-key",
    ]);
    try {
      const [, url] = await waitForOutput(output, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
      backend.push(
        textCompletion('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
      );
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "cli-key", maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [weatherToolOpenAI],
      });
      const call = completion.choices[0]?.message.tool_calls?.[0];
      if (call?.type !== "function") throw new Error("expected a function call");
      expect(call.function.name).toBe("get_weather");
      expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
      backend.assertDone();
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exitOf(child)).toBe(0);
  });

  it("rejects options it cannot run with, naming the flag", async () => {
    const runs = [
      { args: ["proxy"], flag: /--backend-url/ },
      { args: ["proxy", "--backend-url", backend.url, "--port", "99999"], flag: /--port/ },
      { args: ["proxy", "--backend", "llamaserver"], flag: /--gguf/ },
      { args: ["proxy", "--backend-url", "ftp://x"], flag: /--backend-url/ },
    ].map(({ args, flag }) => ({ run: spawnForge(args), flag }));
    for (const { run, flag } of runs) {
      expect(await exitOf(run.child)).not.toBe(0);
      expect(run.output()).toMatch(flag);
    }
  });
});
