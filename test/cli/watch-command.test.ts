/**
 * `forge watch` as a user runs it (from the sources, as `scripts/forge.ts`): it serves the runs
 * page on 127.0.0.1, reopens the runs in its directory, stops on SIGTERM, and exits 2 on a usage
 * error and 1 with one line on a taken port.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { watchCliOptionsSchema } from "../../src/cli/watch-command.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const forgeArgs = ["--import", "tsx", join(root, "scripts", "forge.ts")];

function forge(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...forgeArgs, ...args],
      { cwd: root, encoding: "utf8" },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

describe("forge watch", () => {
  it("serves the runs it finds in --dir on 127.0.0.1 and stops on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-watch-cli-"));
    const started = {
      type: "run.started",
      at: 0,
      name: "recorded earlier",
      source: "runner",
      startedAt: Date.now(),
      statechart: null,
    };
    writeFileSync(join(dir, "earlier.jsonl"), `${JSON.stringify(started)}\n`);
    const child = spawn(process.execPath, [...forgeArgs, "watch", "--port", "0", "--dir", dir], {
      cwd: root,
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const match =
            /forge watch on (http:\/\/127\.0\.0\.1:\d+)\/\?token=[\w-]{32} \(runs in .*, 1 recorded\)/.exec(
              out,
            );
          if (match?.[1]) resolve(match[1]);
        });
        child.once("exit", () => reject(new Error(`forge watch exited: ${out}`)));
      });
      const page = await (await fetch(url)).text();
      expect(page).toContain("recorded earlier");
      expect(page).toContain("this page needs no internet");
    } finally {
      child.kill("SIGTERM");
    }
    await expect(exited).resolves.toBe(0);
  }, 30_000);

  it("takes --max-run-events (a whole number from 1) and repeatable --allow-host", () => {
    expect(watchCliOptionsSchema.parse({ maxRunEvents: "200", allowHost: ["watch.example"] })).toMatchObject({
      maxRunEvents: 200,
      allowHost: ["watch.example"],
    });
    expect(watchCliOptionsSchema.parse({})).toMatchObject({ allowHost: [] });
    expect(watchCliOptionsSchema.parse({}).maxRunEvents).toBeUndefined();
    expect(watchCliOptionsSchema.safeParse({ maxRunEvents: "0" }).success).toBe(false);
  });

  it("exits 2 on a bad --port, naming it", async () => {
    const result = await forge(["watch", "--port", "http"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--port");
  }, 30_000);

  it("names a taken port in one line and exits 1", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const result = await forge([
        "watch",
        "--port",
        String(port),
        "--dir",
        mkdtempSync(join(tmpdir(), "w-")),
      ]);
      expect(result.code).toBe(1);
      const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
      expect(lines).toEqual([
        `forge: port ${port} on 127.0.0.1 is already in use: stop what holds it, or pass --port <another> (--port 0 picks a free one).`,
      ]);
    } finally {
      holder.close();
    }
  }, 30_000);
});
