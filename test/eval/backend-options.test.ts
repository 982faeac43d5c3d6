import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { settingsOf, startBackend } from "../../eval/backends/registry.ts";
import { describeSettings, settingsConflict } from "../../eval/batch/backend-settings.ts";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { type RunRow, runRowSchema } from "../../eval/batch/row.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { readTraces } from "../../eval/report/write-report.ts";
import type { LlamaCppClient } from "../../src/clients/llama-cpp/client.ts";
import { ensureTestModel } from "../helpers/test-model.ts";
import { fakeRow, scenario } from "./helpers.ts";

const quietIo = { stdout: () => {}, stderr: () => {} };
const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-options-"));
const rowsOf = (file: string): RunRow[] => readJsonl(file, runRowSchema).rows;

interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A local server that records every request body and answers each one with a text reply. */
async function startRecordingServer() {
  const requests: RecordedRequest[] = [];
  const ollamaReply = readFileSync("test/fixtures/ollama/chat-text.json", "utf8");
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      const path = request.url ?? "";
      requests.push({ path, headers: request.headers, body: body ? JSON.parse(body) : {} });
      response.setHeader("content-type", "application/json");
      if (path.endsWith("/api/chat")) {
        response.end(ollamaReply);
      } else if (path.endsWith("/chat/completions")) {
        response.end(
          JSON.stringify({
            id: "chatcmpl-1",
            object: "chat.completion",
            created: 0,
            model: "recorder",
            choices: [
              {
                index: 0,
                message: { role: "assistant", content: "I would rather not." },
                finish_reason: "stop",
              },
            ],
            usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
          }),
        );
      } else {
        response.statusCode = 404;
        response.end(JSON.stringify({ error: "not found" }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Whether a request came from the AI SDK peer (it names itself in the user agent). */
const fromPeer = (request: RecordedRequest) => String(request.headers["user-agent"]).includes("ai-sdk");

describe("sampling and seeds reach the backend", () => {
  let server: Awaited<ReturnType<typeof startRecordingServer>> | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  it("openai-compatible: both loops send the temperature, top-p, top-k and seed + run index; rows and the report record them", async () => {
    server = await startRecordingServer();
    const dir = workdir();
    const out = join(dir, "rows.jsonl");
    const markdown = join(dir, "report.md");
    const options = {
      backend: "openai-compatible",
      baseUrl: `${server.url}/v1`,
      model: "recorder",
      scenario: ["basic_2step"],
      peer: true,
      runs: 2,
      seed: "40",
      temperature: "0.3",
      topP: "0.9",
      topK: "7",
      out,
      progress: false,
      report: false,
    };
    await runEval({ ...options, markdown }, quietIo);

    const chat = server.requests.filter((request) => request.path === "/v1/chat/completions");
    const peer = chat.filter(fromPeer);
    const forge = chat.filter((request) => !fromPeer(request));
    expect(peer.length).toBeGreaterThanOrEqual(2);
    expect(forge.length).toBeGreaterThanOrEqual(2);
    for (const request of chat) {
      expect(request.body).toMatchObject({ model: "recorder", temperature: 0.3, top_p: 0.9, top_k: 7 });
    }
    // Seed per run: base seed + run index, in both loops.
    expect(new Set(forge.map((request) => request.body.seed))).toEqual(new Set([40, 41]));
    expect(new Set(peer.map((request) => request.body.seed))).toEqual(new Set([40, 41]));

    const rows = rowsOf(out);
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(row.settings).toEqual({
        temperature: 0.3,
        topP: 0.9,
        topK: 7,
        requestSeed: true,
        llamaCppMode: null,
        threads: null,
        toolMode: "auto",
        think: "auto",
      });
    }
    expect(readFileSync(markdown, "utf8")).toContain(
      "Backend settings: temperature 0.3, top-p 0.9, top-k 7; request seed = base seed + run index; tool mode auto; think auto.",
    );

    // Resuming with the same settings runs nothing; with others it refuses.
    const before = server.requests.length;
    await runEval({ ...options, resume: true }, quietIo);
    expect(server.requests.length).toBe(before);
    await expect(runEval({ ...options, temperature: "0.8", resume: true }, quietIo)).rejects.toThrow(
      /--resume: .* holds runs made with other settings \(.*temperature 0\.3.*temperature 0\.8/,
    );
    await expect(runEval({ ...options, resume: true, runs: 3 }, quietIo)).resolves.toBe(out);
    expect(rowsOf(out)).toHaveLength(6);
  });

  it("without sampling options: no sampling field is sent, only the seed", async () => {
    server = await startRecordingServer();
    await runEval(
      {
        backend: "openai-compatible",
        baseUrl: `${server.url}/v1`,
        model: "recorder",
        scenario: ["basic_2step"],
        peer: true,
        out: join(workdir(), "rows.jsonl"),
        progress: false,
        report: false,
      },
      quietIo,
    );
    const chat = server.requests.filter((request) => request.path === "/v1/chat/completions");
    expect(chat.some(fromPeer)).toBe(true);
    for (const request of chat) {
      expect(request.body).not.toHaveProperty("temperature");
      expect(request.body).not.toHaveProperty("top_p");
      expect(request.body).not.toHaveProperty("top_k");
      expect(request.body.seed).toBe(0);
    }
  });

  it("ollama: the native client sends them as options, per-run seed included", async () => {
    server = await startRecordingServer();
    const session = await startBackend("ollama", {
      model: "llama3.2",
      baseUrl: server.url,
      sampling: { temperature: 0.2, topK: 5 },
    });
    const entry = scenario("basic_2step");
    await session.createClient({ scenario: entry, seed: 12 }).send([{ role: "user", content: "hi" }]);
    expect(session.peerEndpoint?.({ scenario: entry, seed: 12 })).toMatchObject({
      baseURL: `${server.url}/v1`,
      sampling: { temperature: 0.2, topK: 5 },
      seed: 12,
    });
    expect(server.requests[0]?.body.options).toEqual({ temperature: 0.2, top_k: 5, seed: 12 });
    expect(session.settings).toMatchObject({ temperature: 0.2, topP: null, topK: 5, requestSeed: true });
    await session.close();
  });
});

describe("llama-cpp mode, threads and per-run seeds", () => {
  it("every run gets its own client with the mode, threads, sampling and seed; the same seed repeats a run", async () => {
    const modelPath = await ensureTestModel();
    const options = {
      model: modelPath,
      sampling: { temperature: 1 },
      llamaCppMode: "free" as const,
      threads: 1,
    };
    const session = await startBackend("llama-cpp", options);
    try {
      expect(session.settings).toEqual({
        temperature: 1,
        topP: null,
        topK: null,
        requestSeed: true,
        llamaCppMode: "free",
        threads: 1,
        toolMode: null,
        think: null,
      });
      const entry = scenario("basic_2step");
      const first = session.createClient({ scenario: entry, seed: 3 }) as LlamaCppClient;
      expect(first.mode).toBe("free");
      expect(first.sampling).toEqual({ temperature: 1 });
      expect((await first.load()).threads).toBe(1);
      await session.releaseClient?.(first);
    } finally {
      await session.close();
    }

    // Two batches: run 0 repeats exactly across them; runs 0 and 1 (seeds 5 and 6) differ.
    const dir = workdir();
    const batch = async (name: string) => {
      const out = join(dir, `${name}.jsonl`);
      await runEval(
        {
          backend: "llama-cpp",
          model: modelPath,
          scenario: ["basic_2step"],
          runs: 2,
          seed: 5,
          temperature: 1,
          llamaCppMode: "free",
          threads: 1,
          out,
          progress: false,
          report: false,
        },
        quietIo,
      );
      const traces = [...readTraces(join(dir, `${name}.traces.jsonl`)).values()];
      const responses = (runId: string) =>
        JSON.stringify(traces.find((trace) => trace.runId === runId)?.exchanges.map((call) => call.response));
      return { rows: rowsOf(out), run0: responses("basic_2step-5"), run1: responses("basic_2step-6") };
    };
    const once = await batch("once");
    const again = await batch("again");
    expect(once.rows.map((row) => row.settings?.llamaCppMode)).toEqual(["free", "free"]);
    expect(once.run0).toMatch(/^\[.+\]$/);
    expect(once.run0).toBe(again.run0);
    expect(once.run1).toBe(again.run1);
    expect(once.run0).not.toBe(once.run1);
  }, 120_000);
});

describe("run options", () => {
  const out = () => join(workdir(), "rows.jsonl");

  it("reject bad numbers and options the backend does not use, naming the option", async () => {
    await expect(runEval({ temperature: "hot", out: out() }, quietIo)).rejects.toThrow(
      "--temperature: must be a number from 0 to 2",
    );
    await expect(runEval({ temperature: 3, out: out() }, quietIo)).rejects.toThrow(/--temperature/);
    await expect(runEval({ topP: 0, out: out() }, quietIo)).rejects.toThrow(
      "--top-p: must be a number above 0 and at most 1",
    );
    await expect(runEval({ topK: "1.5", out: out() }, quietIo)).rejects.toThrow(/--top-k: must be a whole/);
    await expect(runEval({ threads: 0, out: out() }, quietIo)).rejects.toThrow(/--threads: must be a whole/);
    await expect(runEval({ seed: "x", out: out() }, quietIo)).rejects.toThrow(
      "--seed: must be a whole number",
    );
    await expect(runEval({ llamaCppMode: "json", out: out() }, quietIo)).rejects.toThrow(
      "--llama-cpp-mode: must be functions or free",
    );
    await expect(
      runEval({ temperature: 0.5, scenario: ["basic_2step"], out: out() }, quietIo),
    ).rejects.toThrow("--backend sim-model does not use --temperature");
    await expect(
      runEval({ backend: "ollama", model: "m", threads: 2, llamaCppMode: "free", out: out() }, quietIo),
    ).rejects.toThrow(
      "--backend ollama does not use --llama-cpp-mode, --threads (only --backend llama-cpp does)",
    );
  });

  it("records what each backend takes: anthropic has no request seed, llama-cpp defaults to functions", () => {
    expect(
      settingsOf(
        { sampling: true, requestSeed: false, llamaCpp: false, toolMode: false, think: false },
        { sampling: { temperature: 0 } },
      ),
    ).toEqual({
      temperature: 0,
      topP: null,
      topK: null,
      requestSeed: false,
      llamaCppMode: null,
      threads: null,
      toolMode: null,
      think: null,
    });
    const llamaCpp = settingsOf(
      { sampling: true, requestSeed: true, llamaCpp: true, toolMode: false, think: false },
      {},
    );
    expect(llamaCpp).toMatchObject({ llamaCppMode: "functions", threads: null });
    expect(describeSettings(llamaCpp)).toBe(
      "the backend's default sampling; request seed = base seed + run index; llama-cpp mode functions, default threads (one per core)",
    );
  });

  it("a resumed file conflicts only on planned keys recorded with other settings", () => {
    const settings = settingsOf(
      { sampling: true, requestSeed: true, llamaCpp: false, toolMode: true, think: true },
      {},
    );
    const warmer = { ...settings, temperature: 0.7 };
    const recorded = new Map([["a", settings]]);
    expect(settingsConflict(recorded, ["a", "b"], settings)).toBeNull();
    expect(settingsConflict(recorded, ["b"], warmer)).toBeNull();
    expect(settingsConflict(recorded, ["a"], warmer)).toMatch(/^a ran with the backend's default sampling/);
    // Rows from before settings were recorded still parse.
    const { settings: _none, ...oldRow } = fakeRow("reforged", "basic_2step", 0, true);
    expect(runRowSchema.parse(oldRow).settings).toBeUndefined();
  });
});
