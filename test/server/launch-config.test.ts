/** Launch configurations: the llama-server command line they become and when two are the same. */
import { describe, expect, it } from "vitest";
import {
  buildLlamaServerArgs,
  launchConfigSchema,
  sameLaunchConfig,
} from "../../src/server/launch-config.ts";

const address = { host: "127.0.0.1", port: 8080 };

describe("buildLlamaServerArgs", () => {
  it("passes model, address and --jinja by default", () => {
    const config = launchConfigSchema.parse({ ggufPath: "/models/m.gguf" });
    expect(buildLlamaServerArgs(config, address)).toEqual([
      "--model",
      "/models/m.gguf",
      "--host",
      "127.0.0.1",
      "--port",
      "8080",
      "--jinja",
    ]);
  });

  it("maps every option to its flag, extra flags last", () => {
    const config = launchConfigSchema.parse({
      ggufPath: "m.gguf",
      model: "ministral",
      ctx: 16_384,
      jinja: false,
      gpuLayers: "all",
      slots: 4,
      cacheTypeK: "q8_0",
      cacheTypeV: "q4_0",
      kvUnified: false,
      threads: 2,
      extraFlags: ["--no-webui"],
    });
    expect(buildLlamaServerArgs(config, address).slice(6)).toEqual([
      "--no-jinja",
      "--alias",
      "ministral",
      "--ctx-size",
      "16384",
      "--gpu-layers",
      "all",
      "--parallel",
      "4",
      "--cache-type-k",
      "q8_0",
      "--cache-type-v",
      "q4_0",
      "--no-kv-unified",
      "--threads",
      "2",
      "--no-webui",
    ]);
    expect(
      buildLlamaServerArgs(launchConfigSchema.parse({ ggufPath: "m.gguf", kvUnified: true }), address),
    ).toContain("--kv-unified");
  });

  it("needs a GGUF path", () => {
    expect(() => buildLlamaServerArgs(launchConfigSchema.parse({ model: "x" }), address)).toThrow(
      /needs ggufPath/,
    );
  });
});

describe("launchConfigSchema", () => {
  it("rejects unknown options and cache types llama-server does not have", () => {
    expect(launchConfigSchema.safeParse({ ggufPath: "m.gguf", cacheTypeK: "q3_k" }).success).toBe(false);
    expect(launchConfigSchema.safeParse({ ggufPath: "m.gguf", contextSize: 4096 }).success).toBe(false);
    expect(launchConfigSchema.safeParse({ ggufPath: "m.gguf", ctx: 0 }).success).toBe(false);
  });
});

describe("sameLaunchConfig", () => {
  it("ignores key order and unset options, and sees every difference", () => {
    const base = launchConfigSchema.parse({ ggufPath: "m.gguf", ctx: 2048, slots: 2 });
    expect(
      sameLaunchConfig(base, launchConfigSchema.parse({ slots: 2, ctx: 2048, ggufPath: "m.gguf" })),
    ).toBe(true);
    expect(sameLaunchConfig(base, { ...base, ctx: 4096 })).toBe(false);
    expect(sameLaunchConfig(base, { ...base, cacheTypeK: "q8_0" })).toBe(false);
    expect(sameLaunchConfig(base, { ...base, extraFlags: ["--no-webui"] })).toBe(false);
    expect(sameLaunchConfig(base, { ...base, threads: undefined })).toBe(true);
  });
});
