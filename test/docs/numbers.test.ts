/**
 * Numbers the user docs state that the code defines: each must agree with the constant it comes
 * from. (Measured figures are stated once, in docs/benchmarks.md or docs/eval.md, and linked.)
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/guardrails/limits.ts";
import { PROXY_DEFAULTS } from "../../src/proxy/defaults.ts";
import { DEFAULT_MAX_PAYLOAD_BYTES } from "../../src/queue/run-queue.ts";
import { DEFAULT_WATCH_PORT } from "../../src/watch/server/server.ts";

const repo = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(resolve(repo, path), "utf8");

describe("numbers the docs take from the code", () => {
  it("the guardrail budgets in the tuning guide are DEFAULT_LIMITS", () => {
    const guide = read("docs/guides/tuning-guardrails.md");
    for (const [name, value] of Object.entries(DEFAULT_LIMITS)) {
      if (guide.includes(`\`${name}\``)) expect(guide, name).toContain(`\`${name}\` ${value}`);
    }
    expect(guide).toContain("`maxIterations` 10");
  });

  it("the proxy's and forge watch's default ports", () => {
    for (const doc of [
      "README.md",
      "docs/getting-started/coding-agents.md",
      "docs/reference/proxy-http.md",
    ]) {
      expect(read(doc), doc).toContain(`127.0.0.1:${PROXY_DEFAULTS.port}`);
    }
    expect(read("docs/troubleshooting.md")).toContain(`(default ${PROXY_DEFAULTS.port})`);
    expect(read("docs/troubleshooting.md")).toContain(`(default ${DEFAULT_WATCH_PORT})`);
  });

  it("the run queue's payload limit", () => {
    expect(DEFAULT_MAX_PAYLOAD_BYTES).toBe(1024 * 1024);
    expect(read("docs/guides/queues.md")).toContain("(default 1 MiB");
  });
});
