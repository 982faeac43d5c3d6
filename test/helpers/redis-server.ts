/**
 * A real redis-server for the queue tests: on 127.0.0.1, a free port, its own temporary directory,
 * started and stopped by the test. `scripts/prepare-tests.ts` installs Debian's `redis-server`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A redis-server this test started. */
export interface TestRedisServer {
  readonly host: "127.0.0.1";
  readonly port: number;
  readonly url: string;
  /** Its data directory (the append-only file lives here). */
  readonly dir: string;
  /** Send a signal to the process (SIGKILL to crash it). */
  kill(signal: NodeJS.Signals): void;
  /** Start it again on the same port and directory, after a kill (reloads the append-only file). */
  restart(): Promise<void>;
  /** Stop it and remove its directory. */
  stop(): Promise<void>;
}

/** Options of {@link startTestRedisServer}. */
export interface TestRedisOptions {
  /** Turn the append-only file on, fsync on every write (for the redis-kill test). */
  appendOnly?: boolean;
}

/**
 * Start redis-server on a free port of 127.0.0.1 and wait until it answers PING.
 * @example
 * const redis = await startTestRedisServer();
 * afterAll(() => redis.stop());
 */
export async function startTestRedisServer(options: TestRedisOptions = {}): Promise<TestRedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "forge-redis-"));
  const port = await freePort();
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    options.appendOnly ? "yes" : "no",
    "--appendfsync",
    "always",
  ];
  let child: ChildProcess | undefined;
  let output = "";
  const launch = async () => {
    output = "";
    const started = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    child = started;
    started.stdout?.on("data", (chunk: Buffer) => {
      output = `${output}${chunk}`.slice(-4000);
    });
    started.stderr?.on("data", (chunk: Buffer) => {
      output = `${output}${chunk}`.slice(-4000);
    });
    const spawnError = new Promise<never>((_, reject) =>
      started.once("error", (error) =>
        reject(
          new Error(
            `redis-server could not start (${error.message}); install it with \`apt-get install -y redis-server\` (npm test's pretest step does this as root)`,
          ),
        ),
      ),
    );
    await Promise.race([waitForPing(port, () => output, started), spawnError]);
  };
  await launch();
  const exited = () =>
    new Promise<void>((resolve) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
    });
  return {
    host: "127.0.0.1",
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill: (signal) => child?.kill(signal),
    async restart() {
      await exited();
      await launch();
    },
    async stop() {
      child?.kill("SIGKILL");
      await exited();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPing(port: number, output: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`redis-server exited with code ${child.exitCode}:\n${output()}`);
    }
    if (await ping(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING within 10 s:\n${output()}`);
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")));
  });
}
