/**
 * The command lines as a user runs them: `forge` from the sources (`scripts/forge.ts`, what the
 * installed bin runs from dist/), and the repository's `npm run eval` / `npm run sim-model`.
 * Help and version exit 0; a usage error exits 2 with the usage; a runtime error prints one line
 * without a stack trace and exits 1.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const forgeEntry = join(root, "scripts", "forge.ts");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: root, env: { ...process.env, NO_COLOR: "1", ...env }, encoding: "utf8" },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function forge(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return run(process.execPath, ["--import", "tsx", forgeEntry, ...args], env);
}

function npmRun(script: string, args: string[]): Promise<Run> {
  return run("npm", ["run", "--silent", script, "--", ...args]);
}

/** The lines of stderr that are not npm's own warnings or blank. */
function errorLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("npm warn"));
}

describe("forge", () => {
  it("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    const result = await forge(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  it("--help lists proxy and none of the repository's commands", async () => {
    const result = await forge(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: forge [options] [command]");
    expect(result.stdout).toMatch(/^ {2}proxy \[options\]/m);
    expect(result.stdout).toContain("-V, --version");
    expect(result.stdout).not.toMatch(/^ {2}(eval|sim-model)\b/m);
  });

  it("proxy --help lists the proxy's options", async () => {
    const result = await forge(["proxy", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: forge proxy [options]");
    expect(result.stdout).toContain("--backend-url <url>");
    expect(result.stdout).toContain("--gguf <path>");
  });

  it("exits 2 on a usage error, naming it, with the usage", async () => {
    const unknown = await forge(["proxy", "--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("error: unknown option '--bogus'");
    expect(unknown.stderr).toContain("Usage: forge proxy [options]");

    const invalid = await forge(["proxy", "--backend-url", "http://127.0.0.1:9", "--port", "99999"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/error: --port: /);
    expect(invalid.stderr).toContain("Usage: forge proxy [options]");
  });
});

describe("forge proxy runtime errors", () => {
  let folder: string;
  let gguf: string;
  let holder: Server;
  let takenPort: number;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "forge-cli-"));
    gguf = join(folder, "model.gguf");
    writeFileSync(gguf, "not read: the binary lookup fails first");
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    takenPort = (holder.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => holder.close(resolve));
    rmSync(folder, { recursive: true, force: true });
  });

  const noLlamaServer = () => ({
    LLAMA_SERVER_PATH: join(folder, "nowhere", "llama-server"),
    PATH: join(folder, "empty"),
    FORGE_DEBUG: "",
  });

  it("says in one line that llama-server is missing and exits 1, without a stack", async () => {
    const result = await forge(["proxy", "--backend", "llamaserver", "--gguf", gguf], noLlamaServer());
    expect(result.code).toBe(1);
    const lines = errorLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^forge: LLAMA_SERVER_PATH=.*nowhere\/llama-server is not an executable file/);
    expect(result.stderr).not.toMatch(/^ {4}at /m);
  });

  it("prints the stack with --verbose or FORGE_DEBUG=1", async () => {
    const args = ["proxy", "--backend", "llamaserver", "--gguf", gguf];
    for (const result of [
      await forge([...args, "--verbose"], noLlamaServer()),
      await forge(args, { ...noLlamaServer(), FORGE_DEBUG: "1" }),
    ]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("LlamaServerNotFoundError");
      expect(result.stderr).toMatch(/^ {4}at /m);
    }
  });

  it("names a missing --gguf file in one line", async () => {
    const missing = join(folder, "missing.gguf");
    const result = await forge(["proxy", "--backend", "llamaserver", "--gguf", missing]);
    expect(result.code).toBe(1);
    expect(errorLines(result.stderr)).toEqual([
      `forge: --gguf ${missing}: no such file; pass the path of a GGUF model file.`,
    ]);
  });

  it("names a taken --port and how to pick another", async () => {
    const result = await forge([
      "proxy",
      "--backend-url",
      "http://127.0.0.1:9/v1",
      "--port",
      String(takenPort),
    ]);
    expect(result.code).toBe(1);
    const lines = errorLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`forge: port ${takenPort} on 127.0.0.1 is already in use`);
    expect(lines[0]).toContain("--port 0 picks a free one");
  });
});

describe("the repository's eval commands", () => {
  it("npm run eval -- --help lists run, report, list and replay", async () => {
    const result = await npmRun("eval", ["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: npm run eval -- [options] [command]");
    for (const command of ["run [options]", "report [options] <files...>", "list", "replay <traces> [key]"]) {
      expect(result.stdout).toContain(`  ${command}`);
    }
  });

  it("npm run eval -- run --help and eval:report -- --help list their options", async () => {
    const runHelp = await npmRun("eval", ["run", "--help"]);
    expect(runHelp.code).toBe(0);
    expect(runHelp.stdout).toContain("Usage: npm run eval -- run [options]");
    expect(runHelp.stdout).toContain("--ablation <presets...>");
    const reportHelp = await npmRun("eval:report", ["--help"]);
    expect(reportHelp.code).toBe(0);
    expect(reportHelp.stdout).toContain("Usage: npm run eval -- report [options] <files...>");
    expect(reportHelp.stdout).toContain("--markdown <file>");
  });

  it("npm run sim-model -- --help lists its options", async () => {
    const result = await npmRun("sim-model", ["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: npm run sim-model -- [options]");
    expect(result.stdout).toContain("--profile <name>");
  });

  it("exits 2 on a usage error of eval and of sim-model", async () => {
    const evalEntry = join(root, "eval", "cli", "main.ts");
    const unknownScenario = await run(process.execPath, [
      "--import",
      "tsx",
      evalEntry,
      "eval",
      "--scenario",
      "no_such_scenario",
    ]);
    expect(unknownScenario.code).toBe(2);
    expect(unknownScenario.stderr).toContain("error: Unknown scenario 'no_such_scenario'");
    expect(unknownScenario.stderr).toContain("Usage: npm run eval -- run [options]");
    const unknownProfile = await run(process.execPath, [
      "--import",
      "tsx",
      evalEntry,
      "sim-model",
      "--profile",
      "no_such_profile",
    ]);
    expect(unknownProfile.code).toBe(2);
    expect(unknownProfile.stderr).toContain("error: Unknown sim-model profile 'no_such_profile'");
    expect(unknownProfile.stderr).toContain("Usage: npm run sim-model -- [options]");
  });
});
