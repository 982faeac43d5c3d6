/** The `RunQueue` contract on BullMQ over a real PostgreSQL 15 on 127.0.0.1, started by the test. */
import { afterAll } from "vitest";
import { createPostgresQueue } from "../../../src/queue/index.ts";
import { beforeAllOrFail } from "../../helpers/before-all-or-fail.ts";
import { startTestPostgresServer, type TestPostgresServer } from "../../helpers/postgres-server.ts";
import { bullmqContractEngine } from "./bullmq-engine.ts";
import { describeRunQueueContract } from "./run-queue-contract.ts";

let postgres: TestPostgresServer | undefined;
beforeAllOrFail(async () => {
  postgres = await startTestPostgresServer();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

describeRunQueueContract(
  "PostgreSQL",
  bullmqContractEngine((options) => {
    if (!postgres) throw new Error("PostgreSQL was not started");
    return createPostgresQueue({ connection: { url: postgres.url }, ...options });
  }),
);
