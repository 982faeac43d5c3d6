/**
 * A real redis-server and PostgreSQL for a test file's queue tests: started once before its tests
 * (a failed start fails each test) and stopped after them.
 */
import { afterAll } from "vitest";
import { beforeAllOrFail } from "./before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "./postgres-server.ts";
import { startTestRedisServer, type TestRedisServer } from "./redis-server.ts";

/** Call at a test file's top level; read `redis()` / `postgres()` inside its tests. */
export function useQueueServers(): { redis: () => TestRedisServer; postgres: () => TestPostgresServer } {
  let redis: TestRedisServer | undefined;
  let postgres: TestPostgresServer | undefined;
  beforeAllOrFail(async () => {
    [redis, postgres] = await Promise.all([startTestRedisServer(), startTestPostgresServer()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([redis?.stop(), postgres?.stop()]);
  });
  const started = <T>(server: T | undefined, name: string): T => {
    if (server === undefined) throw new Error(`${name} was not started`);
    return server;
  };
  return { redis: () => started(redis, "redis-server"), postgres: () => started(postgres, "PostgreSQL") };
}
