/**
 * ServerManager against a real llama-server (built from the bundled llama.cpp, tiny random-weight
 * model) on 127.0.0.1: start, health, /props budget, reuse, a full workflow run, port conflicts,
 * a kill -9 noticed as a crash, restart on request, and stop. One server for the whole file.
 */
import { createServer, type Server } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createActor, fromPromise, waitFor } from "xstate";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { ContextManager } from "../../src/context/context-manager.ts";
import { TieredCompact } from "../../src/context/tiered-compact.ts";
import { BackendError, BudgetResolutionError, ForgeError } from "../../src/core/errors.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { BudgetMode } from "../../src/server/budget-mode.ts";
import { PortInUseError, ServerCrashedError } from "../../src/server/errors.ts";
import { launchConfigSchema } from "../../src/server/launch-config.ts";
import { createServerManagerMachine } from "../../src/server/server-manager.machine.ts";
import { type ServerInfo, ServerManager } from "../../src/server/server-manager.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { weatherWorkflow } from "../helpers/workflows.ts";
import {
  isAlive,
  llamaServerFixtures,
  llamaServerPidsOnPort,
  PidReaper,
  recordingLogger,
} from "./helpers/server-processes.ts";

const reaper = new PidReaper();
const logger = recordingLogger();
let modelPath = "";
let binaryPath = "";
let manager: ServerManager;
let first: ServerInfo;
const extraManagers: ServerManager[] = [];
let blocker: Server | undefined;

function launch() {
  return { ggufPath: modelPath, ctx: 2048, slots: 1, threads: 2 };
}

beforeAllOrFail(async () => {
  ({ binaryPath, modelPath } = await llamaServerFixtures());
  manager = new ServerManager({
    backend: "llamaserver",
    binaryPath,
    logger: logger.log,
    stopTimeoutMs: 3_000,
  });
  manager.on("server.ready", (info) => reaper.add(info.pid));
  first = await manager.start(launch());
}, 900_000);

afterAll(async () => {
  await Promise.allSettled([manager?.stop(), ...extraManagers.map((extra) => extra.stop())]);
  blocker?.close();
  reaper.killAll();
});

describe("ServerManager with a real llama-server", () => {
  it("starts llama-server on 127.0.0.1 and reports it healthy", async () => {
    expect(manager.status).toBe("healthy");
    expect(first.baseUrl).toBe(`http://127.0.0.1:${first.port}`);
    expect(first.pid).toBeGreaterThan(0);
    expect(isAlive(first.pid!)).toBe(true);
    const health = await fetch(`${first.baseUrl}/health`);
    expect(health.status).toBe(200);
    expect(first.props).toMatchObject({ nCtx: 2048, totalSlots: 1, modelPath });
    expect(logger.lines.some((line) => line.includes("--host 127.0.0.1") && line.includes("--jinja"))).toBe(
      true,
    );
    expect(logger.lines.some((line) => line.startsWith("llama-server ready at"))).toBe(true);
  });

  it("resolves the budget from /props for backend and forge-full, and takes manual as given", async () => {
    await expect(manager.resolveBudget(BudgetMode.BACKEND)).resolves.toBe(2048);
    await expect(manager.resolveBudget(BudgetMode.FORGE_FULL)).resolves.toBe(2048);
    expect(logger.lines).toContain(
      "note: forge-full expects llama-server to size the context itself, but it runs with -c 2048",
    );
    await expect(manager.resolveBudget(BudgetMode.MANUAL, 1500)).resolves.toBe(1500);
    await expect(manager.resolveBudget(BudgetMode.MANUAL, 4096)).resolves.toBe(4096);
    expect(logger.lines).toContain(
      "warning: the manual budget of 4096 tokens exceeds llama-server's n_ctx of 2048",
    );
    await expect(manager.resolveBudget(BudgetMode.MANUAL)).rejects.toBeInstanceOf(BudgetResolutionError);
    await expect(manager.resolveBudget("huge" as BudgetMode)).rejects.toThrow(/Unknown budget mode 'huge'/);
  });

  it("reuses the running server for the same configuration instead of spawning a second one", async () => {
    const again = await manager.start(launch());
    expect(again.pid).toBe(first.pid);
    expect(manager.actor.getSnapshot().context.launches).toBe(1);
    expect(llamaServerPidsOnPort(first.port!)).toEqual([first.pid]);
    expect(logger.lines).toContain(`reusing the running llama-server (pid ${first.pid}): same configuration`);
  });

  it("runs a whole workflow to the terminal tool or a typed forge error", async () => {
    const { workflow, executed } = weatherWorkflow();
    const client = new OpenAICompatibleClient({
      baseUrl: `${first.baseUrl}/v1`,
      ggufPath: modelPath,
      mode: "native",
      toolChoice: "required",
      temperature: 0,
      maxTokens: 80,
      logger: () => {},
    });
    const budgetTokens = await manager.resolveBudget(BudgetMode.BACKEND);
    const messages: string[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens }),
      maxIterations: 3,
      onMessage: (message) => messages.push(message.metadata.type),
    });
    const outcome = await runner
      .run(workflow, "What is the weather in Paris?", { promptVars: { user: "Ada" } })
      .then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
    if ("result" in outcome) {
      expect(outcome.result).toEqual({ reported: expect.stringMatching(/: /) });
    } else {
      // Random weights may never finish, but the loop must end in its own typed error, not a transport one.
      expect(outcome.error).toBeInstanceOf(ForgeError);
      expect(outcome.error).not.toBeInstanceOf(BackendError);
    }
    // The server answered: its grammar-constrained tool calls reached the tools.
    expect(messages.slice(2)).toContain("tool_call");
    expect(executed.length).toBeGreaterThan(0);
  }, 60_000);

  it("refuses a port that is already taken, naming the port, its holder and the fix, without spawning", async () => {
    const second = new ServerManager({
      backend: "llamaserver",
      binaryPath,
      port: first.port!,
      logger: () => {},
    });
    extraManagers.push(second);
    const failure = await second.start(launch()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PortInUseError);
    const error = failure as PortInUseError;
    expect(error.port).toBe(first.port);
    expect(error.message).toContain(
      `Port ${first.port} on 127.0.0.1 is already in use by a llama-server running ${modelPath}`,
    );
    expect(error.message).toMatch(/pass another `port`, or leave `port` out/);
    expect(second.status).toBe("failed");
    expect(second.actor.getSnapshot().context.launches).toBe(0);
    expect(llamaServerPidsOnPort(first.port!)).toEqual([first.pid]);
  });

  it("recognises a port conflict from llama-server's own log when the port is taken after the check", async () => {
    blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker!.listen(0, "127.0.0.1", () => resolve((blocker!.address() as { port: number }).port)),
    );
    // Skip the pre-spawn check so the real process meets the taken port.
    const machine = createServerManagerMachine({ log: () => {} }).provide({
      actors: { preparePort: fromPromise(async () => port) },
    });
    const actor = createActor(machine, {
      input: {
        backend: "llamaserver",
        host: "127.0.0.1",
        port,
        binaryPath,
        ollamaUrl: "http://127.0.0.1:11434",
        startTimeoutMs: 20_000,
        stopTimeoutMs: 3_000,
      },
    }).start();
    actor.send({ type: "server.start", config: launchConfigSchema.parse(launch()) });
    const snapshot = await waitFor(actor, (current) => current.matches("failed"), { timeout: 20_000 });
    reaper.add(snapshot.context.exit?.pid);
    actor.stop();
    expect(snapshot.context.failure).toMatchObject({ kind: "port_in_use", port, exitCode: 1 });
    expect(snapshot.context.failure?.stderrTail).toContain("couldn't bind HTTP server socket");
    expect(snapshot.context.failure?.message).toContain(`Port ${port} on 127.0.0.1 is already in use`);
  });

  it("notices a kill -9 and reports it as an event and a ServerCrashedError", async () => {
    const pid = manager.info!.pid!;
    const crashed = new Promise<ServerCrashedError>((resolve) => manager.on("server.crashed", resolve));
    process.kill(pid, "SIGKILL");
    const error = await crashed;
    expect(error).toBeInstanceOf(ServerCrashedError);
    expect(error).toBeInstanceOf(ForgeError);
    expect(error).toMatchObject({ name: "ServerCrashedError", pid, signal: "SIGKILL", exitCode: null });
    expect(error.stderrTail).toContain("listening on http://127.0.0.1");
    expect(error.message).toContain("Call restart()");
    expect(manager.status).toBe("crashed");
    expect(manager.lastError).toBe(error);
    expect(manager.info).toBeNull();
    await expect(manager.resolveBudget(BudgetMode.BACKEND)).rejects.toThrow(
      /llama-server is crashed, not healthy/,
    );
  });

  it("restarts on request after the crash, on the same port", async () => {
    const crashedPid = manager.actor.getSnapshot().context.exit!.pid;
    const info = await manager.restart();
    expect(manager.status).toBe("healthy");
    expect(info.port).toBe(first.port);
    expect(info.pid).not.toBe(crashedPid);
    expect((await fetch(`${info.baseUrl}/health`)).status).toBe(200);
    expect(llamaServerPidsOnPort(info.port!)).toEqual([info.pid]);
  });

  it("stops with SIGTERM, leaving no process and a free port", async () => {
    const { pid, port } = manager.info!;
    await manager.stop();
    expect(manager.status).toBe("stopped");
    expect(isAlive(pid!)).toBe(false);
    expect(llamaServerPidsOnPort(port!)).toEqual([]);
    // llama-server handles SIGTERM and exits on its own, so SIGKILL was never needed.
    expect(manager.actor.getSnapshot().context.exit).toMatchObject({ pid, signal: null, exitCode: 0 });
    expect(logger.lines.some((line) => line.includes("sending SIGKILL"))).toBe(false);
  });
});
