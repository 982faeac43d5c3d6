/**
 * A real PostgreSQL 15 for the queue tests: a fresh cluster (`initdb`) in a temporary directory,
 * `postgres` on 127.0.0.1 and a free port, started and stopped by the test. As root, both run as
 * the `postgres` user (PostgreSQL refuses root); the image ships Debian's postgresql-15, which
 * `scripts/prepare-tests.ts` checks for.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/** A PostgreSQL server this test started. */
export interface TestPostgresServer {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string;
  /** Send a signal to the postmaster (SIGKILL to crash it). */
  kill(signal: NodeJS.Signals): void;
  /** Stop it and remove its directory. */
  stop(): Promise<void>;
}

/** Options of {@link startTestPostgresServer}. */
export interface TestPostgresOptions {
  /** fsync on commit (default false: the tests kill workers, not the database). */
  fsync?: boolean;
}

/** The directory of PostgreSQL's server binaries (Debian: /usr/lib/postgresql/<major>/bin). */
export function postgresBinDir(): string {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((entry) => existsSync(join(root, entry, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const major = majors[0];
  if (major === undefined) {
    throw new Error(
      "PostgreSQL's server binaries (initdb, postgres) were not found under /usr/lib/postgresql; install them with `apt-get install -y postgresql-15` (npm test's pretest step does this as root)",
    );
  }
  return join(root, major, "bin");
}

/**
 * Create a cluster in a temporary directory, start `postgres` on a free port of 127.0.0.1 and
 * wait until it accepts a connection.
 * @example
 * const postgres = await startTestPostgresServer();
 * afterAll(() => postgres.stop());
 */
export async function startTestPostgresServer(
  options: TestPostgresOptions = {},
): Promise<TestPostgresServer> {
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), "forge-postgres-"));
  const data = join(dir, "data");
  // As root, the cluster belongs to the postgres user; its socket goes to `dir`.
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chmodSync(dir, 0o700);
  }
  const as = owner ? { uid: owner.uid, gid: owner.gid } : {};
  try {
    execFileSync(
      join(bin, "initdb"),
      ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"],
      { ...as, stdio: "pipe", env: { ...process.env, LC_ALL: "C" } },
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`initdb failed: ${(error as Error).message}\n${stderr}`);
  }
  const port = await freePort();
  const args = [
    "-D",
    data,
    "-k",
    dir,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    `fsync=${options.fsync ? "on" : "off"}`,
    "-c",
    "max_connections=200",
  ];
  let output = "";
  const child: ChildProcess = spawn(join(bin, "postgres"), args, {
    ...as,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (chunk: Buffer) => {
    output = `${output}${chunk}`.slice(-4000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const exited = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
    });
  const stop = async () => {
    // SIGQUIT: immediate shutdown (no checkpoint); the cluster is thrown away.
    child.kill("SIGQUIT");
    await exited();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForConnection(url, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, url, kill: (signal) => child.kill(signal), stop };
}

function postgresUser(): { uid: number; gid: number } {
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    throw new Error(
      "Running as root, PostgreSQL must run as the `postgres` user, and there is none; install postgresql-15 (it creates the user)",
    );
  }
}

async function waitForConnection(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  let last = "";
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited with code ${child.exitCode}:\n${output()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      last = (error as Error).message;
    } finally {
      await client.end().catch(() => {});
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`postgres at ${url} did not accept a connection within 20 s (${last}):\n${output()}`);
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
