/** The recommended-sampling map, its lookup, and the opt-in rules every client applies. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OllamaClient } from "../../src/clients/ollama/client.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import {
  getSamplingDefaults,
  knownSamplingFamilies,
  normalizeModelName,
  resolveSampling,
} from "../../src/clients/sampling.ts";
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
    ["ministral-3:14b-instruct-2512-q4_K_M", "ministral-3:14b-instruct-2512"],
    ["gemma-4-26B-A4B-it-UD-Q4_K_M", "gemma-4-26b-a4b-it"],
    ["gpt-oss-20b-MXFP4.gguf", "gpt-oss-20b"],
    ["qwen3-coder:30b-a3b-fp16", "qwen3-coder:30b-a3b"],
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

  const qwen3Coder = { temperature: 0.7, topP: 0.8, topK: 20, repeatPenalty: 1.05 };
  const qwen35 = { temperature: 1.0, topP: 0.95, topK: 20, minP: 0, presencePenalty: 1.5 };
  const gemma4 = { temperature: 1.0, topP: 0.95, topK: 64 };
  const ministralInstruct = { temperature: 0.05 };
  const mistralSmall = { temperature: 0.15 };
  const gptOss = { temperature: 1.0, topP: 1.0 };

  it.each([
    // family, Ollama name, GGUF file (stem or path), card values
    ["Qwen3-Coder", "qwen3-coder:30b", "Qwen3-Coder-30B-A3B-Instruct-Q4_K_M", qwen3Coder],
    [
      "Qwen3-Coder 480B",
      "qwen3-coder:480b-a35b-q4_K_M",
      "Qwen3-Coder-480B-A35B-Instruct-UD-Q2_K_XL-00001-of-00004.gguf",
      qwen3Coder,
    ],
    ["Qwen3.5 27B", "qwen3.5:27b-q4_K_M", "Qwen3.5-27B-Q4_K_M", qwen35],
    ["Qwen3.5 35B-A3B", "qwen3.5:35b-a3b", "models/Qwen3.5-35B-A3B-UD-Q4_K_XL.gguf", qwen35],
    ["Qwen3.6 35B-A3B", "qwen3.6:35b-a3b-ud-q4_K_M", "Qwen3.6-35B-A3B-UD-Q4_K_M", qwen35],
    ["Gemma 4 31B", "gemma4:31b", "gemma-4-31B-it-Q4_K_M", gemma4],
    ["Gemma 4 26B-A4B", "gemma4:26b-a4b-it-q8_0", "gemma-4-26B-A4B-it-UD-Q4_K_M", gemma4],
    ["Gemma 4 E4B", "gemma4:e4b", "gemma-4-E4B-it-Q8_0", gemma4],
    [
      "Ministral 3 14B Instruct",
      "ministral-3:14b-instruct-2512-q4_K_M",
      "Ministral-3-14B-Instruct-2512-Q4_K_M",
      ministralInstruct,
    ],
    [
      "Ministral 3 8B Instruct",
      "ministral-3:8b-instruct-2512-q8_0",
      "path/to/Ministral-3-8B-Instruct-2512-Q4_K_M.gguf",
      ministralInstruct,
    ],
    [
      "Ministral 3 8B Reasoning",
      "ministral-3:8b-reasoning-2512-q4_K_M",
      "Ministral-3-8B-Reasoning-2512-Q8_0",
      { temperature: 0.7 },
    ],
    [
      "Ministral 3 14B Reasoning",
      "ministral-3:14b-reasoning-2512-q4_K_M",
      "Ministral-3-14B-Reasoning-2512-Q4_K_M",
      { temperature: 1.0 },
    ],
    ["Mistral Small 3.2", "mistral-small3.2:24b", "Mistral-Small-3.2-24B-Instruct-2506-Q4_K_M", mistralSmall],
    ["Devstral Small 2", "devstral-small-2:24b", "Devstral-Small-2-24B-Instruct-2512-Q8_0", mistralSmall],
    ["gpt-oss 20B", "gpt-oss:20b", "gpt-oss-20b-MXFP4", gptOss],
    ["gpt-oss 120B", "gpt-oss:120b", "gpt-oss-120b-F16-00001-of-00002.gguf", gptOss],
  ])("knows %s by its Ollama name (%s) and its GGUF file (%s)", (_family, ollama, gguf, sampling) => {
    expect(getSamplingDefaults(ollama)).toEqual(sampling);
    expect(getSamplingDefaults(gguf)).toEqual(sampling);
  });

  it("keeps the Qwen3 thinking and 2507 entries apart from Qwen3-Coder and Qwen3.5", () => {
    expect(getSamplingDefaults("qwen3:30b-a3b")).toMatchObject({ temperature: 0.6 });
    expect(getSamplingDefaults("qwen3-coder:30b-a3b")).toMatchObject({
      temperature: 0.7,
      repeatPenalty: 1.05,
    });
    expect(getSamplingDefaults("qwen3.5:35b-a3b")).toMatchObject({ temperature: 1.0, presencePenalty: 1.5 });
    expect(knownSamplingFamilies()).toEqual(expect.arrayContaining(["Gemma 3 IT", "Gemma 4 IT"]));
  });

  it("is null for models without a card recommendation, and for other families", () => {
    for (const model of [
      "mistral:7b-instruct-v0.3",
      "phi4:14b",
      "qwen2.5-coder:7b",
      "claude-sonnet-4-5",
      // cards without a sampling recommendation (see the comment at the end of the map)
      "granite4:micro-h",
      "granite-4.0-h-tiny-Q4_K_M",
      "ministral-3:3b-reasoning-2512",
      "devstral:24b",
      // a size or variant the cards do not cover is not guessed from its family
      "qwen3.6:27b",
      "ministral-3:14b",
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

  it("applies the seeds' own example, a Ministral 3 Ollama tag", () => {
    expect(
      resolveSampling({ ...base, model: "ministral-3:14b-instruct-2512-q4_K_M", recommendedSampling: true }),
    ).toEqual({ temperature: 0.05 });
  });

  it("says which model it did not know, which families it knows and how to fix it", () => {
    const error = (() => {
      try {
        resolveSampling({ ...base, model: "granite4:tiny-h", recommendedSampling: true });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(UnsupportedModelError);
    const message = (error as Error).message;
    expect(message).toContain("'granite4:tiny-h'");
    for (const family of ["Qwen3-Coder Instruct", "Gemma 4 IT", "Ministral 3 Instruct 2512", "gpt-oss"]) {
      expect(message).toContain(family);
    }
    expect(message).toContain("Pass explicit sampling values or turn recommendedSampling off");
  });

  it("lets explicit penalties win over the card's", () => {
    expect(
      resolveSampling({
        ...base,
        model: "qwen3-coder:30b",
        recommendedSampling: true,
        explicit: { repeatPenalty: 1, presencePenalty: undefined },
      }),
    ).toEqual({ temperature: 0.7, topP: 0.8, topK: 20, repeatPenalty: 1 });
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

  it("OpenAICompatibleClient sends the card's penalties under llama-server's names", async () => {
    server.reply(CHAT, json(completion({ content: "ok" })), json(completion({ content: "ok" })));
    const coder = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      ggufPath: "/models/Qwen3-Coder-30B-A3B-Instruct-Q4_K_M.gguf",
      recommendedSampling: true,
      logger: () => {},
    });
    await coder.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf(CHAT)).toMatchObject({
      temperature: 0.7,
      top_p: 0.8,
      top_k: 20,
      repeat_penalty: 1.05,
    });
    expect(server.bodyOf(CHAT)).not.toHaveProperty("presence_penalty");
    const qwen35 = new OpenAICompatibleClient({
      baseUrl: `${server.url}/v1`,
      model: "Qwen3.5-27B-Q4_K_M",
      recommendedSampling: true,
      presencePenalty: 0.5,
      logger: () => {},
    });
    await qwen35.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf(CHAT, 1)).toMatchObject({ temperature: 1.0, min_p: 0, presence_penalty: 0.5 });
    expect(server.bodyOf(CHAT, 1)).not.toHaveProperty("repeat_penalty");
  });

  it("OllamaClient applies the seeds' Ministral 3 example and sends penalties under options", async () => {
    server.reply(
      "POST /api/chat",
      json({ message: { content: "ok" }, done: true }),
      json({ message: { content: "ok" }, done: true }),
    );
    const ministral = new OllamaClient({
      model: "ministral-3:14b-instruct-2512-q4_K_M",
      baseUrl: server.url,
      recommendedSampling: true,
      logger: () => {},
    });
    await ministral.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf("POST /api/chat").options).toEqual({ temperature: 0.05 });
    const coder = new OllamaClient({
      model: "qwen3-coder:30b",
      baseUrl: server.url,
      recommendedSampling: true,
      logger: () => {},
    });
    await coder.send([{ role: "user", content: "hi" }]);
    expect(server.bodyOf("POST /api/chat", 1).options).toEqual({
      temperature: 0.7,
      top_p: 0.8,
      top_k: 20,
      repeat_penalty: 1.05,
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
