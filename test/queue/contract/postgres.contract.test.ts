/** The `RunQueue` contract on BullMQ over a real PostgreSQL 15 on 127.0.0.1, started by the test. */
import { createPostgresQueue } from "../../../src/queue/index.ts";
import { startTestPostgresServer } from "../../helpers/postgres-server.ts";
import { describeBullmqContract } from "./bullmq-engine.ts";

describeBullmqContract("PostgreSQL", startTestPostgresServer, (url, options) =>
  createPostgresQueue({ connection: { url }, ...options }),
);
