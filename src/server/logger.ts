/** Where the server manager writes what it detected and chose. */

/** Receives one human-readable line. The same shape as the clients' `logger` option. */
export type ServerLogger = (line: string) => void;

/** The default logger: `console.info` with a `[forge:server]` prefix. */
export const defaultServerLogger: ServerLogger = (line) => console.info(`[forge:server] ${line}`);
