import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { type RunRow, runRowSchema } from "../../eval/batch/row.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { renderTerminalReport } from "../../eval/report/table.ts";

const quietIo = { stdout: () => {}, stderr: () => {} };
const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-mode-"));
const rowsOf = (file: string): RunRow[] => readJsonl(file, runRowSchema).rows;
const TOOL_PROMPT = "To call a tool, reply with a single JSON object and nothing else";

/** A local server that records each request body; chat completions answer with reasoning and text. */
async function startRecorder() {
  const bodies: { path: string; body: Record<string, unknown> }[] = [];
  const ollamaReply = readFileSync("test/fixtures/ollama/chat-text.json", "utf8");
  const server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on("end", () => {
      const path = request.url ?? "";
      bodies.push({ path, body: text ? JSON.parse(text) : {} });
      response.setHeader("content-type", "application/json");
      if (path.endsWith("/api/chat")) return response.end(ollamaReply);
      if (!path.endsWith("/chat/completions")) {
        response.statusCode = 404;
        return response.end("{}");
      }
      response.end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 0,
          model: "recorder",
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: "No.", reasoning_content: "Thinking it over." },
              finish_reason: "stop",
            },
          ],
          usage: { prompt_tokens: 321, completion_tokens: 7, total_tokens: 328 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const chatBodies = (bodies: { path: string; body: Record<string, unknown> }[]) =>
  bodies.filter((entry) => entry.path.endsWith("/chat/completions")).map((entry) => entry.body);

function systemText(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: string }[];
  return messages.find((message) => message.role === "system")?.content ?? "";
}

describe("--tool-mode and --think reach the client", () => {
  let recorder: Awaited<ReturnType<typeof startRecorder>> | null = null;
  afterEach(async () => {
    await recorder?.close();
    recorder = null;
  });

  it("openai-compatible: native sends tools in the body, prompt the tool prompt in the system message", async () => {
    recorder = await startRecorder();
    const dir = workdir();
    const common = {
      backend: "openai-compatible",
      model: "recorder",
      baseUrl: `${recorder.url}/v1`,
      scenario: ["basic_2step"],
      progress: false,
      report: false,
    };
    const nativeOut = await runEval(
      { ...common, toolMode: "native", out: join(dir, "native.jsonl") },
      quietIo,
    );
    const nativeBodies = chatBodies(recorder.bodies.splice(0));
    expect(nativeBodies.length).toBeGreaterThan(0);
    for (const body of nativeBodies) {
      expect((body.tools as unknown[]).length).toBeGreaterThan(0);
      expect(systemText(body)).not.toContain(TOOL_PROMPT);
    }
    const promptOut = await runEval(
      { ...common, toolMode: "prompt", out: join(dir, "prompt.jsonl") },
      quietIo,
    );
    const promptBodies = chatBodies(recorder.bodies.splice(0));
    expect(promptBodies.length).toBeGreaterThan(0);
    for (const body of promptBodies) {
      expect(body.tools).toBeUndefined();
      expect(systemText(body)).toContain(TOOL_PROMPT);
      expect(systemText(body)).toContain("## get_weather");
    }
    expect(rowsOf(nativeOut)[0]?.settings).toMatchObject({ toolMode: "native", think: "auto" });
    expect(rowsOf(promptOut)[0]?.settings).toMatchObject({ toolMode: "prompt", think: "auto" });
    expect(rowsOf(promptOut)[0]?.key).toMatch(/\|mode-prompt$/);
  });

  it("ollama: --think on and off go on the wire as Ollama's think flag; auto sends none for an unknown model", async () => {
    recorder = await startRecorder();
    const dir = workdir();
    const sent: unknown[] = [];
    for (const think of ["on", "off", "auto"]) {
      const out = await runEval(
        {
          backend: "ollama",
          model: "recorder-model",
          baseUrl: recorder.url,
          scenario: ["basic_2step"],
          think,
          out: join(dir, `${think}.jsonl`),
          progress: false,
          report: false,
        },
        quietIo,
      );
      const bodies = recorder.bodies.splice(0).filter((entry) => entry.path.endsWith("/api/chat"));
      expect(bodies.length).toBeGreaterThan(0);
      sent.push(...new Set(bodies.map((entry) => entry.body.think)));
      expect(rowsOf(out)[0]?.settings?.think).toBe(think);
    }
    expect(sent).toEqual([true, false, undefined]);
  });

  it("--tool-mode and --think are refused where they cannot reach the client", async () => {
    const out = join(workdir(), "x.jsonl");
    await expect(runEval({ backend: "sim-model", think: "on", out }, quietIo)).rejects.toThrow(
      "--backend sim-model does not use --think (only openai-compatible and ollama do)",
    );
    await expect(
      runEval({ backend: "ollama", model: "m", toolMode: "prompt", out }, quietIo),
    ).rejects.toThrow("--backend ollama does not use --tool-mode");
    await expect(runEval({ backend: "sim-model", toolMode: "fancy", out }, quietIo)).rejects.toThrow(
      "--tool-mode: must be native, prompt or auto",
    );
  });

  it("the sim-model plays both modes; one file holds both and the report puts them side by side", async () => {
    const out = join(workdir(), "modes.jsonl");
    const common = {
      backend: "sim-model",
      profile: "clean",
      tags: ["plumbing"],
      out,
      progress: false,
      report: false,
      workers: 1,
    };
    await runEval({ ...common, toolMode: "native" }, quietIo);
    await runEval({ ...common, toolMode: "prompt", resume: true }, quietIo);
    const rows = rowsOf(out);
    const byMode = (mode: string) => rows.filter((row) => row.settings?.toolMode === mode);
    expect(byMode("native").length).toBe(byMode("prompt").length);
    expect(byMode("native").length).toBeGreaterThan(3);
    // The clean profile plays the reference in either mode, in its ideal number of calls.
    for (const row of rows) {
      expect(row.accurate, `${row.key}: ${row.failureKind} ${row.errorMessage}`).toBe(true);
      expect(row.iterations).toBe(row.idealIterations);
    }
    const report = buildReport(rows);
    expect(report.groups.map((group) => group.name).sort()).toEqual([
      "reforged [native]",
      "reforged [prompt]",
    ]);
    expect(report.comparisons).toHaveLength(1);
    expect(report.comparisons[0]?.pairs).toBe(byMode("prompt").length);
    const text = renderTerminalReport(report);
    expect(text).toContain("reforged [native]");
    expect(text).toContain("reforged [prompt]");
  });
});
