/** The recommended-sampling map, its lookup, and the opt-in rules every client applies. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OllamaClient } from "../../src/clients/ollama-client.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai-compatible-client.ts";
import { getSamplingDefaults, normalizeModelName, resolveSampling } from "../../src/clients/sampling.ts";
import { UnsupportedModelError } from "../../src/core/errors.ts";
import { CHAT, completion } from "./helpers/openai-shapes.ts";
import { json, ReplayServer } from "./helpers/replay-server.ts";

describe("normalizeModelName", () => {
  it.each([
    ["Qwen2.5-7B-Instruct-Q4_K_M", "qwen2.5-7b-instruct"],
    ["/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf", "qwen2.5-7b-instruct"],
    ["qwen2.5:7b-instruct-q4_K_M", "qwen2.5:7b-instruct"],
    ["qwen3:8b-q8_0", "qwen3:8b"],
    ["qwen3:latest", "qwen3"],
    ["Qwen3-30B-A3B-UD-Q4_K_XL", "qwen3-30b-a3b"],
    ["Qwen3-8B-IQ4_XS-00001-of-00002.gguf", "qwen3-8b"],
    ["Mistral-Nemo-Instruct-2407.Q4_K_M.llamafile", "mistral-nemo-instruct-2407"],
    ["gemma3:4b-it-qat", "gemma3:4b-it"],
    ["Meta-Llama-3.1-8B-Instruct-f16", "meta-llama-3.1-8b-instruct"],
    ["mistral:7b-instruct-v0.3-q4_K_M", "mistral:7b-instruct-v0.3"],
  ])("%s → %s", (model, key) => {
    expect(normalizeModelName(model)).toBe(key);
  });
});

describe("getSamplingDefaults", () => {
  it("finds a model by its Ollama name, GGUF stem or llamafile stem", () => {
    const qwen25 = { temperature: 0.7, topP: 0.8, topK: 20 };
    expect(getSamplingDefaults("qwen2.5:7b-instruct")).toEqual(qwen25);
    expect(getSamplingDefaults("qwen2.5:7b")).toEqual(qwen25);
    expect(getSamplingDefaults("Qwen2.5-7B-Instruct-Q4_K_M")).toEqual(qwen25);
    expect(getSamplingDefaults("models/qwen2.5-14b-instruct-q8_0.gguf")).toEqual(qwen25);
    expect(getSamplingDefaults("Mistral-Nemo-Instruct-2407.Q4_K_M")).toEqual({ temperature: 0.3 });
    expect(getSamplingDefaults("mistral-nemo:12b")).toEqual({ temperature: 0.3 });
  });

  it("tells Qwen3 thinking from Qwen3 Instruct 2507", () => {
    expect(getSamplingDefaults("qwen3:8b")).toEqual({ temperature: 0.6, topP: 0.95, topK: 20, minP: 0 });
    expect(getSamplingDefaults("Qwen3-30B-A3B-Q4_K_M")).toEqual({
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      minP: 0,
    });
    expect(getSamplingDefaults("qwen3:4b-instruct-2507-q4_K_M")).toEqual({
      temperature: 0.7,
      topP: 0.8,
      topK: 20,
      minP: 0,
    });
  });

  it("knows Llama 3.1/3.2 and Gemma 3", () => {
    expect(getSamplingDefaults("llama3.1:8b")).toEqual({ temperature: 0.6, topP: 0.9 });
    expect(getSamplingDefaults("Llama-3.2-3B-Instruct-Q4_K_M")).toEqual({ temperature: 0.6, topP: 0.9 });
    expect(getSamplingDefaults("gemma3:12b")).toEqual({ temperature: 1.0, topP: 0.95, topK: 64 });
    expect(getSamplingDefaults("gemma-3-4b-it-Q4_K_M")).toEqual({ temperature: 1.0, topP: 0.95, topK: 64 });
  });

  it("is null for models without a card recommendation, and for other families", () => {
    for (const model of [
      "mistral:7b-instruct-v0.3",
      "phi4:14b",
      "qwen3-coder:30b",
      "qwen2.5-coder:7b",
      "claude-sonnet-4-5",
    ]) {
      expect(getSamplingDefaults(model), model).toBeNull();
    }
  });

  it("returns a copy", () => {
    const first = getSamplingDefaults("qwen3:8b");
    if (first) first.temperature = 2;
    expect(getSamplingDefaults("qwen3:8b")?.temperature).toBe(0.6);
  });
});

describe("resolveSampling", () => {
  const base = { explicit: {}, logger: () => {} };

  it("applies the recommendation when opted in, explicit values winning field by field", () => {
    expect(
      resolveSampling({
        ...base,
        model: "qwen3:8b",
        recommendedSampling: true,
        explicit: { temperature: 0.1, topK: undefined },
      }),
    ).toEqual({ temperature: 0.1, topP: 0.95, topK: 20, minP: 0 });
  });

  it("throws UnsupportedModelError when opted in for an unknown model", () => {
    const error = (() => {
      try {
        resolveSampling({ ...base, model: "mystery-7b", recommendedSampling: true });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(UnsupportedModelError);
    expect(error).toMatchObject({ model: "mystery-7b" });
    expect((error as Error).message).toContain("Qwen2.5 Instruct");
  });

  it("throws when opted in without a model name", () => {
    expect(() => resolveSampling({ ...base, model: undefined, recommendedSampling: true })).toThrow(
      UnsupportedModelError,
    );
  });

  it("logs exactly one line pointing at the option when not opted in for a known model", () => {
    const lines: string[] = [];
    const sampling = resolveSampling({
      model: "qwen2.5:7b",
      recommendedSampling: false,
      explicit: { temperature: 0.5 },
      logger: (line) => lines.push(line),
    });
    expect(sampling).toEqual({ temperature: 0.5 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("recommendedSampling: true");
    expect(lines[0]).toContain("qwen2.5:7b");
  });

  it("stays silent when not opted in for an unknown model", () => {
    const lines: string[] = [];
    expect(
      resolveSampling({
        model: "mystery-7b",
        recommendedSampling: false,
        explicit: {},
        logger: (line) => lines.push(line),
      }),
    ).toEqual({});
    expect(lines).toEqual([]);
  });
});

describe("recommended sampling in the clients", () => {
  let server: ReplayServer;
  beforeEach(async () => {
    server = await ReplayServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  it("OpenAICompatibleClient applies it from the GGUF stem, explicit values winning", async () => {
    server.reply(CHAT, json(completion({ content: "ok" })));
    const client = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      ggufPath: "/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
      recommendedSampling: true,
      temperature: 0.1,
      logger: () => {},
    });
    await client.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf(CHAT)).toMatchObject({ temperature: 0.1, top_p: 0.8, top_k: 20 });
    expect(server.bodyOf(CHAT)).not.toHaveProperty("min_p");
  });

  it("OllamaClient applies it under options", async () => {
    server.reply("POST /api/chat", json({ message: { content: "ok" }, done: true }));
    const client = new OllamaClient({
      model: "qwen3:8b",
      baseUrl: server.url,
      recommendedSampling: true,
      logger: () => {},
    });
    await client.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf("POST /api/chat").options).toEqual({
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
    });
  });

  it("throws at construction when opted in for an unknown model", () => {
    expect(
      () => new OpenAICompatibleClient({ model: "mystery-7b", recommendedSampling: true, logger: () => {} }),
    ).toThrow(UnsupportedModelError);
    expect(
      () => new OllamaClient({ model: "mystery:7b", recommendedSampling: true, logger: () => {} }),
    ).toThrow(UnsupportedModelError);
  });

  it("logs once per client, not per request, when not opted in", async () => {
    server.reply(CHAT, json(completion({ content: "a" })), json(completion({ content: "b" })));
    const lines: string[] = [];
    const client = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      model: "llama3.1:8b",
      logger: (line) => lines.push(line),
    });
    await client.send([{ role: "user", content: "hi" }]);
    await client.send([{ role: "user", content: "again" }]);
    expect(lines).toHaveLength(1);
    expect(server.bodyOf(CHAT)).not.toHaveProperty("temperature");
  });
});
